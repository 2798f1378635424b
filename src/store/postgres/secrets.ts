import type { LogChunkKey, SecretRecord, StoreReads } from '../store.js';
import { toLogChunk, toSecret, toSecretInfo } from '../rows.js';
import { QUERIES } from './queries.js';
import { writeStatement, type Exec, type Sql } from './tx.js';

/**
 * Secrets (README "Secrets"): the writes, each one statement, and the reads, and the one log write
 * that hides a secret a push split in two. Values arrive and leave sealed (src/engine/secret-box.ts).
 */

export async function putSecret(sql: Sql, rec: SecretRecord): Promise<'created' | 'updated'> {
  const [row] = await writeStatement(sql, QUERIES.putSecret, [rec.scope, rec.name, rec.sealed, rec.key_id, rec.updated_at_ms, rec.updated_by]);
  return row?.created ? 'created' : 'updated';
}

export async function deleteSecret(sql: Sql, scope: string, name: string): Promise<boolean> {
  return (await writeStatement(sql, QUERIES.deleteSecret, [scope, name])).length > 0;
}

export async function rewriteLogChunk(sql: Sql, key: LogChunkKey, expected: string, data: string): Promise<boolean> {
  const rows = await writeStatement(sql, QUERIES.rewriteLogChunk, [data, key.workflow_id, key.run_number, key.job_id, key.attempt, key.sequence, expected]);
  return rows.length > 0;
}

/** The secret reads of makeReads (reads.ts). */
export function secretReads(q: Exec): Pick<StoreReads, 'listSecrets' | 'getSecrets' | 'secretKeyIds' | 'leaseJobEnv' | 'logChunkBefore'> {
  return {
    leaseJobEnv: async (leaseId) => {
      const [row] = await q(QUERIES.leaseJobEnv, [leaseId]);
      return row ? { workflow_id: row.workflow_id as string, env: JSON.parse(row.env as string) as Record<string, string> } : null;
    },
    listSecrets: async () => (await q(QUERIES.listSecrets)).map(toSecretInfo),
    getSecrets: async (workflowId, names) => (names.length === 0 ? [] : (await q(QUERIES.getSecrets, [workflowId, [...names]])).map(toSecret)),
    secretKeyIds: async () => (await q(QUERIES.secretKeyIds)).map((r) => r.key_id as string),
    logChunkBefore: async (key) => {
      const [row] = await q(QUERIES.logChunkBefore, [key.workflow_id, key.run_number, key.job_id, key.attempt, key.sequence]);
      return row ? toLogChunk(row) : null;
    },
  };
}
