/**
 * The statements of approval gates (approvals.ts; README "Approvals"), as in the SQLite store. Part of
 * QUERIES (queries.ts); parameters are listed above each statement. Lock order as everywhere: the
 * job's own row, then the jobs below it in row order (lockBelow), then, after COMMIT, the run.
 */
export const APPROVAL_QUERIES = {
  /**
   * The job to decide on, locked: a second decision racing this one waits here and then reads the
   * first one's result (FOR UPDATE reads the newest committed version). $1 workflow id, $2 run number,
   * $3 job id.
   */
  lockJobToDecide: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 FOR UPDATE`,
  /**
   * A wait past its deadline, locked and checked again on the newest version (another reaper or a
   * person may have decided it meanwhile: then no row). $1 job row id, $2 now.
   */
  lockDueApproval: `SELECT * FROM jobs WHERE row_id = $1::bigint AND status = 'awaiting_approval'
    AND approval_deadline_ms IS NOT NULL AND approval_deadline_ms < $2::bigint FOR UPDATE`,
  /**
   * Approved, a job with a command: claimable from now, like a job its last need just queued. No row
   * unless awaiting approval. $1 job row id, $2 now, $3 decided by, $4 comment.
   */
  approveJob: `UPDATE jobs
    SET status = 'queued', enqueued_at_ms = $2::bigint, ready_at_ms = $2::bigint, delayed_until_ms = 0,
      approval_decision = 'approved', approval_decided_by = $3, approval_decided_at_ms = $2::bigint, approval_comment = $4
    WHERE row_id = $1::bigint AND status = 'awaiting_approval'
    RETURNING *`,
  /**
   * The end of a wait that runs nothing: `success` (an approval alone, approved; its outputs are empty)
   * or `failed` (rejected or timed out). No row unless awaiting approval. $1 job row id, $2 status,
   * $3 error, $4 decision, $5 decided by, $6 comment, $7 now.
   */
  endApproval: `UPDATE jobs
    SET status = $2, outputs = CASE WHEN $2 = 'success' THEN '{}' ELSE outputs END, error = $3, finished_at_ms = $7::bigint,
      approval_decision = $4, approval_decided_by = $5, approval_decided_at_ms = $7::bigint, approval_comment = $6
    WHERE row_id = $1::bigint AND status = 'awaiting_approval'
    RETURNING *`,
  /** Waits past their deadline, through the partial index jobs_approval_deadline. $1 now, $2 limit. */
  dueApprovals: `SELECT row_id FROM jobs
    WHERE status = 'awaiting_approval' AND approval_deadline_ms IS NOT NULL AND approval_deadline_ms < $1::bigint
    ORDER BY approval_deadline_ms LIMIT $2::int`,
} as const;
