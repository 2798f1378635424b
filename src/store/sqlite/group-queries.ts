/**
 * The statements of matrix and fan-out groups (README "Matrix, fan-out and artifacts";
 * docs/architecture.md "Matrix and fan-out jobs"): fail_fast, and replacing a fan-out by its
 * instances. Part of QUERIES (queries.ts); the parameters of each statement are listed above it.
 */
export const GROUP_QUERIES = {
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
} as const;
