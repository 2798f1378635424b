/**
 * The lease calls (leases.ts: heartbeat, logs, completion, retry), a job's end and what it queues
 * below (settle.ts), the reaper's statements (reaper.ts) and the workers list (workers.ts). Part of
 * QUERIES (queries.ts); the parameters of each statement are listed above it.
 */
export const LEASE_QUERIES = {
  /** ? renewed_at_ms, ? expires_at_ms, ? lease_id; no row unless active */
  renewLease: `UPDATE leases SET renewed_at_ms = ?, expires_at_ms = ? WHERE lease_id = ? AND state = 'active' RETURNING *`,
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
   * The completion of a live lease in one statement: no row unless the job runs under that lease and is
   * not past its deadline (then checkLease, settle.ts, decides what happened). @row_id @lease_id @now_ms @outputs (JSON)
   */
  succeedLiveJob: `UPDATE jobs
    SET status = 'success', outputs = @outputs, finished_at_ms = @now_ms, deadline_ms = NULL, error = NULL
    WHERE row_id = @row_id AND status = 'running' AND lease_id = @lease_id AND (deadline_ms IS NULL OR deadline_ms >= @now_ms)
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
  /** ? new state, ? lease_id; as settleLease, for a caller that has the lease already */
  closeLease: `UPDATE leases SET state = ? WHERE lease_id = ? AND state = 'active'`,
  /** ? new state, ? lease_id; only an active lease moves, so no lease is settled twice */
  settleLease: `UPDATE leases SET state = ? WHERE lease_id = ? AND state = 'active' RETURNING *`,
  /** @row_id @attempt @now_ms @delayed_until_ms @ready_at_ms @error */
  requeueJob: `UPDATE jobs
    SET status = 'queued', attempt = @attempt, enqueued_at_ms = @now_ms, delayed_until_ms = @delayed_until_ms,
      ready_at_ms = @ready_at_ms, error = @error, started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL,
      worker_id = NULL, lease_id = NULL
    WHERE row_id = @row_id
    RETURNING *`,
  /** Active leases past their expiry, through the partial index leases_expiry. ? now_ms, ? limit */
  expiredLeases: `SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`,
  /** Running jobs past their deadline, through the partial index jobs_deadline. ? now_ms, ? limit */
  timedOutJobs: `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ?
    ORDER BY deadline_ms LIMIT ?`,
  /** ? worker_id, ? labels (JSON), ? now_ms, ? now_ms again; registered_at_ms stays from the first time */
  upsertWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    RETURNING *`,
  /**
   * ? seen before (ms), ? limit. Oldest first through workers_last_seen; the lease check is one probe
   * of the partial index leases_worker per candidate.
   */
  pruneWorkers: `DELETE FROM workers WHERE worker_id IN (
      SELECT w.worker_id FROM workers w
      WHERE w.last_seen_ms < ?
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.worker_id = w.worker_id AND l.state = 'active')
      ORDER BY w.last_seen_ms LIMIT ?)`,
} as const;
