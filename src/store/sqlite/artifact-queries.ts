/**
 * The artifact statements of the SQLite store (README "Artifacts"), part of QUERIES (queries.ts), kept
 * apart only for length, as in the PostgreSQL store. An artifact is seen only while its attempt is the
 * job's attempt and the job succeeded: a failed attempt's uploads never show.
 */
const VISIBLE = `a.attempt = j.attempt AND j.status = 'success'`;
const COLUMNS = `a.workflow_id, a.run_number, a.job_id, a.attempt, a.name, a.blob_id, a.size, a.sha256, a.chunk_bytes, a.created_at_ms`;

export const ARTIFACT_QUERIES = {
  /** ? blob_id, ? lease_id, ? started_at_ms */
  insertArtifactUpload: `INSERT INTO artifact_uploads (blob_id, lease_id, started_at_ms) VALUES (?, ?, ?)`,
  /** ? blob_id */
  deleteArtifactUpload: `DELETE FROM artifact_uploads WHERE blob_id = ?`,
  /** Uploads started before a time. ? before_ms, ? limit */
  staleArtifactUploads: `SELECT blob_id FROM artifact_uploads WHERE started_at_ms < ? ORDER BY started_at_ms LIMIT +?`,
  /** ? blob_id, ? seq, ? data */
  putArtifactChunk: `INSERT OR REPLACE INTO artifact_chunks (blob_id, seq, data) VALUES (?, ?, ?)`,
  /** ? blob_id, ? seq */
  getArtifactChunk: `SELECT data FROM artifact_chunks WHERE blob_id = ? AND seq = ?`,
  /** A blob's chunks, when no artifact row names it any more. ? blob_id, ? blob_id */
  deleteUnusedBlob: `DELETE FROM artifact_chunks WHERE blob_id = ? AND NOT EXISTS (SELECT 1 FROM artifacts WHERE blob_id = ?)`,
  /** Of the ids given, those no artifact row and no upload in progress names. ? blob ids (JSON list) */
  unnamedBlobs: `SELECT DISTINCT i.value AS blob_id FROM json_each(?) i
    WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.blob_id = i.value)
      AND NOT EXISTS (SELECT 1 FROM artifact_uploads u WHERE u.blob_id = i.value)`,
  /** ? blob_id */
  deleteBlob: `DELETE FROM artifact_chunks WHERE blob_id = ?`,
  /** The job's rows of other attempts than the current one. ? workflow_id, ? run_number, ? job_id, ? attempt */
  deleteOtherAttemptArtifacts: `DELETE FROM artifacts WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt <> ?
    RETURNING blob_id`,
  /** The row the new one replaces. ? workflow_id, ? run_number, ? job_id, ? attempt, ? name */
  deleteArtifactByName: `DELETE FROM artifacts WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND name = ?
    RETURNING blob_id`,
  /** @workflow_id … every column */
  insertArtifact: `INSERT INTO artifacts (workflow_id, run_number, job_id, attempt, name, blob_id, size, sha256, chunk_bytes, created_at_ms)
    VALUES (@workflow_id, @run_number, @job_id, @attempt, @name, @blob_id, @size, @sha256, @chunk_bytes, @created_at_ms)`,
  /** ? workflow_id, ? run_number */
  listRunArtifacts: `SELECT ${COLUMNS} FROM artifacts a
    JOIN jobs j ON j.workflow_id = a.workflow_id AND j.run_number = a.run_number AND j.job_id = a.job_id
    WHERE a.workflow_id = ? AND a.run_number = ? AND ${VISIBLE} ORDER BY a.job_id, a.name`,
  /** ? workflow_id, ? run_number, ? job_id */
  listJobArtifacts: `SELECT ${COLUMNS} FROM artifacts a
    JOIN jobs j ON j.workflow_id = a.workflow_id AND j.run_number = a.run_number AND j.job_id = a.job_id
    WHERE a.workflow_id = ? AND a.run_number = ? AND a.job_id = ? AND ${VISIBLE} ORDER BY a.name`,
  /** ? workflow_id, ? run_number, ? job_id, ? name */
  getArtifact: `SELECT ${COLUMNS} FROM artifacts a
    JOIN jobs j ON j.workflow_id = a.workflow_id AND j.run_number = a.run_number AND j.job_id = a.job_id
    WHERE a.workflow_id = ? AND a.run_number = ? AND a.job_id = ? AND a.name = ? AND ${VISIBLE}`,
  /**
   * A re-run's kept jobs get rows naming the blobs of the run they were kept from (the attempt that
   * succeeded there). @workflow_id @from_run @to_run @job_ids (JSON list)
   */
  copyKeptArtifacts: `INSERT INTO artifacts (workflow_id, run_number, job_id, attempt, name, blob_id, size, sha256, chunk_bytes, created_at_ms)
    SELECT a.workflow_id, @to_run, a.job_id, a.attempt, a.name, a.blob_id, a.size, a.sha256, a.chunk_bytes, a.created_at_ms
    FROM artifacts a JOIN jobs j ON j.workflow_id = a.workflow_id AND j.run_number = a.run_number AND j.job_id = a.job_id
    WHERE a.workflow_id = @workflow_id AND a.run_number = @from_run AND ${VISIBLE}
      AND a.job_id IN (SELECT value FROM json_each(@job_ids))`,
  /** Retention: the run's rows, answering the blobs they named. ? workflow_id, ? run_number */
  deleteRunArtifacts: `DELETE FROM artifacts WHERE workflow_id = ? AND run_number = ? RETURNING blob_id`,
  /** ? workflow_id, ? run_number */
  countRunArtifacts: `SELECT count(*) AS n FROM artifacts WHERE workflow_id = ? AND run_number = ?`,
} as const;
