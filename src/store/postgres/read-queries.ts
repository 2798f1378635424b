import { JOB_VIEW_COLUMNS } from '../rows.js';
/**
 * The PostgreSQL store's reads (reads.ts), each run inside one snapshot. Part of QUERIES (queries.ts,
 * which states the rules every statement follows); parameters are listed above each statement.
 */
export const READ_QUERIES = {
  /** $1 workflow id. */
  getWorkflow: `SELECT * FROM workflows WHERE id = $1`,
  /** $1 limit, $2 offset. */
  listWorkflows: `SELECT * FROM workflows
    WHERE $3::text IS NULL OR strpos(lower(id), $3) > 0 OR strpos(lower(name), $3) > 0
    ORDER BY id LIMIT $1::int OFFSET $2::int`,
  /** $1 limit, $2 offset, $3 job state, $4 search (lower-case, or null); idle workflows count as all-pending. */
  listWorkflowsWithJobStatus: `SELECT w.* FROM workflows w
    WHERE (EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = $3)
       OR ($3 = 'pending' AND w.latest_run = 0))
      AND ($4::text IS NULL OR strpos(lower(w.id), $4) > 0 OR strpos(lower(w.name), $4) > 0)
    ORDER BY w.id LIMIT $1::int OFFSET $2::int`,
  /** $1 workflow id, $2 run number. */
  getRun: `SELECT * FROM runs WHERE workflow_id = $1 AND run_number = $2::int`,
  /** The definition runs of the workflow with this hash used. $1 workflow id, $2 hash */
  getRunDefinition: `SELECT definition FROM run_definitions WHERE workflow_id = $1 AND hash = $2`,
  /** $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  getRuns: `SELECT r.* FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN runs r ON r.workflow_id = k.workflow_id AND r.run_number = k.run_number`,
  /** $1 workflow id, $2 run number. */
  getRunJobs: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int ORDER BY row_id`,
  /** What a status document shows of each job (rows.ts JOB_VIEW_COLUMNS). $1 workflow id, $2 run number. */
  getRunJobViews: `SELECT ${JOB_VIEW_COLUMNS} FROM jobs WHERE workflow_id = $1 AND run_number = $2::int ORDER BY row_id`,
  /**
   * A page of getRunJobViews: through jobs_run_status, sorted by the database (a few milliseconds of its
   * time for a run of 10,000 jobs); only the page crosses to the server. $1 workflow id, $2 run number,
   * $3 after this row id, $4 limit.
   */
  getRunJobViewsPage: `SELECT ${JOB_VIEW_COLUMNS} FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND row_id > $3::bigint ORDER BY row_id LIMIT $4::int`,
  /** $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  getJobsOfRuns: `SELECT j.* FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN jobs j ON j.workflow_id = k.workflow_id AND j.run_number = k.run_number
    ORDER BY j.row_id`,
  /** Newest first, through the primary key. $1 workflow id, $2 limit, $3 offset. */
  listRuns: `SELECT * FROM runs WHERE workflow_id = $1 ORDER BY run_number DESC LIMIT $2::int OFFSET $3::int`,
  /** Counted off the covering index jobs_run_status. $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  jobCountsOfRuns: `SELECT j.workflow_id, j.run_number, j.status, count(*)::int AS count
    FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN jobs j ON j.workflow_id = k.workflow_id AND j.run_number = k.run_number
    GROUP BY j.workflow_id, j.run_number, j.status`,
  /** $1 workflow id, $2 run number, $3 job id. */
  getJob: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3`,
  /** $1 row id. */
  getJobByRowId: `SELECT * FROM jobs WHERE row_id = $1::bigint`,
  /** $1 lease id. */
  getLease: `SELECT * FROM leases WHERE lease_id = $1`,
  /** No parameters. */
  activeLeases: `SELECT * FROM leases WHERE state = 'active' ORDER BY granted_at_ms, lease_id`,
  /**
   * Queued jobs per label key (an index read of jobs_claim), then running ones: a running job holds an
   * active lease, so they are reached through an active-lease partial index and, per lease, the jobs'
   * primary key, never a pass over finished jobs. The lookup is a subquery because as a join the
   * planner may prefer reading every job's entry in jobs_run_status for `status = 'running'`; OFFSET 0
   * keeps it from being inlined twice (once to filter, once to group). Jobs awaiting approval last,
   * through jobs_awaiting_approval (README "Approvals"). No parameters.
   */
  activeJobCounts: `SELECT 'queued' AS status, label_key, count(*) AS count FROM jobs WHERE status = 'queued' GROUP BY label_key
    UNION ALL
    SELECT 'running', label_key, count(*) FROM (
      SELECT (SELECT j.label_key FROM jobs j WHERE j.row_id = l.job_row_id AND j.status = 'running' AND j.lease_id = l.lease_id) AS label_key
      FROM leases l WHERE l.state = 'active' OFFSET 0
    ) running WHERE label_key IS NOT NULL GROUP BY label_key
    UNION ALL
    SELECT 'awaiting_approval', label_key, count(*) FROM jobs WHERE status = 'awaiting_approval' GROUP BY label_key`,
  /** $1 workflow id, $2 run number, $3 job id, $4 attempt, $5 after this sequence, $6 limit (null: all). */
  getLogChunks: `SELECT * FROM log_chunks
    WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 AND attempt = $4::int AND sequence > $5::int
    ORDER BY sequence LIMIT $6::int`,
  /** $1 workflow id, $2 run number, $3 job id. */
  latestLogAttempt: `SELECT max(attempt) AS attempt FROM log_chunks
    WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3`,
  /** $1 limit (null: all), $2 offset. */
  listWorkers: `SELECT * FROM workers ORDER BY worker_id LIMIT $1::int OFFSET $2::int`,
  /** $1 worker id. */
  getWorker: `SELECT * FROM workers WHERE worker_id = $1`,
  /** $1 after this seq. */
  labelSetsSince: `SELECT seq, key, labels FROM label_sets WHERE seq > $1::bigint ORDER BY seq`,
} as const;
