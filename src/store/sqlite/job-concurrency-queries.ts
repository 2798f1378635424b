/**
 * Concurrency groups of jobs (job-concurrency.ts; README "Concurrency groups"): the arrivals to settle
 * and the cancels they call for. The claim's side is in claim-queries.ts. Part of QUERIES (queries.ts);
 * the parameters of each statement are listed above it.
 */
export const JOB_CONCURRENCY_QUERIES = {
  /** Groups a job arrived in that is not settled yet, through jobs_group_arrivals. ? limit */
  groupsWithArrivals: `SELECT DISTINCT concurrency_group FROM jobs INDEXED BY jobs_group_arrivals
    WHERE concurrency_group IS NOT NULL AND group_checked = 0 AND status IN ('queued', 'running') LIMIT +?`,
  /** The group's queued and running jobs, through jobs_job_group. ? group */
  jobGroupMembers: `SELECT * FROM jobs INDEXED BY jobs_job_group
    WHERE concurrency_group = ? AND status IN ('queued', 'running') ORDER BY enqueued_at_ms, row_id`,
  /** A job an arrival in its group cancels. ? now, ? error, ? row_id */
  cancelGroupJob: `UPDATE jobs SET status = 'cancelled', finished_at_ms = ?, deadline_ms = NULL, error = ?
    WHERE row_id = ? RETURNING *`,
  /** The running job of each of these groups, through jobs_job_group. ? groups (JSON array) */
  jobGroupHolders: `SELECT concurrency_group, workflow_id, run_number, job_id FROM jobs INDEXED BY jobs_job_group
    WHERE concurrency_group IN (SELECT value FROM json_each(?)) AND status IN ('queued', 'running') AND status = 'running'`,
  /** The arrivals settled. ? row ids (JSON array) */
  markGroupChecked: `UPDATE jobs SET group_checked = 1 WHERE row_id IN (SELECT value FROM json_each(?))`,
} as const;
