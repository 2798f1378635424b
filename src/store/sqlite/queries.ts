import { CONDITION_QUERIES } from './condition-queries.js';
import { ARTIFACT_QUERIES } from './artifact-queries.js';
import { RETENTION_QUERIES } from './retention-queries.js';

/**
 * Every SQL statement of the SQLite store, by name (the retention and condition statements are kept
 * apart only for length, in retention-queries.ts and condition-queries.ts, as in the PostgreSQL
 * store). Each is prepared once per connection (see connection.ts). The comment of each statement
 * lists its parameters: `?` ones in order, `@name` ones by name. The index-plan tests EXPLAIN
 * claimCandidates, expiredLeases, timedOutJobs, activeJobCounts and the retention statements as
 * QUERIES holds them.
 */
export const QUERIES = {
  ...RETENTION_QUERIES,
  ...ARTIFACT_QUERIES,
  ...CONDITION_QUERIES,
  // ------------------------------------------------------------------------------------ workflows

  /** ? id */
  getWorkflow: `SELECT * FROM workflows WHERE id = ?`,
  /**
   * @id @name @trigger @definition (JSON) @source @hash @created_at_ms @updated_at_ms @latest_run @schedules (JSON or
   * null) @next_fire_at_ms; no row when the id is taken
   */
  insertWorkflow: `INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run,
      schedules, next_fire_at_ms)
    VALUES (@id, @name, @trigger, @definition, @source, @hash, @created_at_ms, @updated_at_ms, @latest_run, @schedules, @next_fire_at_ms)
    ON CONFLICT (id) DO NOTHING`,
  /**
   * @id @name @trigger @definition (JSON) @source @hash @updated_at_ms @schedules @next_fire_at_ms; the next fire time
   * is kept while the schedules stay the same, so a pending catch-up survives an edit of the jobs
   */
  updateWorkflowDefinition: `UPDATE workflows
    SET name = @name, trigger = @trigger, definition = @definition, source = @source, hash = @hash, updated_at_ms = @updated_at_ms,
      next_fire_at_ms = CASE WHEN schedules IS @schedules THEN next_fire_at_ms ELSE @next_fire_at_ms END, schedules = @schedules
    WHERE id = @id`,
  /** ? next_fire_at_ms, ? id */
  setNextFire: `UPDATE workflows SET next_fire_at_ms = ? WHERE id = ?`,
  /** Due schedules, an ordered range read of workflows_next_fire. ? now_ms, ? limit */
  dueSchedules: `SELECT * FROM workflows WHERE next_fire_at_ms IS NOT NULL AND next_fire_at_ms <= ?
    ORDER BY next_fire_at_ms LIMIT ?`,
  /** ? run_number, ? id */
  setLatestRun: `UPDATE workflows SET latest_run = ? WHERE id = ?`,
  /** ? limit, ? offset */
  listWorkflows: `SELECT * FROM workflows
    WHERE @search IS NULL OR instr(lower(id), @search) > 0 OR instr(lower(name), @search) > 0
    ORDER BY id LIMIT @limit OFFSET @offset`,
  /** @status (a job state) @search (lower-case, or null) @limit @offset; idle workflows count as all-pending */
  listWorkflowsByJobStatus: `SELECT w.* FROM workflows w
    WHERE (EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = @status)
       OR (@status = 'pending' AND w.latest_run = 0))
      AND (@search IS NULL OR instr(lower(w.id), @search) > 0 OR instr(lower(w.name), @search) > 0)
    ORDER BY w.id LIMIT @limit OFFSET @offset`,

  // ----------------------------------------------------------------------------------------- runs

  /** @workflow_id @run_number @status @created_at_ms @finished_at_ms @unfinished_jobs */
  insertRun: `INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms, unfinished_jobs, failed_jobs,
      cancelled_jobs, inputs, rerun_of, plan)
    VALUES (@workflow_id, @run_number, @status, @created_at_ms, @finished_at_ms, @unfinished_jobs, 0, 0, @inputs, @rerun_of, @plan)`,
  /** The workflow's running and queued runs, oldest first, through runs_running and runs_queued. ? workflow_id twice */
  activeRuns: `SELECT * FROM (
      SELECT * FROM runs WHERE workflow_id = ? AND status = 'running'
      UNION ALL SELECT * FROM runs WHERE workflow_id = ? AND status = 'queued'
    ) ORDER BY run_number`,
  /** Workflows with a queued run, through runs_queued. ? limit */
  queuedWorkflows: `SELECT DISTINCT workflow_id FROM runs WHERE status = 'queued' LIMIT ?`,
  /** A queued run starts: ? status, ? unfinished_jobs, ? finished_at_ms, ? workflow_id, ? run_number */
  startQueuedRun: `UPDATE runs SET status = ?, plan = NULL, unfinished_jobs = ?, finished_at_ms = ?
    WHERE workflow_id = ? AND run_number = ? AND status = 'queued'`,
  /** A queued run cancelled before it started. ? finished_at_ms, ? workflow_id, ? run_number */
  cancelQueuedRun: `UPDATE runs SET status = 'cancelled', plan = NULL, finished_at_ms = ?
    WHERE workflow_id = ? AND run_number = ? AND status = 'queued'`,
  /** ? workflow_id, ? run_number */
  getRun: `SELECT * FROM runs WHERE workflow_id = ? AND run_number = ?`,
  /** ? JSON array of [workflow_id, run_number] pairs */
  getRuns: `SELECT r.* FROM json_each(?) k
    JOIN runs r ON r.workflow_id = json_extract(k.value, '$[0]') AND r.run_number = json_extract(k.value, '$[1]')`,
  /**
   * @workflow_id @run_number @finished (jobs that reached a terminal state) @failed (of which failed)
   * @cancelled (of which cancelled, or spared by a cancel); answers the counters after the change.
   */
  countFinishedJobs: `UPDATE runs
    SET unfinished_jobs = unfinished_jobs - @finished, failed_jobs = failed_jobs + @failed, cancelled_jobs = cancelled_jobs + @cancelled
    WHERE workflow_id = @workflow_id AND run_number = @run_number
    RETURNING status, unfinished_jobs, failed_jobs, cancelled_jobs`,
  /** Running runs with nothing left unfinished, through runs_running. ? limit */
  strandedRuns: `SELECT workflow_id, run_number, status, unfinished_jobs, failed_jobs, cancelled_jobs FROM runs
    WHERE status = 'running' AND unfinished_jobs = 0 LIMIT ?`,
  /** ? status, ? finished_at_ms, ? workflow_id, ? run_number */
  settleRun: `UPDATE runs SET status = ?, finished_at_ms = ? WHERE workflow_id = ? AND run_number = ? AND status = 'running'`,

  // ----------------------------------------------------------------------------------------- jobs

  /** every column of rows.ts jobRow() by name */
  insertJob: `INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
      pending_needs, max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms,
      started_at_ms, finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id,
      condition, needs_results, failed_upstream, run_cancelled, conditional_dependents,
      group_id, matrix, max_parallel, fail_fast, for_each, item, item_index, artifact_spec)
    VALUES (@workflow_id, @run_number, @job_id, @name, @command, @env, @labels, @label_key, @needs, @dependents,
      @pending_needs, @max_retries, @backoff, @timeout_secs, @status, @attempt, @enqueued_at_ms, @delayed_until_ms, @ready_at_ms,
      @started_at_ms, @finished_at_ms, @deadline_ms, @error, @outputs, @upstream_outputs, @worker_id, @lease_id,
      @condition, @needs_results, @failed_upstream, @run_cancelled, @conditional_dependents,
      @group_id, @matrix, @max_parallel, @fail_fast, @for_each, @item, @item_index, @artifact_spec)`,
  /** ? workflow_id, ? run_number */
  getRunJobs: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? ORDER BY row_id`,
  /** ? workflow_id, ? run_number, ? after this row_id, ? limit */
  getRunJobsPage: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND row_id > ? ORDER BY row_id LIMIT ?`,
  /** ? JSON array of [workflow_id, run_number] pairs */
  getJobsOfRuns: `SELECT j.* FROM json_each(?) k
    JOIN jobs j ON j.workflow_id = json_extract(k.value, '$[0]') AND j.run_number = json_extract(k.value, '$[1]')
    ORDER BY j.row_id`,
  /** Newest first, through the primary key. ? workflow_id, ? limit, ? offset */
  listRuns: `SELECT * FROM runs WHERE workflow_id = ? ORDER BY run_number DESC LIMIT ? OFFSET ?`,
  /** Counted off the covering index jobs_run_status. ? JSON array of [workflow_id, run_number] pairs */
  jobCountsOfRuns: `SELECT j.workflow_id, j.run_number, j.status, count(*) AS count FROM json_each(?) k
    JOIN jobs j ON j.workflow_id = json_extract(k.value, '$[0]') AND j.run_number = json_extract(k.value, '$[1]')
    GROUP BY j.workflow_id, j.run_number, j.status`,
  /** ? workflow_id, ? run_number, ? job_id */
  getJob: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND job_id = ?`,
  /** ? row_id */
  getJobByRowId: `SELECT * FROM jobs WHERE row_id = ?`,

  /**
   * The claim's candidates of one label key: an ordered range read of the covering partial index
   * jobs_claim. ? label_key, ? now_ms, ? limit
   */
  claimCandidates: `SELECT row_id, ready_at_ms, max_parallel,
      CASE WHEN max_parallel IS NULL THEN NULL ELSE workflow_id || '/' || run_number || '/' || group_id END AS group_key,
      CASE WHEN max_parallel IS NULL THEN 0 ELSE (SELECT count(*) FROM jobs s INDEXED BY jobs_group_running
        WHERE s.workflow_id = jobs.workflow_id AND s.run_number = jobs.run_number AND s.group_id = jobs.group_id
          AND s.status = 'running' AND s.group_id IS NOT NULL) END AS group_running
    FROM jobs
    WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ?
      AND (max_parallel IS NULL OR max_parallel > (SELECT count(*) FROM jobs s INDEXED BY jobs_group_running
        WHERE s.workflow_id = jobs.workflow_id AND s.run_number = jobs.run_number AND s.group_id = jobs.group_id
          AND s.status = 'running' AND s.group_id IS NOT NULL))
    ORDER BY ready_at_ms, row_id LIMIT ?`,
  /** @row_id @now_ms @worker_id @lease_id; no row unless still queued */
  startJob: `UPDATE jobs
    SET status = 'running', started_at_ms = @now_ms, finished_at_ms = NULL,
      deadline_ms = CASE WHEN timeout_secs IS NULL THEN NULL ELSE @now_ms + timeout_secs * 1000 END,
      worker_id = @worker_id, lease_id = @lease_id
    WHERE row_id = @row_id AND status = 'queued'
    RETURNING *`,
  /**
   * The completion of a live lease in one statement: no row unless the job runs under that lease and is
   * not past its deadline (then checkLease, settle.ts, decides what happened). @row_id @lease_id @now_ms @outputs (JSON)
   */
  succeedLiveJob: `UPDATE jobs
    SET status = 'success', outputs = @outputs, finished_at_ms = @now_ms, deadline_ms = NULL, error = NULL
    WHERE row_id = @row_id AND status = 'running' AND lease_id = @lease_id AND (deadline_ms IS NULL OR deadline_ms >= @now_ms)
    RETURNING *`,
  /** ? row_id, ? lease_id; back in the queue as it was before the claim (same attempt and ready_at_ms) */
  unclaimJob: `UPDATE jobs
    SET status = 'queued', started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL, worker_id = NULL, lease_id = NULL
    WHERE row_id = ? AND status = 'running' AND lease_id = ?`,
  /** ? workflow_id, ? run_number, ? job_id; no row unless pending */
  decrementPendingNeeds: `UPDATE jobs SET pending_needs = pending_needs - 1
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND status = 'pending'
    RETURNING row_id, pending_needs`,
  /**
   * @row_id @now_ms; upstream_outputs gathers the outputs of the job's needs, in needs order (CROSS
   * JOIN: each need is one jobs_by_run lookup, not a pass over the run's jobs).
   */
  enqueueReady: `UPDATE jobs
    SET status = 'queued', enqueued_at_ms = @now_ms, ready_at_ms = @now_ms, delayed_until_ms = 0,
      upstream_outputs = (
        SELECT json_group_object(k.value, json(coalesce(n.outputs, '{}')) ORDER BY k.key)
        FROM json_each(jobs.needs) k
        CROSS JOIN jobs n ON n.workflow_id = jobs.workflow_id AND n.run_number = jobs.run_number AND n.job_id = k.value)
    WHERE row_id = @row_id`,
  /** @row_id @attempt @now_ms @delayed_until_ms @ready_at_ms @error */
  requeueJob: `UPDATE jobs
    SET status = 'queued', attempt = @attempt, enqueued_at_ms = @now_ms, delayed_until_ms = @delayed_until_ms,
      ready_at_ms = @ready_at_ms, error = @error, started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL,
      worker_id = NULL, lease_id = NULL
    WHERE row_id = @row_id
    RETURNING *`,
  /** A cancel's jobs, through jobs_run_status. ? workflow_id, ? run_number */
  unfinishedRunJobs: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND status IN ('pending', 'queued', 'running')
    ORDER BY row_id`,
  /** ? now_ms, ? row_id */
  cancelJob: `UPDATE jobs SET status = 'cancelled', finished_at_ms = ?, deadline_ms = NULL WHERE row_id = ?`,
  /** A job below a fan-out now expanded: its needs name the instances. ? needs (JSON), ? pending_needs, ? row_id */
  rewireJob: `UPDATE jobs SET needs = ?, pending_needs = ? WHERE row_id = ?`,
  /** A fan-out replaced by its instances. ? row_id */
  deleteJob: `DELETE FROM jobs WHERE row_id = ?`,
  /** A fan-out with no items (success) or a bad list (failed). @status @error @now_ms @row_id */
  endFanOut: `UPDATE jobs SET status = @status, error = @error, outputs = CASE WHEN @status = 'success' THEN '{}' ELSE NULL END,
      finished_at_ms = @now_ms, deadline_ms = NULL
    WHERE row_id = @row_id RETURNING *`,
  /**
   * fail_fast (README "Matrix, fan-out and artifacts"): the unfinished siblings of a failed instance.
   * ? workflow_id, ? run_number, ? group_id, ? row_id of the failed one
   */
  unfinishedSiblings: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND group_id = ? AND row_id <> ?
    AND status IN ('pending', 'queued', 'running') ORDER BY row_id`,
  /** A sibling fail_fast cancels; fast_cancelled keeps it from making the run cancelled. ? now, ? error, ? row_id */
  fastCancelJob: `UPDATE jobs SET status = 'cancelled', finished_at_ms = ?, deadline_ms = NULL, fast_cancelled = 1, error = ?
    WHERE row_id = ?`,
  /** Running jobs past their deadline, through the partial index jobs_deadline. ? now_ms, ? limit */
  timedOutJobs: `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ?
    ORDER BY deadline_ms LIMIT ?`,

  // ----------------------------------------------------------------------------------- label sets

  /** ? key, ? labels (JSON) */
  insertLabelSet: `INSERT INTO label_sets (key, labels) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
  /** ? after_seq; the rowid counts additions, and writers are serialized, so it only grows in commit order */
  labelSetsSince: `SELECT rowid AS seq, key, labels FROM label_sets WHERE rowid > ? ORDER BY rowid`,

  // --------------------------------------------------------------------------------------- leases

  /** every LeaseRecord field by name */
  insertLease: `INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
      granted_at_ms, renewed_at_ms, expires_at_ms, state, token_name)
    VALUES (@lease_id, @job_row_id, @workflow_id, @run_number, @job_id, @attempt, @worker_id, @ttl_secs,
      @granted_at_ms, @renewed_at_ms, @expires_at_ms, @state, @token_name)`,
  /** ? lease_id */
  getLease: `SELECT * FROM leases WHERE lease_id = ?`,
  /** ? renewed_at_ms, ? expires_at_ms, ? lease_id; no row unless active */
  renewLease: `UPDATE leases SET renewed_at_ms = ?, expires_at_ms = ? WHERE lease_id = ? AND state = 'active' RETURNING *`,
  /** ? new state, ? lease_id; as settleLease, for a caller that has the lease already */
  closeLease: `UPDATE leases SET state = ? WHERE lease_id = ? AND state = 'active'`,
  /** ? new state, ? lease_id; only an active lease moves, so no lease is settled twice */
  settleLease: `UPDATE leases SET state = ? WHERE lease_id = ? AND state = 'active' RETURNING *`,
  /** Active leases past their expiry, through the partial index leases_expiry. ? now_ms, ? limit */
  expiredLeases: `SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`,
  /** no parameters */
  activeLeases: `SELECT * FROM leases WHERE state = 'active'`,
  /**
   * Queued jobs per label key (a covering read of jobs_claim), then running ones: a running job holds
   * an active lease, so they are reached through leases_expiry and the jobs' primary key, never a pass
   * over finished jobs. No parameters.
   */
  activeJobCounts: `SELECT 'queued' AS status, label_key, count(*) AS count FROM jobs WHERE status = 'queued' GROUP BY label_key
    UNION ALL
    SELECT 'running', j.label_key, count(*) FROM leases l JOIN jobs j ON j.row_id = l.job_row_id
      WHERE l.state = 'active' AND j.status = 'running' AND j.lease_id = l.lease_id GROUP BY j.label_key`,

  // ------------------------------------------------------------------------------------------ logs

  /** every LogChunkRecord field by name; a chunk already stored wins */
  insertLogChunk: `INSERT INTO log_chunks (workflow_id, run_number, job_id, attempt, sequence, stream, data, timestamp_ms)
    VALUES (@workflow_id, @run_number, @job_id, @attempt, @sequence, @stream, @data, @timestamp_ms)
    ON CONFLICT DO NOTHING`,
  /** ? workflow_id, ? run_number, ? job_id, ? attempt, ? after_sequence (-1: all), ? limit (-1: no limit) */
  getLogChunks: `SELECT * FROM log_chunks
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence > ?
    ORDER BY sequence LIMIT ?`,
  /** ? workflow_id, ? run_number, ? job_id, ? attempt, ? sequence */
  logChunkStored: `SELECT 1 FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence = ?`,
  /** What the job's current attempt has logged (src/domain/log-budget.ts). ? row_id */
  getLogBudget: `SELECT log_attempt, log_bytes, log_truncated FROM jobs WHERE row_id = ?`,
  /** ? log_attempt, ? log_bytes, ? log_truncated, ? row_id */
  setLogBudget: `UPDATE jobs SET log_attempt = ?, log_bytes = ?, log_truncated = ? WHERE row_id = ?`,
  /** ? workflow_id, ? run_number, ? job_id */
  latestLogAttempt: `SELECT max(attempt) AS attempt FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ?`,

  // -------------------------------------------------------------------------------------- workers

  /** ? worker_id, ? labels (JSON), ? now_ms, ? now_ms again; registered_at_ms stays from the first time */
  upsertWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    RETURNING *`,
  /** As upsertWorker, without answering the row (a claim records its worker on the way). */
  seeWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`,
  /** ? worker_id, ? now_ms, ? now_ms again; a worker first seen here has no labels yet */
  touchWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, '[]', ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`,
  /** ? limit (-1: all), ? offset */
  listWorkers: `SELECT * FROM workers ORDER BY worker_id LIMIT ? OFFSET ?`,
  /**
   * ? seen before (ms), ? limit. Oldest first through workers_last_seen; the lease check is one probe
   * of the partial index leases_worker per candidate.
   */
  pruneWorkers: `DELETE FROM workers WHERE worker_id IN (
      SELECT w.worker_id FROM workers w
      WHERE w.last_seen_ms < ?
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.worker_id = w.worker_id AND l.state = 'active')
      ORDER BY w.last_seen_ms LIMIT ?)`,
  /** ? worker_id */
  getWorker: `SELECT * FROM workers WHERE worker_id = ?`,
} as const;

export type QueryName = keyof typeof QUERIES;
