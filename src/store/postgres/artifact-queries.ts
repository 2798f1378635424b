/**
 * The artifact statements of the PostgreSQL store (README "Artifacts"), part of QUERIES (queries.ts),
 * kept apart only for length, as in the SQLite store. An artifact is seen only while its attempt is the
 * job's attempt and the job succeeded: a failed attempt's uploads never show.
 */
const VISIBLE = `a.attempt = j.attempt AND j.status = 'success'`;
const COLUMNS = `a.workflow_id, a.run_number, a.job_id, a.attempt, a.name, a.blob_id, a.size, a.sha256, a.chunk_bytes, a.created_at_ms`;
const JOIN = `JOIN jobs j ON j.workflow_id = a.workflow_id AND j.run_number = a.run_number AND j.job_id = a.job_id`;
/** The runs of a set of run keys. $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
const KEYS = `unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)`;

export const ARTIFACT_QUERIES = {
  /** $1 blob id, $2 lease id, $3 started at */
  insertArtifactUpload: `INSERT INTO artifact_uploads (blob_id, lease_id, started_at_ms) VALUES ($1, $2, $3::bigint)`,
  /** $1 blob id */
  deleteArtifactUpload: `DELETE FROM artifact_uploads WHERE blob_id = $1`,
  /** Uploads started before $1, oldest first, at most $2, locked (SKIP LOCKED: another server may be on them). */
  staleArtifactUploads: `SELECT blob_id FROM artifact_uploads WHERE started_at_ms < $1::bigint
    ORDER BY started_at_ms LIMIT $2::int FOR UPDATE SKIP LOCKED`,
  /** $1 blob id, $2 seq, $3 data */
  putArtifactChunk: `INSERT INTO artifact_chunks (blob_id, seq, data) VALUES ($1, $2::int, $3::bytea)
    ON CONFLICT (blob_id, seq) DO UPDATE SET data = EXCLUDED.data`,
  /** $1 blob id, $2 seq */
  getArtifactChunk: `SELECT data FROM artifact_chunks WHERE blob_id = $1 AND seq = $2::int`,
  /** The chunks of blobs $1 (text[]) that no artifact row names any more. */
  deleteUnusedBlobs: `DELETE FROM artifact_chunks c WHERE c.blob_id = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.blob_id = c.blob_id)`,
  /** Of the ids $1 (text[]), those no artifact row and no upload in progress names. */
  unnamedBlobs: `SELECT DISTINCT i.blob_id FROM unnest($1::text[]) AS i(blob_id)
    WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.blob_id = i.blob_id)
      AND NOT EXISTS (SELECT 1 FROM artifact_uploads u WHERE u.blob_id = i.blob_id)`,
  /** $1 blob id */
  deleteBlob: `DELETE FROM artifact_chunks WHERE blob_id = $1`,
  /** The job's rows of other attempts than $4. $1 workflow id, $2 run number, $3 job id, $4 attempt */
  deleteOtherAttemptArtifacts: `DELETE FROM artifacts WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 AND attempt <> $4::int
    RETURNING blob_id`,
  /** $1 workflow id, $2 run number, $3 job id, $4 attempt, $5 name */
  deleteArtifactByName: `DELETE FROM artifacts WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 AND attempt = $4::int AND name = $5
    RETURNING blob_id`,
  /** $1 … $10 in column order */
  insertArtifact: `INSERT INTO artifacts (workflow_id, run_number, job_id, attempt, name, blob_id, size, sha256, chunk_bytes, created_at_ms)
    VALUES ($1, $2::int, $3, $4::int, $5, $6, $7::bigint, $8, $9::int, $10::bigint)`,
  /** $1 workflow id, $2 run number */
  listRunArtifacts: `SELECT ${COLUMNS} FROM artifacts a ${JOIN}
    WHERE a.workflow_id = $1 AND a.run_number = $2::int AND ${VISIBLE} ORDER BY a.job_id, a.name`,
  /** $1 workflow id, $2 run number, $3 job id */
  listJobArtifacts: `SELECT ${COLUMNS} FROM artifacts a ${JOIN}
    WHERE a.workflow_id = $1 AND a.run_number = $2::int AND a.job_id = $3 AND ${VISIBLE} ORDER BY a.name`,
  /** $1 workflow id, $2 run number, $3 job id, $4 name */
  getArtifact: `SELECT ${COLUMNS} FROM artifacts a ${JOIN}
    WHERE a.workflow_id = $1 AND a.run_number = $2::int AND a.job_id = $3 AND a.name = $4 AND ${VISIBLE}`,
  /**
   * A re-run's kept jobs get rows naming the blobs of the run they were kept from (the attempt that
   * succeeded there). $1 workflow id, $2 from run, $3 to run, $4 job ids (text[])
   */
  copyKeptArtifacts: `INSERT INTO artifacts (workflow_id, run_number, job_id, attempt, name, blob_id, size, sha256, chunk_bytes, created_at_ms)
    SELECT a.workflow_id, $3::int, a.job_id, a.attempt, a.name, a.blob_id, a.size, a.sha256, a.chunk_bytes, a.created_at_ms
    FROM artifacts a ${JOIN}
    WHERE a.workflow_id = $1 AND a.run_number = $2::int AND ${VISIBLE} AND a.job_id = ANY($4::text[])
    ON CONFLICT DO NOTHING`,
  /**
   * Retention, first step: the chunks of the runs' blobs that no row of another run names. Sent before
   * deleteRunsArtifacts in the same transaction. $1, $2 as KEYS.
   */
  deleteRunsBlobs: `DELETE FROM artifact_chunks c WHERE c.blob_id IN (
      SELECT a.blob_id FROM artifacts a, ${KEYS} WHERE a.workflow_id = k.workflow_id AND a.run_number = k.run_number)
    AND NOT EXISTS (
      SELECT 1 FROM artifacts o WHERE o.blob_id = c.blob_id
        AND (o.workflow_id, o.run_number) NOT IN (SELECT * FROM ${KEYS}))`,
  /**
   * Retention, before the first step: the runs' blobs that no row of another run names (the ones
   * deleteRunsBlobs deletes the chunks of, answered for bytes kept outside the store). $1, $2 as KEYS.
   */
  runsUnnamedBlobs: `SELECT DISTINCT a.blob_id FROM artifacts a, ${KEYS}
    WHERE a.workflow_id = k.workflow_id AND a.run_number = k.run_number
      AND NOT EXISTS (
        SELECT 1 FROM artifacts o WHERE o.blob_id = a.blob_id
          AND (o.workflow_id, o.run_number) NOT IN (SELECT * FROM ${KEYS}))`,
  /** Retention, second step: the runs' rows. $1, $2 as KEYS. */
  deleteRunsArtifacts: `DELETE FROM artifacts a USING ${KEYS} WHERE a.workflow_id = k.workflow_id AND a.run_number = k.run_number`,
} as const;
