/**
 * Workflows and runs (workflows.ts, runs.ts): saving definitions, starting, queueing and cancelling
 * runs, label sets, and each run's counters of finished jobs. Part of QUERIES (queries.ts); the
 * parameters of each statement are listed above it.
 */
export const RUN_QUERIES = {
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
    ORDER BY next_fire_at_ms LIMIT +?`,
  /** ? run_number, ? id */
  setLatestRun: `UPDATE workflows SET latest_run = ? WHERE id = ?`,
  /**
   * @workflow_id @run_number @status @created_at_ms @finished_at_ms @unfinished_jobs @inputs @rerun_of @plan @concurrency_group @trigger
   * @definition_hash @event_name
   */
  insertRun: `INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms, unfinished_jobs, failed_jobs,
      cancelled_jobs, inputs, rerun_of, plan, concurrency_group, trigger, definition_hash, event_name)
    VALUES (@workflow_id, @run_number, @status, @created_at_ms, @finished_at_ms, @unfinished_jobs, 0, 0, @inputs, @rerun_of, @plan,
      @concurrency_group, @trigger, @definition_hash, @event_name)`,
  /** The workflow's definition as it is now, kept as the one a run starting now uses (once per hash). ? now, ? workflow_id */
  keepRunDefinition: `INSERT INTO run_definitions (workflow_id, hash, definition, created_at_ms)
    SELECT id, hash, definition, ? FROM workflows WHERE id = ?
    ON CONFLICT (workflow_id, hash) DO NOTHING`,
  /** every column of rows.ts jobRow() by name */
  insertJob: `INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
      pending_needs, max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms,
      started_at_ms, finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id,
      condition, needs_results, failed_upstream, run_cancelled, conditional_dependents,
      group_id, matrix, max_parallel, fail_fast, for_each, item, item_index, artifact_spec, priority,
      approval, approval_requested_at_ms, approval_deadline_ms, approval_decision, approval_decided_by, approval_decided_at_ms,
      approval_comment, concurrency_group, cancel_in_progress, call_spec, child_run)
    VALUES (@workflow_id, @run_number, @job_id, @name, @command, @env, @labels, @label_key, @needs, @dependents,
      @pending_needs, @max_retries, @backoff, @timeout_secs, @status, @attempt, @enqueued_at_ms, @delayed_until_ms, @ready_at_ms,
      @started_at_ms, @finished_at_ms, @deadline_ms, @error, @outputs, @upstream_outputs, @worker_id, @lease_id,
      @condition, @needs_results, @failed_upstream, @run_cancelled, @conditional_dependents,
      @group_id, @matrix, @max_parallel, @fail_fast, @for_each, @item, @item_index, @artifact_spec, @priority,
      @approval, @approval_requested_at_ms, @approval_deadline_ms, @approval_decision, @approval_decided_by, @approval_decided_at_ms,
      @approval_comment, @concurrency_group, @cancel_in_progress, @call_spec, @child_run)`,
  /** The workflow's running and queued runs, oldest first, through runs_running and runs_queued. ? workflow_id twice */
  activeRuns: `SELECT * FROM (
      SELECT * FROM runs WHERE workflow_id = ? AND status = 'running'
      UNION ALL SELECT * FROM runs WHERE workflow_id = ? AND status = 'queued'
    ) ORDER BY run_number`,
  /** A concurrency group's running and queued runs, of every workflow, oldest first, through runs_group. ? group */
  groupRuns: `SELECT workflow_id, run_number, status FROM runs WHERE concurrency_group = ? AND status IN ('running', 'queued')
    ORDER BY created_at_ms, workflow_id, run_number`,
  /** Workflows with a queued run, through runs_queued. ? limit */
  queuedWorkflows: `SELECT DISTINCT workflow_id FROM runs WHERE status = 'queued' LIMIT +?`,
  /** A queued run starts: ? status, ? unfinished_jobs, ? finished_at_ms, ? workflow_id, ? run_number */
  startQueuedRun: `UPDATE runs SET status = ?, plan = NULL, unfinished_jobs = ?, finished_at_ms = ?
    WHERE workflow_id = ? AND run_number = ? AND status = 'queued'`,
  /** A queued run cancelled before it started. ? finished_at_ms, ? workflow_id, ? run_number */
  cancelQueuedRun: `UPDATE runs SET status = 'cancelled', plan = NULL, finished_at_ms = ?
    WHERE workflow_id = ? AND run_number = ? AND status = 'queued'`,
  /** ? key, ? labels (JSON) */
  insertLabelSet: `INSERT INTO label_sets (key, labels) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
  /** A cancel's jobs, through jobs_run_status. ? workflow_id, ? run_number */
  unfinishedRunJobs: `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND status IN ('pending', 'awaiting_approval', 'queued', 'running')
    ORDER BY row_id`,
  /** ? now_ms, ? row_id */
  cancelJob: `UPDATE jobs SET status = 'cancelled', finished_at_ms = ?, deadline_ms = NULL WHERE row_id = ?`,
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
    WHERE status = 'running' AND unfinished_jobs = 0 LIMIT +?`,
  /** ? status, ? finished_at_ms, ? workflow_id, ? run_number */
  settleRun: `UPDATE runs SET status = ?, finished_at_ms = ? WHERE workflow_id = ? AND run_number = ? AND status = 'running'`,
} as const;
