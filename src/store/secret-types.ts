import type { LogChunkRecord } from './records.js';

/**
 * The secret part of the storage seam (README "Secrets", docs/architecture.md "Secrets"). The store
 * keeps sealed values only: sealing and opening is the engine's (src/engine/secret-box.ts), so that
 * the database, its backups and its logs never hold a value in clear.
 */

/** `scope` is '' for a secret every workflow sees, else the id of the one workflow that sees it. */
export interface SecretRecord {
  scope: string;
  name: string;
  /** The value sealed under the server's key. */
  sealed: string;
  /** The fingerprint of the key that sealed it. */
  key_id: string;
  updated_at_ms: number;
  /** The name of the token that set it; null when tokens are off. */
  updated_by: string | null;
}

export type SecretInfo = Omit<SecretRecord, 'sealed'>;

/** Where one attempt's log chunk is, for hiding a secret that one push began and the next ended. */
export interface LogChunkKey {
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  sequence: number;
}

export interface SecretReads {
  /** Every secret's name and scope, never a value, by scope then name. */
  listSecrets(): Promise<SecretInfo[]>;
  /** The secrets called `names` that workflow `workflowId` sees: global ones and its own. */
  getSecrets(workflowId: string, names: readonly string[]): Promise<SecretRecord[]>;
  /** The fingerprints of the keys the stored secrets were sealed with. */
  secretKeyIds(): Promise<string[]>;
  /** The workflow and env of the job a lease is for, in one read: what its secrets are (null: no such lease). */
  leaseJobEnv(leaseId: string): Promise<{ workflow_id: string; env: Record<string, string> } | null>;
  /** The attempt's last stored log chunk before `key.sequence`, if any. */
  logChunkBefore(key: LogChunkKey): Promise<LogChunkRecord | null>;
}

export interface SecretWrites {
  /** Sets a secret, replacing one of the same scope and name. */
  putSecret(rec: SecretRecord): Promise<'created' | 'updated'>;
  /** Removes a secret; false when there was none. */
  deleteSecret(scope: string, name: string): Promise<boolean>;
  /**
   * Replaces a stored log chunk's text with `data` if it still reads `expected`: false when it does
   * not (then the caller reads it again). Only ever called to hide a secret the chunk ends with.
   */
  rewriteLogChunk(key: LogChunkKey, expected: string, data: string): Promise<boolean>;
}
