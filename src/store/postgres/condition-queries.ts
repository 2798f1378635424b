/**
 * The statements of a job's end that may skip jobs below it (docs/architecture.md "Conditions"): a
 * permanent failure, a completion whose dependents have conditions or that ran after a failure. Part
 * of QUERIES (queries.ts), kept apart only for length; parameters are listed above each statement, as
 * there. Lock order as everywhere: the lease (held by the caller), the job's own row, then the jobs
 * below it in row order.
 */
/**
 * The row ids of the pending jobs below a job, however deep: $1 workflow id, $2 run number, $3 the
 * job's dependents (JSON array). The start of a statement that locks them (lockBelow, and the end of
 * a calling job in call-queries.ts).
 */
export const PENDING_BELOW = `WITH RECURSIVE below(row_id, dependents) AS (
      SELECT d.row_id, d.dependents FROM json_array_elements_text($3::json) AS e(job_id)
      JOIN jobs d ON d.workflow_id = $1 AND d.run_number = $2::int AND d.job_id = e.job_id
      WHERE d.status = 'pending'
      UNION
      SELECT d.row_id, d.dependents FROM below b
      CROSS JOIN LATERAL json_array_elements_text(b.dependents::json) AS e(job_id)
      JOIN jobs d ON d.workflow_id = $1 AND d.run_number = $2::int AND d.job_id = e.job_id
      WHERE d.status = 'pending'
    )`;

export const CONDITION_QUERIES = {
  /**
   * The general completion, under the lease lock (leases.ts): lease completed, job success; what is
   * below follows by lockBelow and applyDecisions. $1 lease id, $2 outputs (JSON), $3 now, $4 job row id.
   */
  succeedJob: `WITH lease AS (UPDATE leases SET state = 'completed' WHERE lease_id = $1)
    UPDATE jobs SET status = 'success', outputs = $2::text, finished_at_ms = $3::bigint, deadline_ms = NULL, error = NULL
    WHERE row_id = $4::bigint AND status = 'running' AND lease_id = $1
    RETURNING *`,
  /**
   * Failure plan `fail`: lease settled, job failed; what is below follows by lockBelow and
   * applyDecisions, and the run is settled after COMMIT (settleRunIfOver).
   * $1 lease id, $2 lease state, $3 job row id, $4 error, $5 now.
   */
  failJob: `WITH lease AS (UPDATE leases SET state = $2 WHERE lease_id = $1)
    UPDATE jobs SET status = 'failed', error = $4, finished_at_ms = $5::bigint, deadline_ms = NULL
    WHERE row_id = $3::bigint RETURNING *`,
  /**
   * Every pending job downstream of a job that ended (found through dependents, through pending jobs
   * only: nothing else can move), locked in row order and read at its newest version, for
   * conditions.ts propagate to decide on. A job that stopped being pending meanwhile is left out by
   * the lock's re-check. $1 workflow id, $2 run number, $3 the ended job's dependents (JSON array).
   */
  lockBelow: `${PENDING_BELOW}
    SELECT j.* FROM jobs j WHERE j.row_id IN (SELECT row_id FROM below) AND j.status = 'pending'
    ORDER BY j.row_id FOR UPDATE OF j`,
  /**
   * Writes what propagate (or a cancel) decided for jobs already locked: counters, needs results and
   * flags; a pending job now `queued` gets its enqueue time and its upstream outputs (in needs order:
   * those its needs' completions carried to it, else read from the need's row, committed before this
   * statement began or written earlier in this transaction), one now `skipped` its end and reason; one
   * now `awaiting_approval` its upstream outputs likewise and its wait's times (README "Approvals").
   * $1 decisions (JSON array of {row_id, status, pending_needs, needs_results (JSON text),
   * failed_upstream, run_cancelled, error, approval_requested_at_ms, approval_deadline_ms}), $2 now.
   */
  applyDecisions: `UPDATE jobs d SET status = u.status, pending_needs = u.pending_needs, needs_results = u.needs_results,
      failed_upstream = u.failed_upstream, run_cancelled = u.run_cancelled,
      error = CASE WHEN u.status = 'skipped' THEN u.error ELSE d.error END,
      finished_at_ms = CASE WHEN u.status = 'skipped' THEN $2::bigint ELSE d.finished_at_ms END,
      enqueued_at_ms = CASE WHEN u.status = 'queued' AND d.status = 'pending' THEN $2::bigint ELSE d.enqueued_at_ms END,
      ready_at_ms = CASE WHEN u.status = 'queued' AND d.status = 'pending' THEN $2::bigint ELSE d.ready_at_ms END,
      delayed_until_ms = CASE WHEN u.status = 'queued' AND d.status = 'pending' THEN 0 ELSE d.delayed_until_ms END,
      approval_requested_at_ms = u.approval_requested_at_ms, approval_deadline_ms = u.approval_deadline_ms,
      upstream_outputs = CASE WHEN u.status IN ('queued', 'awaiting_approval') AND d.status = 'pending' THEN (
          SELECT COALESCE(json_object_agg(n.job_id, COALESCE(
              d.upstream_outputs::jsonb ->> n.job_id,
              (SELECT x.outputs FROM jobs x WHERE x.workflow_id = d.workflow_id AND x.run_number = d.run_number AND x.job_id = n.job_id),
              '{}')::json ORDER BY n.ord), '{}'::json)::text
          FROM json_array_elements_text(d.needs::json) WITH ORDINALITY AS n(job_id, ord))
        ELSE d.upstream_outputs END
    FROM json_to_recordset($1::json) AS u(row_id bigint, status text, pending_needs int, needs_results text,
      failed_upstream smallint, run_cancelled smallint, error text, approval_requested_at_ms bigint, approval_deadline_ms bigint)
    WHERE d.row_id = u.row_id`,
} as const;
