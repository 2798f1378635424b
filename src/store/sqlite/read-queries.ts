import { JOB_VIEW_COLUMNS } from '../rows.js';
import { LEASE_COLUMNS, LEASE_OF_JOB } from './lease-queries.js';

/**
 * The SQLite store's reads (reads.ts), each run inside one snapshot. Part of QUERIES (queries.ts);
 * the parameters of each statement are listed above it.
 */
export const READ_QUERIES = {
  /** ? id */
  getWorkflow: `SELECT * FROM workflows WHERE id = ?`,
  /** ? limit, ? offset */
  listWorkflows: `SELECT * FROM workflows
    WHERE @search IS NULL OR instr(lower(id), @search) > 0 OR instr(lower(name), @search) > 0
    ORDER BY id LIMIT +@limit OFFSET @offset`,
  /** @status (a job state) @search (lower-case, or null) @limit @offset; idle workflows count as all-pending */
  listWorkflowsByJobStatus: `SELECT w.* FROM workflows w
    WHERE (EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = @status)
       OR (@status = 'pending' AND w.latest_run = 0))
      AND (@search IS NULL OR instr(lower(w.id), @search) > 0 OR instr(lower(w.name), @search) > 0)
    ORDER BY w.id LIMIT +@limit OFFSET @offset`,
  /** ? workflow_id, ? run_number */
  getRun: `SELECT * FROM runs WHERE workflow_id = ? AND run_number = ?`,
  /** The definition runs of the workflow with this hash used. ? workflow_id, ? hash */
  getRunDefinition: `SELECT definition FROM run_definitions WHERE workflow_id = ? AND hash = ?`,
  /** ? JSON array of [workflow_id, run_number] pairs */
  getRuns: `SELECT r.* FROM json_each(?) k
    JOIN runs r ON r.workflow_id = json_extract(k.value, '$[0]') AND r.run_number = json_extract(k.value, '$[1]')`,
  /** ? workflow_id, ? run_number */
  getRunJobs: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? ORDER BY row_id`,
  /** What a status document shows of each job (rows.ts JOB_VIEW_COLUMNS). ? workflow_id, ? run_number */
  getRunJobViews: `SELECT ${JOB_VIEW_COLUMNS} FROM jobs WHERE workflow_id = ? AND run_number = ? ORDER BY row_id`,
  /** As getRunJobViews, a page: ? workflow_id, ? run_number, ? after row_id, ? limit */
  getRunJobViewsPage: `SELECT ${JOB_VIEW_COLUMNS} FROM jobs WHERE workflow_id = ? AND run_number = ? AND row_id > ? ORDER BY row_id LIMIT +?`,
  /** ? JSON array of [workflow_id, run_number] pairs */
  getJobsOfRuns: `SELECT j.* FROM json_each(?) k
    JOIN jobs j ON j.workflow_id = json_extract(k.value, '$[0]') AND j.run_number = json_extract(k.value, '$[1]')
    ORDER BY j.row_id`,
  /** Newest first, through the primary key. ? workflow_id, ? limit, ? offset */
  listRuns: `SELECT * FROM runs WHERE workflow_id = ? ORDER BY run_number DESC LIMIT +? OFFSET ?`,
  /** Counted off the covering index jobs_run_status. ? JSON array of [workflow_id, run_number] pairs */
  jobCountsOfRuns: `SELECT j.workflow_id, j.run_number, j.status, count(*) AS count FROM json_each(?) k
    JOIN jobs j ON j.workflow_id = json_extract(k.value, '$[0]') AND j.run_number = json_extract(k.value, '$[1]')
    GROUP BY j.workflow_id, j.run_number, j.status`,
  /** ? workflow_id, ? run_number, ? job_id */
  getJob: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND job_id = ?`,
  /** ? row_id */
  getJobByRowId: `SELECT * FROM jobs WHERE row_id = ?`,
  /**
   * A lease by id: the one in the row of the job holding it (through jobs_lease; a re-run's kept job
   * names it too, without lease_state), else one its job moved on from (`leases`' primary key), read
   * only when the first finds none. @lease_id
   */
  getLease: `SELECT ${LEASE_OF_JOB} FROM jobs WHERE lease_id = @lease_id AND lease_state IS NOT NULL
    UNION ALL SELECT ${LEASE_COLUMNS} FROM leases WHERE lease_id = @lease_id
    LIMIT 1`,
  /** Through the partial index jobs_lease_expiry: every active lease is in its job's row. No parameters. */
  activeLeases: `SELECT ${LEASE_OF_JOB} FROM jobs WHERE lease_state = 'active'`,
  /**
   * Queued jobs per label key (a covering read of jobs_claim), then running ones: a running job holds
   * an active lease, so they are reached through jobs_lease_expiry and the jobs' primary key, never a
   * pass over finished jobs; jobs awaiting approval last, through jobs_awaiting_approval (README
   * "Approvals"). No parameters.
   */
  activeJobCounts: `SELECT 'queued' AS status, label_key, count(*) AS count FROM jobs WHERE status = 'queued' GROUP BY label_key
    UNION ALL
    SELECT 'running', label_key, count(*) FROM jobs WHERE lease_state = 'active' AND status = 'running' GROUP BY label_key
    UNION ALL
    SELECT 'awaiting_approval', label_key, count(*) FROM jobs WHERE status = 'awaiting_approval' GROUP BY label_key`,
  /** ? workflow_id, ? run_number, ? job_id, ? attempt, ? after_sequence (-1: all), ? limit (-1: no limit) */
  getLogChunks: `SELECT * FROM log_chunks
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence > ?
    ORDER BY sequence LIMIT +?`,
  /** ? workflow_id, ? run_number, ? job_id */
  latestLogAttempt: `SELECT max(attempt) AS attempt FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ?`,
  /** ? limit (-1: all), ? offset */
  listWorkers: `SELECT * FROM workers ORDER BY worker_id LIMIT +? OFFSET ?`,
  /** ? worker_id */
  getWorker: `SELECT * FROM workers WHERE worker_id = ?`,
  /** ? after_seq; the rowid counts additions, and writers are serialized, so it only grows in commit order */
  labelSetsSince: `SELECT rowid AS seq, key, labels FROM label_sets WHERE rowid > ? ORDER BY rowid`,
} as const;
