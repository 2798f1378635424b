/**
 * The retention statements of the SQLite store (README "Retention"), part of QUERIES (queries.ts),
 * kept apart only for length, as in the PostgreSQL store. Parameters are listed above each statement,
 * as there. Retention deletes finished runs, which no other write moves any more, under SQLite's one
 * write lock: leases go before their jobs, and jobs before their run, for the foreign keys.
 */
export const RETENTION_QUERIES = {
  /**
   * Finished runs that are not their workflow's latest, finished before a time, oldest first, through
   * runs_finished. ? finished_before_ms, ? limit
   */
  pruneByAge: `SELECT r.workflow_id, r.run_number, r.status, r.finished_at_ms FROM runs r
    CROSS JOIN workflows w ON w.id = r.workflow_id
    WHERE r.finished_at_ms < ? AND r.status <> 'running' AND r.run_number < w.latest_run
    ORDER BY r.finished_at_ms, r.workflow_id, r.run_number LIMIT +?`,
  /**
   * Finished runs beyond the newest N of their workflow: per workflow, one primary-key range of runs.
   * ? retain (N >= 1), ? limit
   */
  pruneByCount: `SELECT r.workflow_id, r.run_number, r.status, r.finished_at_ms FROM workflows w
    CROSS JOIN runs r ON r.workflow_id = w.id AND r.run_number <= w.latest_run - ?
    WHERE r.status <> 'running' AND r.finished_at_ms IS NOT NULL
    LIMIT +?`,
  /** Every run of a workflow, oldest first. ? workflow_id, ? limit */
  runsOfWorkflow: `SELECT workflow_id, run_number, status, finished_at_ms FROM runs WHERE workflow_id = ?
    ORDER BY run_number LIMIT +?`,
  /** ? workflow_id, ? run_number */
  countRunJobs: `SELECT count(*) AS n FROM jobs WHERE workflow_id = ? AND run_number = ?`,
  /** ? workflow_id, ? run_number */
  countRunLogChunks: `SELECT count(*) AS n FROM log_chunks WHERE workflow_id = ? AND run_number = ?`,
  /** ? workflow_id, ? run_number */
  deleteRunLogChunks: `DELETE FROM log_chunks WHERE workflow_id = ? AND run_number = ?`,
  /** Some of a run's log chunks, through the primary key. @workflow_id @run_number @limit */
  deleteSomeRunLogChunks: `DELETE FROM log_chunks WHERE workflow_id = @workflow_id AND run_number = @run_number
    AND (job_id, attempt, sequence) IN (
      SELECT job_id, attempt, sequence FROM log_chunks WHERE workflow_id = @workflow_id AND run_number = @run_number LIMIT +@limit)`,
  /** Through jobs_by_run and leases_job. ? workflow_id, ? run_number */
  deleteRunLeases: `DELETE FROM leases WHERE job_row_id IN (SELECT row_id FROM jobs WHERE workflow_id = ? AND run_number = ?)`,
  /** ? workflow_id, ? run_number */
  deleteRunJobs: `DELETE FROM jobs WHERE workflow_id = ? AND run_number = ?`,
  /** ? workflow_id, ? run_number */
  deleteRun: `DELETE FROM runs WHERE workflow_id = ? AND run_number = ?`,
  /** ? id */
  deleteWorkflow: `DELETE FROM workflows WHERE id = ?`,
  /** The definitions a deleted workflow's runs used. ? workflow_id */
  deleteRunDefinitions: `DELETE FROM run_definitions WHERE workflow_id = ?`,
} as const;
