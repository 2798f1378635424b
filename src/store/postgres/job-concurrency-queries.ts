/**
 * Concurrency groups of jobs (job-concurrency.ts; README "Concurrency groups"): the arrivals to settle
 * and the cancels they call for. The claim's side is in claim-queries.ts. Part of QUERIES (queries.ts,
 * which states the rules every statement follows); parameters are listed above each statement.
 */
export const JOB_CONCURRENCY_QUERIES = {
  /** Groups a job arrived in that is not settled yet, through jobs_group_arrivals. $1 limit */
  groupsWithArrivals: `SELECT DISTINCT concurrency_group FROM jobs
    WHERE concurrency_group IS NOT NULL AND group_checked = 0 AND status IN ('queued', 'running') LIMIT $1::int`,
  /**
   * Serialises the settling of one group with its claims (claim.ts takes the same lock) until COMMIT.
   * $1 group
   */
  lockJobGroup: `SELECT pg_advisory_xact_lock(hashtext('weft.job-group/' || $1))`,
  /**
   * The group's queued and running jobs, locked in row order; read after the lock, so every claim of
   * the group that committed before is seen. $1 group
   */
  lockJobGroupMembers: `SELECT * FROM jobs
    WHERE concurrency_group = $1 AND status IN ('queued', 'running') ORDER BY row_id FOR UPDATE`,
  /**
   * A job an arrival in its group cancels, its lease voided if it runs. $1 lease id (or NULL), $2 row
   * id, $3 now, $4 error
   */
  cancelGroupJob: `WITH voided AS (
      UPDATE leases SET state = 'cancelled' WHERE lease_id = $1 AND state = 'active'
    )
    UPDATE jobs SET status = 'cancelled', finished_at_ms = $3::bigint, deadline_ms = NULL, error = $4
    WHERE row_id = $2::bigint RETURNING *`,
  /** The running job of each of these groups, through jobs_job_group. $1 groups (text[]) */
  jobGroupHolders: `SELECT concurrency_group, workflow_id, run_number, job_id FROM jobs
    WHERE concurrency_group = ANY($1::text[]) AND status = 'running'`,
  /** The arrivals settled. $1 row ids (bigint[]) */
  markGroupChecked: `UPDATE jobs SET group_checked = 1 WHERE row_id = ANY($1::bigint[])`,
} as const;
