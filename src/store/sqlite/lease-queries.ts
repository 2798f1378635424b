/**
 * A job's current lease, read off its row as a LeaseRecord's columns (rows.ts toLease). Since schema
 * version 24 a lease lives in its job's row (the lease_* columns, with the job's lease_id, attempt
 * and worker_id) until the job moves on from it; the `leases` table keeps those it moved on from
 * (migrations.ts, trigger jobs_lease_moved_on), with the same columns. A row holds a lease when its
 * lease_state is set (a re-run's kept job copies a lease_id without holding it), so every statement
 * that finds a lease by id through jobs_lease also names the state.
 */
export const LEASE_OF_JOB = `lease_id, row_id AS job_row_id, workflow_id, run_number, job_id, attempt, worker_id,
  lease_ttl_secs AS ttl_secs, lease_granted_at_ms AS granted_at_ms, lease_renewed_at_ms AS renewed_at_ms,
  lease_expires_at_ms AS expires_at_ms, lease_state AS state, lease_token_name AS token_name`;

/** The columns of the `leases` table, in LEASE_OF_JOB's order. */
export const LEASE_COLUMNS = `lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs, granted_at_ms,
  renewed_at_ms, expires_at_ms, state, token_name`;

/**
 * The lease calls (leases.ts: heartbeat, logs, completion, retry), a job's end and what it queues
 * below (settle.ts), the reaper's statements (reaper.ts) and the workers list (workers.ts). Part of
 * QUERIES (queries.ts); the parameters of each statement are listed above it.
 */
export const LEASE_QUERIES = {
  /** ? renewed_at_ms, ? expires_at_ms, ? lease_id; no row unless active (through jobs_lease) */
  renewLease: `UPDATE jobs SET lease_renewed_at_ms = ?, lease_expires_at_ms = ? WHERE lease_id = ? AND lease_state = 'active'
    RETURNING ${LEASE_OF_JOB}`,
  /** What the job's current attempt has logged (src/domain/log-budget.ts). ? row_id */
  getLogBudget: `SELECT log_attempt, log_bytes, log_truncated FROM jobs WHERE row_id = ?`,
  /** ? log_attempt, ? log_bytes, ? log_truncated, ? row_id */
  setLogBudget: `UPDATE jobs SET log_attempt = ?, log_bytes = ?, log_truncated = ? WHERE row_id = ?`,
  /** ? workflow_id, ? run_number, ? job_id, ? attempt, ? sequence */
  logChunkStored: `SELECT 1 FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence = ?`,
  /** every LogChunkRecord field by name; a chunk already stored wins */
  insertLogChunk: `INSERT INTO log_chunks (workflow_id, run_number, job_id, attempt, sequence, stream, data, timestamp_ms)
    VALUES (@workflow_id, @run_number, @job_id, @attempt, @sequence, @stream, @data, @timestamp_ms)
    ON CONFLICT DO NOTHING`,
  /** ? worker_id, ? now_ms, ? now_ms again; a worker first seen here has no labels yet */
  touchWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, '[]', ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`,
  /**
   * The completion of a live lease in one statement, found through jobs_lease: no row unless the job
   * runs under that lease, the lease is active, not past its expiry, usable by the call's token
   * (src/domain/lease.ts: isLeaseExpired, leaseUsableBy) and the job not past its deadline; then
   * checkLease (settle.ts) decides what happened. The lease is settled `completed` in the same row.
   * @lease_id @holder (the call's token, or null) @now_ms @outputs (JSON)
   */
  succeedLiveJob: `UPDATE jobs
    SET status = 'success', outputs = @outputs, finished_at_ms = @now_ms, deadline_ms = NULL, error = NULL, lease_state = 'completed'
    WHERE lease_id = @lease_id AND status = 'running' AND lease_state = 'active' AND lease_expires_at_ms >= @now_ms
      AND (@holder IS NULL OR lease_token_name IS NULL OR lease_token_name = @holder)
      AND (deadline_ms IS NULL OR deadline_ms >= @now_ms)
    RETURNING *`,
  /** ? workflow_id, ? run_number, ? job_id; no row unless pending */
  decrementPendingNeeds: `UPDATE jobs SET pending_needs = pending_needs - 1
    WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND status = 'pending'
    RETURNING row_id, pending_needs`,
  /**
   * @row_id @now_ms; upstream_outputs gathers the outputs of the job's needs, in needs order (CROSS
   * JOIN: each need is one jobs_by_run lookup, not a pass over the run's jobs).
   */
  enqueueReady: `UPDATE jobs
    SET status = 'queued', enqueued_at_ms = @now_ms, ready_at_ms = @now_ms, delayed_until_ms = 0,
      upstream_outputs = (
        SELECT json_group_object(k.value, json(coalesce(n.outputs, '{}')) ORDER BY k.key)
        FROM json_each(jobs.needs) k
        CROSS JOIN jobs n ON n.workflow_id = jobs.workflow_id AND n.run_number = jobs.run_number AND n.job_id = k.value)
    WHERE row_id = @row_id`,
  /**
   * A job that starts waiting for approval (README "Approvals") carries its needs' outputs from then
   * on, as enqueueReady gathers them. ? row_id
   */
  gatherUpstreamOutputs: `UPDATE jobs
    SET upstream_outputs = (
        SELECT json_group_object(k.value, json(coalesce(n.outputs, '{}')) ORDER BY k.key)
        FROM json_each(jobs.needs) k
        CROSS JOIN jobs n ON n.workflow_id = jobs.workflow_id AND n.run_number = jobs.run_number AND n.job_id = k.value)
    WHERE row_id = ?`,
  /**
   * ? new state, ? lease_id; as settleLease, for a caller that has the lease already. Only a lease in
   * its job's row can be active (every one in `leases` is settled: migrations.ts version 24).
   */
  closeLease: `UPDATE jobs SET lease_state = ? WHERE lease_id = ? AND lease_state = 'active'`,
  /** ? new state, ? lease_id; only an active lease moves, so no lease is settled twice */
  settleLease: `UPDATE jobs SET lease_state = ? WHERE lease_id = ? AND lease_state = 'active' RETURNING ${LEASE_OF_JOB}`,
  /**
   * @row_id @attempt @now_ms @delayed_until_ms @ready_at_ms @error. Clearing lease_id moves the job's
   * (settled) lease to `leases` (trigger jobs_lease_moved_on).
   */
  requeueJob: `UPDATE jobs
    SET status = 'queued', attempt = @attempt, enqueued_at_ms = @now_ms, delayed_until_ms = @delayed_until_ms,
      ready_at_ms = @ready_at_ms, error = @error, started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL,
      worker_id = NULL, lease_id = NULL, lease_ttl_secs = NULL, lease_granted_at_ms = NULL, lease_renewed_at_ms = NULL,
      lease_expires_at_ms = NULL, lease_state = NULL, lease_token_name = NULL
    WHERE row_id = @row_id
    RETURNING *`,
  /** Active leases past their expiry, through the partial index jobs_lease_expiry. ? now_ms, ? limit */
  expiredLeases: `SELECT ${LEASE_OF_JOB} FROM jobs WHERE lease_state = 'active' AND lease_expires_at_ms < ?
    ORDER BY lease_expires_at_ms LIMIT +?`,
  /** Running jobs past their deadline, through the partial index jobs_deadline. ? now_ms, ? limit */
  timedOutJobs: `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ?
    ORDER BY deadline_ms LIMIT +?`,
  /** ? worker_id, ? labels (JSON), ? now_ms, ? now_ms again; registered_at_ms stays from the first time */
  upsertWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    RETURNING *`,
  /**
   * ? seen before (ms), ? limit. Oldest first through workers_last_seen; the workers holding an active
   * lease are read once, off the covering partial index jobs_lease_expiry, and only when some worker
   * is old enough (an index keyed by worker would cost a page write at every claim and complete).
   */
  pruneWorkers: `DELETE FROM workers WHERE worker_id IN (
      SELECT w.worker_id FROM workers w
      WHERE w.last_seen_ms < ?
        AND w.worker_id NOT IN (SELECT worker_id FROM jobs WHERE lease_state = 'active' AND worker_id IS NOT NULL)
      ORDER BY w.last_seen_ms LIMIT +?)`,
} as const;
