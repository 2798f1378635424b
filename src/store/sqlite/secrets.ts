import type { LogChunkKey, SecretRecord, StoreReads } from '../store.js';
import { toLogChunk, toSecret, toSecretInfo, type Row } from '../rows.js';
import type { Conn } from './connection.js';

/**
 * Secrets (README "Secrets") as synchronous writes (see writes.ts) and reads, and the one log write
 * that hides a secret a push split in two. Values arrive and leave sealed (src/engine/secret-box.ts).
 */

export function putSecret(c: Conn, rec: SecretRecord): 'created' | 'updated' {
  const existed = c.q('secretExists').get(rec.scope, rec.name) !== undefined;
  c.q('putSecret').run(rec);
  return existed ? 'updated' : 'created';
}

export function deleteSecret(c: Conn, scope: string, name: string): boolean {
  return c.q('deleteSecret').get(scope, name) !== undefined;
}

export function rewriteLogChunk(c: Conn, key: LogChunkKey, expected: string, data: string): boolean {
  return c.q('rewriteLogChunk').get(data, key.workflow_id, key.run_number, key.job_id, key.attempt, key.sequence, expected) !== undefined;
}

/** The secret reads of makeReads (reads.ts). */
export function secretReads(c: Conn): Pick<StoreReads, 'listSecrets' | 'getSecrets' | 'secretKeyIds' | 'leaseJobEnv' | 'logChunkBefore'> {
  return {
    leaseJobEnv: async (leaseId) => {
      const row = c.q('leaseJobEnv').get({ lease_id: leaseId }) as Row | undefined;
      return row ? { workflow_id: row.workflow_id as string, env: JSON.parse(row.env as string) as Record<string, string> } : null;
    },
    listSecrets: async () => (c.q('listSecrets').all() as Row[]).map(toSecretInfo),
    getSecrets: async (workflowId, names) =>
      names.length === 0 ? [] : (c.q('getSecrets').all(workflowId, JSON.stringify(names)) as Row[]).map(toSecret),
    secretKeyIds: async () => (c.q('secretKeyIds').all() as Row[]).map((r) => r.key_id as string),
    logChunkBefore: async (key) => {
      const row = c.q('logChunkBefore').get(key.workflow_id, key.run_number, key.job_id, key.attempt, key.sequence) as Row | undefined;
      return row ? toLogChunk(row) : null;
    },
  };
}
