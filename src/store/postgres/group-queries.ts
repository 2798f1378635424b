import { insertJobs } from './run-queries.js';

/**
 * The statements of matrix and fan-out groups (README "Matrix, fan-out and artifacts";
 * docs/architecture.md "Matrix and fan-out jobs"): fail_fast, and replacing a fan-out by its
 * instances (claiming instances under max_parallel is in claim-queries.ts). Part of QUERIES
 * (queries.ts, which states the rules every statement follows); parameters are listed above each
 * statement.
 */
export const GROUP_QUERIES = {
  /**
   * A fan-out's instances (README "Matrix, fan-out and artifacts"), inserted in the transaction that
   * made it ready. $1 workflow id, $2 run number, $3 jobs (JSON array of jobRow objects).
   */
  insertInstances: `${insertJobs('', '$3')} RETURNING *`,
  /** Jobs below an expanded fan-out, locked already: their needs name the instances. $1 JSON array of {row_id, needs, pending_needs}. */
  rewireJobs: `UPDATE jobs d SET needs = u.needs, pending_needs = u.pending_needs
    FROM json_to_recordset($1::json) AS u(row_id bigint, needs text, pending_needs int) WHERE d.row_id = u.row_id`,
  /** A fan-out replaced by its instances. $1 row id. */
  deleteJob: `DELETE FROM jobs WHERE row_id = $1::bigint`,
  /** A fan-out with no items (success) or a bad list (failed). $1 row id, $2 status, $3 error, $4 now. */
  endFanOut: `UPDATE jobs SET status = $2, error = $3, outputs = CASE WHEN $2 = 'success' THEN '{}' ELSE NULL END,
      finished_at_ms = $4::bigint, deadline_ms = NULL
    WHERE row_id = $1::bigint RETURNING *`,
  /**
   * fail_fast: locks the unfinished siblings of a failed instance, in row order.
   * $1 workflow, $2 run, $3 group, $4 the failed one's row id.
   */
  lockSiblings: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND group_id = $3 AND row_id <> $4::bigint
    AND status IN ('pending', 'queued', 'running') ORDER BY row_id FOR UPDATE`,
  /**
   * fail_fast: voids the siblings' leases and cancels them, marked fast_cancelled (they do not make the
   * run cancelled). $1 lease ids (text[]), $2 row ids (bigint[]), $3 now, $4 error.
   */
  fastCancel: `WITH voided AS (
      UPDATE leases SET state = 'cancelled' WHERE lease_id = ANY($1::text[]) AND state = 'active'
    )
    UPDATE jobs SET status = 'cancelled', finished_at_ms = $3::bigint, deadline_ms = NULL, fast_cancelled = 1, error = $4
    WHERE row_id = ANY($2::bigint[])`,
} as const;
