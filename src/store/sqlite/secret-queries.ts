/**
 * The secret statements of the SQLite store (README "Secrets"), part of QUERIES (queries.ts), as in
 * the PostgreSQL store. Values are stored sealed (src/engine/secret-box.ts); nothing here opens one.
 */
export const SECRET_QUERIES = {
  /** ? scope, ? name */
  secretExists: `SELECT 1 FROM secrets WHERE scope = ? AND name = ?`,
  /** @scope, @name, @sealed, @key_id, @updated_at_ms, @updated_by */
  putSecret: `INSERT INTO secrets (scope, name, sealed, key_id, updated_at_ms, updated_by)
    VALUES (@scope, @name, @sealed, @key_id, @updated_at_ms, @updated_by)
    ON CONFLICT (scope, name) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id,
      updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by`,
  /** ? scope, ? name */
  deleteSecret: `DELETE FROM secrets WHERE scope = ? AND name = ? RETURNING 1`,
  listSecrets: `SELECT scope, name, key_id, updated_at_ms, updated_by FROM secrets ORDER BY scope, name`,
  /** ? workflow_id, ? names (JSON list) */
  getSecrets: `SELECT * FROM secrets WHERE scope IN ('', ?) AND name IN (SELECT value FROM json_each(?))`,
  /**
   * The job of a lease, for the secrets its env names: the job whose row holds it (jobs_lease), else
   * the job of one moved on from (`leases`). @lease_id
   */
  leaseJobEnv: `SELECT workflow_id, env FROM jobs WHERE lease_id = @lease_id AND lease_state IS NOT NULL
    UNION ALL SELECT j.workflow_id, j.env FROM leases l JOIN jobs j ON j.row_id = l.job_row_id WHERE l.lease_id = @lease_id
    LIMIT 1`,
  secretKeyIds: `SELECT DISTINCT key_id FROM secrets ORDER BY key_id`,
  /** ? workflow_id, ? run_number, ? job_id, ? attempt, ? sequence */
  logChunkBefore: `SELECT * FROM log_chunks
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence < ?
    ORDER BY sequence DESC LIMIT 1`,
  /** ? data, ? workflow_id, ? run_number, ? job_id, ? attempt, ? sequence, ? expected */
  rewriteLogChunk: `UPDATE log_chunks SET data = ?
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence = ? AND data = ?
    RETURNING 1`,
} as const;
