/**
 * Claiming jobs and handing leases back (claim.ts). Part of QUERIES (queries.ts); the parameters of
 * each statement are listed above it.
 */
export const CLAIM_QUERIES = {
  /**
   * The claim's candidates of one label key when no instance of a capped group is queued (the common
   * case): a plain ordered range read of jobs_claim. ? label_key, ? now_ms, ? limit
   */
  plainClaimCandidates: `SELECT row_id, priority, ready_at_ms, max_parallel, NULL AS group_key, 0 AS group_running,
      NULL AS concurrency_group FROM jobs
    WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ?
    ORDER BY priority DESC, ready_at_ms, row_id LIMIT +?`,
  /**
   * Whether any instance of a capped group is queued, through the partial index jobs_claim_capped, or
   * any job of a concurrency group, through jobs_job_group (its predicate repeated word for word, as
   * SQLite needs to use a partial index).
   */
  cappedQueued: `SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_claim_capped WHERE status = 'queued' AND max_parallel IS NOT NULL)
      OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_job_group
        WHERE concurrency_group IS NOT NULL AND status IN ('queued', 'running') AND status = 'queued') AS any`,
  /**
   * The claim's candidates of one label key: an ordered range read of the covering partial index
   * jobs_claim, leaving out instances of a group at its max_parallel and jobs of a concurrency group
   * one of whose jobs runs (README "Concurrency groups"). ? label_key, ? now_ms, ? limit
   */
  claimCandidates: `SELECT row_id, priority, ready_at_ms, max_parallel, concurrency_group,
      CASE WHEN max_parallel IS NULL THEN NULL ELSE workflow_id || '/' || run_number || '/' || group_id END AS group_key,
      CASE WHEN max_parallel IS NULL THEN 0 ELSE (SELECT count(*) FROM jobs s INDEXED BY jobs_group_running
        WHERE s.workflow_id = jobs.workflow_id AND s.run_number = jobs.run_number AND s.group_id = jobs.group_id
          AND s.status = 'running' AND s.group_id IS NOT NULL) END AS group_running
    FROM jobs
    WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ?
      AND (max_parallel IS NULL OR max_parallel > (SELECT count(*) FROM jobs s INDEXED BY jobs_group_running
        WHERE s.workflow_id = jobs.workflow_id AND s.run_number = jobs.run_number AND s.group_id = jobs.group_id
          AND s.status = 'running' AND s.group_id IS NOT NULL))
      AND (concurrency_group IS NULL OR NOT EXISTS (SELECT 1 FROM jobs g INDEXED BY jobs_job_group
        WHERE g.concurrency_group = jobs.concurrency_group AND g.status IN ('queued', 'running') AND g.status = 'running'))
    ORDER BY priority DESC, ready_at_ms, row_id LIMIT +?`,
  /**
   * The job runs under a new lease, kept in its row (migrations.ts version 24). No row unless still
   * queued. @row_id @now_ms @worker_id @lease_id @ttl_secs @expires_at_ms @token_name
   */
  startJob: `UPDATE jobs
    SET status = 'running', started_at_ms = @now_ms, finished_at_ms = NULL,
      deadline_ms = CASE WHEN timeout_secs IS NULL THEN NULL ELSE @now_ms + timeout_secs * 1000 END,
      worker_id = @worker_id, lease_id = @lease_id, lease_ttl_secs = @ttl_secs, lease_granted_at_ms = @now_ms,
      lease_renewed_at_ms = @now_ms, lease_expires_at_ms = @expires_at_ms, lease_state = 'active', lease_token_name = @token_name
    WHERE row_id = @row_id AND status = 'queued'
    RETURNING *`,
  /** As upsertWorker, without answering the row (a claim records its worker on the way). */
  seeWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`,
  /**
   * ? row_id, ? lease_id; back in the queue as it was before the claim (same attempt and ready_at_ms).
   * Clearing lease_id moves the (released) lease to `leases` (trigger jobs_lease_moved_on).
   */
  unclaimJob: `UPDATE jobs
    SET status = 'queued', started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL, worker_id = NULL, lease_id = NULL,
      lease_ttl_secs = NULL, lease_granted_at_ms = NULL, lease_renewed_at_ms = NULL, lease_expires_at_ms = NULL,
      lease_state = NULL, lease_token_name = NULL
    WHERE row_id = ? AND status = 'running' AND lease_id = ?`,
} as const;
