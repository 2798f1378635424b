/**
 * The statements of approval gates (approvals.ts; README "Approvals"): a decision on a job awaiting
 * approval, and the waits past their deadline. Part of QUERIES (queries.ts), as in the PostgreSQL
 * store; parameters are listed above each statement. Each decision is guarded by the job's state, so
 * only one decision ever lands.
 */
export const APPROVAL_QUERIES = {
  /**
   * Approved, a job with a command: claimable from now, like a job its last need just queued.
   * @row_id @now_ms @decided_by @comment; no row unless awaiting approval
   */
  approveJob: `UPDATE jobs
    SET status = 'queued', enqueued_at_ms = @now_ms, ready_at_ms = @now_ms, delayed_until_ms = 0,
      approval_decision = 'approved', approval_decided_by = @decided_by, approval_decided_at_ms = @now_ms,
      approval_comment = @comment
    WHERE row_id = @row_id AND status = 'awaiting_approval'
    RETURNING *`,
  /**
   * The end of a wait that runs nothing: `success` (an approval alone, approved; its outputs are empty)
   * or `failed` (rejected or timed out). @row_id @status @error @decision @decided_by @comment @now_ms;
   * no row unless awaiting approval
   */
  endApproval: `UPDATE jobs
    SET status = @status, outputs = CASE WHEN @status = 'success' THEN '{}' ELSE outputs END, error = @error,
      finished_at_ms = @now_ms, approval_decision = @decision, approval_decided_by = @decided_by,
      approval_decided_at_ms = @now_ms, approval_comment = @comment
    WHERE row_id = @row_id AND status = 'awaiting_approval'
    RETURNING *`,
  /** Waits past their deadline, through the partial index jobs_approval_deadline. ? now_ms, ? limit */
  dueApprovals: `SELECT * FROM jobs
    WHERE status = 'awaiting_approval' AND approval_deadline_ms IS NOT NULL AND approval_deadline_ms < ?
    ORDER BY approval_deadline_ms LIMIT +?`,
} as const;
