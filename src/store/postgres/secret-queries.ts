/**
 * The secret statements of the PostgreSQL store (README "Secrets"), part of QUERIES (queries.ts), as
 * in the SQLite store. Values are stored sealed (src/engine/secret-box.ts); nothing here opens one.
 */
export const SECRET_QUERIES = {
  /** Answers whether the row is new (xmax is 0 for a row this statement inserted). $1 scope, $2 name, $3 sealed, $4 key_id, $5 updated_at_ms, $6 updated_by */
  putSecret: `INSERT INTO secrets (scope, name, sealed, key_id, updated_at_ms, updated_by) VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (scope, name) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id,
      updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
    RETURNING (xmax = 0) AS created`,
  /** $1 scope, $2 name */
  deleteSecret: `DELETE FROM secrets WHERE scope = $1 AND name = $2 RETURNING 1`,
  listSecrets: `SELECT scope, name, key_id, updated_at_ms, updated_by FROM secrets ORDER BY scope, name`,
  /** $1 workflow_id, $2 names (text[]) */
  getSecrets: `SELECT * FROM secrets WHERE scope IN ('', $1) AND name = ANY($2::text[])`,
  /** The job of a lease, for the secrets its env names. $1 lease_id */
  leaseJobEnv: `SELECT j.workflow_id, j.env FROM leases l JOIN jobs j ON j.row_id = l.job_row_id WHERE l.lease_id = $1`,
  secretKeyIds: `SELECT DISTINCT key_id FROM secrets ORDER BY key_id`,
  /** $1 workflow_id, $2 run_number, $3 job_id, $4 attempt, $5 sequence */
  logChunkBefore: `SELECT * FROM log_chunks
    WHERE workflow_id = $1 AND run_number = $2 AND job_id = $3 AND attempt = $4 AND sequence < $5
    ORDER BY sequence DESC LIMIT 1`,
  /** $1 data, $2 workflow_id, $3 run_number, $4 job_id, $5 attempt, $6 sequence, $7 expected */
  rewriteLogChunk: `UPDATE log_chunks SET data = $1
    WHERE workflow_id = $2 AND run_number = $3 AND job_id = $4 AND attempt = $5 AND sequence = $6 AND data = $7
    RETURNING 1`,
} as const;
