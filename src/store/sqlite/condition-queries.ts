/**
 * The statements of a job's end outside the common case, and of what it decides below it
 * (docs/architecture.md "Conditions"): a completion after the full lease check (succeedJob), a
 * permanent failure (failJob), and each decision of conditions.ts propagate (applyDecision; the jobs
 * below are read one by one with getJob, under SQLite's one write lock). Part of QUERIES (queries.ts),
 * kept apart only for length, as in the PostgreSQL store; parameters are listed above each statement,
 * as there.
 */
export const CONDITION_QUERIES = {
  /** @row_id @lease_id @now_ms @outputs (JSON); no row unless running under that lease */
  succeedJob: `UPDATE jobs
    SET status = 'success', outputs = @outputs, finished_at_ms = @now_ms, deadline_ms = NULL, error = NULL
    WHERE row_id = @row_id AND status = 'running' AND lease_id = @lease_id
    RETURNING *`,
  /** @row_id @now_ms @error */
  failJob: `UPDATE jobs SET status = 'failed', error = @error, finished_at_ms = @now_ms, deadline_ms = NULL
    WHERE row_id = @row_id
    RETURNING *`,
  /**
   * What conditions.ts propagate decided for a job it reached (docs/architecture.md "Conditions"); a
   * job it queues then takes enqueueReady, one it makes wait for approval gatherUpstreamOutputs.
   * @row_id @status @pending_needs @needs_results (JSON) @failed_upstream @run_cancelled @error @now_ms
   * @approval_requested_at_ms @approval_deadline_ms
   */
  applyDecision: `UPDATE jobs
    SET status = @status, pending_needs = @pending_needs, needs_results = @needs_results, failed_upstream = @failed_upstream,
      run_cancelled = @run_cancelled,
      approval_requested_at_ms = @approval_requested_at_ms, approval_deadline_ms = @approval_deadline_ms,
      error = CASE WHEN @status = 'skipped' THEN @error ELSE error END,
      finished_at_ms = CASE WHEN @status = 'skipped' THEN @now_ms ELSE finished_at_ms END
    WHERE row_id = @row_id`,
} as const;
