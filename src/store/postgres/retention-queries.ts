/**
 * The retention statements of the PostgreSQL store (README "Retention"), part of QUERIES (queries.ts),
 * kept apart only for length. Parameters are listed above each statement, as there.
 *
 * Lock order: retention deletes finished runs, which no other operation moves any more, so it takes
 * their run rows first (SKIP LOCKED, so that two reapers split the work instead of queueing), then the
 * leases, jobs and log chunks of those runs. A late lease call on one of their settled leases locks
 * only that lease, and the deletion waits for it or it finds the lease gone.
 */

/** The runs of a set of run keys. $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
const KEYS = `unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)`;

/** Finished runs that are not their workflow's latest, finished before $1, oldest first; $2 limit. */
const byAge = (lock: string) => `SELECT r.workflow_id, r.run_number, r.status, r.finished_at_ms FROM runs r
    JOIN workflows w ON w.id = r.workflow_id
    WHERE r.finished_at_ms < $1::bigint AND r.status <> 'running' AND r.run_number < w.latest_run
    ORDER BY r.finished_at_ms, r.workflow_id, r.run_number LIMIT $2::int ${lock}`;

/**
 * Finished runs beyond the newest $1 of their workflow: per workflow (LATERAL), one primary-key range
 * of its runs, so the runs table is never read whole. $2 limit.
 */
const byCount = (lock: string) => `SELECT r.workflow_id, r.run_number, r.status, r.finished_at_ms FROM workflows w
    CROSS JOIN LATERAL (
      SELECT r.workflow_id, r.run_number, r.status, r.finished_at_ms FROM runs r
      WHERE r.workflow_id = w.id AND r.run_number <= w.latest_run - $1::int
        AND r.status <> 'running' AND r.finished_at_ms IS NOT NULL
      ORDER BY r.run_number LIMIT $2::int ${lock}
    ) r
    LIMIT $2::int`;

const LOCK = 'FOR UPDATE OF r SKIP LOCKED';

export const RETENTION_QUERIES = {
  /** Candidates of the age rule, locked. $1 finished before, $2 limit. */
  pruneByAge: byAge(LOCK),
  /** As pruneByAge, for a dry run (a read-only transaction takes no row locks). */
  previewByAge: byAge(''),
  /** Candidates of the count rule, locked. $1 runs to keep per workflow (>= 1), $2 limit. */
  pruneByCount: byCount('FOR UPDATE SKIP LOCKED'),
  /** As pruneByCount, for a dry run. */
  previewByCount: byCount(''),
  /** Runs of a workflow, oldest first, locked. $1 workflow id, $2 limit. */
  runsOfWorkflow: `SELECT workflow_id, run_number, status, finished_at_ms FROM runs WHERE workflow_id = $1
    ORDER BY run_number LIMIT $2::int FOR UPDATE`,
  /** Jobs and log chunks of each run, in the order given. $1, $2 as KEYS. */
  runCounts: `SELECT k.workflow_id, k.run_number,
      (SELECT count(*) FROM jobs j WHERE j.workflow_id = k.workflow_id AND j.run_number = k.run_number)::int AS jobs,
      (SELECT count(*) FROM log_chunks l WHERE l.workflow_id = k.workflow_id AND l.run_number = k.run_number)::int AS log_chunks
    FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS k(workflow_id, run_number, ord)
    ORDER BY k.ord`,
  /** Through jobs_by_run and leases_job. $1, $2 as KEYS. */
  deleteRunsLeases: `DELETE FROM leases l USING ${KEYS}, jobs j
    WHERE j.workflow_id = k.workflow_id AND j.run_number = k.run_number AND l.job_row_id = j.row_id`,
  /** $1, $2 as KEYS. */
  deleteRunsLogChunks: `DELETE FROM log_chunks l USING ${KEYS}
    WHERE l.workflow_id = k.workflow_id AND l.run_number = k.run_number`,
  /** $1, $2 as KEYS. */
  deleteRunsJobs: `DELETE FROM jobs j USING ${KEYS} WHERE j.workflow_id = k.workflow_id AND j.run_number = k.run_number`,
  /** $1, $2 as KEYS. */
  deleteRuns: `DELETE FROM runs r USING ${KEYS} WHERE r.workflow_id = k.workflow_id AND r.run_number = k.run_number`,
  /** Some of one run's log chunks, by their row addresses. $1 workflow id, $2 run number, $3 limit. */
  deleteSomeRunLogChunks: `DELETE FROM log_chunks WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM log_chunks WHERE workflow_id = $1 AND run_number = $2::int LIMIT $3::int))`,
  /**
   * The workflow row, once no run of it is left (one a concurrent prune has not committed yet still
   * counts; the caller then answers `more`). $1 workflow id.
   */
  deleteWorkflow: `DELETE FROM workflows w WHERE w.id = $1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.workflow_id = w.id)
    RETURNING w.id`,
  /** The definitions a deleted workflow's runs used. $1 workflow id */
  deleteRunDefinitions: `DELETE FROM run_definitions WHERE workflow_id = $1`,
  /**
   * Log chunks of runs that do not exist (yet): a push on a cancelled lease racing the deletion of its
   * run leaves its chunks behind (its statement saw the lease before the deletion committed), and a
   * new run of a workflow created again with that id must not find them. $1 workflow id.
   */
  dropStaleLogChunks: `DELETE FROM log_chunks l USING workflows w
    WHERE w.id = $1 AND l.workflow_id = w.id AND l.run_number > w.latest_run`,
} as const;
