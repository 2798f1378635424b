/**
 * The lease calls (leases.ts: heartbeat, logs, completion, retry), the reaper's statements (reaper.ts)
 * and the workers list (workers.ts). Part of QUERIES (queries.ts, which states the rules every
 * statement follows); parameters are listed above each statement.
 */

/**
 * Records the lease's worker as seen, creating it with no labels when unknown; not when the call came
 * with another token than the lease's claim (`holder`, see usableBy).
 */
const touchWorkerOf = (lease: string, now: string, holder: string) => `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
    SELECT worker_id, '[]', ${now}, ${now} FROM leases l WHERE l.lease_id = ${lease} AND ${usableBy('l', holder)}
    ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`;

/**
 * domain/lease.ts leaseUsableBy as SQL: a call may use the lease `l` when it came without a token
 * (`holder` NULL), the lease was claimed without one, or with the same one.
 */
const usableBy = (l: string, holder: string) => `(${holder}::text IS NULL OR ${l}.token_name IS NULL OR ${l}.token_name = ${holder}::text)`;

/** The lease (row locked) with its job; the job is as of the statement's snapshot (see checkLease, settle.ts). */
const LEASE_WITH_JOB = `SELECT to_json(l.*) AS lease, to_json(j.*) AS job
  FROM leases l JOIN jobs j ON j.row_id = l.job_row_id`;

export const LEASE_QUERIES = {
  /**
   * Heartbeat, when the lease is live: renewed by its own ttl from now (leaseExpiresAt). Records the
   * worker either way, after the lease (`seen` is unreferenced, so it runs once the main query is done).
   * No row: the caller looks closer (lockLease). $1 lease id, $2 now, $3 the call's token name (or NULL).
   */
  renewLease: `WITH renewed AS (
      UPDATE leases l SET renewed_at_ms = $2::bigint, expires_at_ms = $2::bigint + l.ttl_secs::bigint * 1000
      WHERE l.lease_id = $1 AND l.state = 'active' AND $2::bigint <= l.expires_at_ms AND ${usableBy('l', '$3')}
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.row_id = l.job_row_id AND j.deadline_ms < $2::bigint)
      RETURNING l.*
    ), seen AS (${touchWorkerOf('$1', '$2::bigint', '$3')})
    SELECT * FROM renewed`,
  /**
   * Stores log chunks when the lease is live or cancelled and no chunk names another workflow or job;
   * a (run, job, attempt, sequence) already stored is kept. Within the attempt's log budget
   * (src/domain/log-budget.ts), counted on its job row: the leading chunks whose running total fits
   * (a chunk already stored, a re-send, counting nothing) are stored, the first that does not is replaced by the marker, and a closed budget stores nothing;
   * the row's count grows by what was really inserted (a re-send counts once). Two pushes of one
   * attempt at the same moment may both fit against the count as it stood, so the cap may be passed
   * by one push; the count itself stays exact. Records the worker either way, after the inserts (the
   * main query reads `stored`; an unreferenced CTE runs once the main query is done), since an insert
   * may wait for a concurrent copy of the same chunk. Answers the lease, `kept` and `truncated`.
   * $1 lease id, $2 now, $3 chunks (JSON array of {workflow_id?, job_id?, sequence, stream, data,
   * timestamp_ms}), $4 the attempt's budget in bytes, $5 the marker's text, $6 the call's token name (or NULL).
   */
  pushLogs: `WITH lease AS (
      SELECT l.* FROM leases l JOIN jobs j ON j.row_id = l.job_row_id
      WHERE l.lease_id = $1 AND ${usableBy('l', '$6')}
        AND (l.state = 'cancelled' OR (l.state = 'active' AND $2::bigint <= l.expires_at_ms
          AND (j.deadline_ms IS NULL OR $2::bigint <= j.deadline_ms)))
        AND NOT EXISTS (SELECT 1 FROM json_to_recordset($3::json) AS c(workflow_id text, job_id text)
          WHERE c.workflow_id <> l.workflow_id OR c.job_id <> l.job_id)
    ), budget AS (
      SELECT CASE WHEN coalesce(j.log_attempt, -1) = l.attempt THEN j.log_bytes ELSE 0 END AS used,
        coalesce(j.log_attempt, -1) > l.attempt OR (coalesce(j.log_attempt, -1) = l.attempt AND j.log_truncated = 1) AS closed
      FROM lease l JOIN jobs j ON j.row_id = l.job_row_id
    ), incoming AS (
      SELECT c.sequence, c.stream, c.data, c.timestamp_ms, c.ord,
        b.used + sum(CASE WHEN EXISTS (SELECT 1 FROM log_chunks x WHERE x.workflow_id = l.workflow_id AND x.run_number = l.run_number
          AND x.job_id = l.job_id AND x.attempt = l.attempt AND x.sequence = c.sequence) THEN 0 ELSE octet_length(c.data) END)
          OVER (ORDER BY c.ord) AS upto
      FROM lease l CROSS JOIN budget b CROSS JOIN ROWS FROM (json_to_recordset($3::json)
        AS (sequence int, stream text, data text, timestamp_ms bigint)) WITH ORDINALITY AS c(sequence, stream, data, timestamp_ms, ord)
      WHERE NOT b.closed
    ), cut AS (
      SELECT sequence, 'stderr' AS stream, $5::text AS data, timestamp_ms, ord FROM incoming
      WHERE upto > $4::bigint ORDER BY ord LIMIT 1
    ), stored AS (
      INSERT INTO log_chunks (workflow_id, run_number, job_id, attempt, sequence, stream, data, timestamp_ms)
      SELECT l.workflow_id, l.run_number, l.job_id, l.attempt, c.sequence, c.stream, c.data, c.timestamp_ms
      FROM lease l CROSS JOIN (
        SELECT sequence, stream, data, timestamp_ms, ord FROM incoming WHERE upto <= $4::bigint
        UNION ALL SELECT sequence, stream, data, timestamp_ms, ord FROM cut
      ) c
      ORDER BY c.ord
      ON CONFLICT DO NOTHING
      RETURNING octet_length(data) AS n
    ), counted AS (
      UPDATE jobs j SET log_attempt = l.attempt,
        log_bytes = CASE WHEN coalesce(j.log_attempt, -1) = l.attempt THEN j.log_bytes ELSE 0 END + (SELECT coalesce(sum(n), 0) FROM stored),
        log_truncated = CASE WHEN EXISTS (SELECT 1 FROM cut) THEN 1 ELSE 0 END
      FROM lease l, budget b WHERE j.row_id = l.job_row_id AND NOT b.closed
      RETURNING 1
    ), seen AS (${touchWorkerOf('$1', '$2::bigint', '$6')})
    SELECT l.*, (SELECT count(*) FROM incoming WHERE upto <= $4::bigint)::int AS kept,
      (SELECT closed FROM budget) OR EXISTS (SELECT 1 FROM cut) AS truncated
    FROM lease l WHERE (SELECT count(*) FROM stored) + (SELECT count(*) FROM counted) >= 0`,
  /** Sent after a lease call's transaction commits. $1 lease id, $2 now, $3 the call's token name (or NULL). */
  touchLeaseWorker: touchWorkerOf('$1', '$2::bigint', '$3'),
  /** A lease call that must decide: the lease locked, with its job. $1 lease id. */
  lockLease: `${LEASE_WITH_JOB} WHERE l.lease_id = $1 FOR UPDATE OF l`,
  /**
   * Completes the jobs of live leases in one statement, which runs as its own transaction, so no lock
   * is held across a round trip: one lease, or several whose completes arrived together (leases.ts,
   * coalesce.ts; docs/performance.md "PostgreSQL"). Each lease is guarded on its own: one that fails
   * its guard is left out (no row for it; leases.ts then looks closer) and the others complete.
   * Leases are locked first, in lease_id order (two statements sharing leases never wait for each
   * other in turn); per lease: lease completed, job success, each pending direct dependent's
   * pending_needs decremented (rows locked in row order first) and those reaching 0 queued; the
   * workers are recorded as seen (their rows last, in worker_id order). The run row is not touched:
   * every completion of a run would queue on it. The run is settled after COMMIT instead
   * (runsOpenOfLeases, settleRunIfOver). Each row answers the call of its `call_n`.
   *
   * Upstream outputs travel with the decrement: a dependent's row is locked and re-read at its newest
   * version, so each need adds its own outputs there as it completes (whatever the statements'
   * snapshots; kept as JSON text, so their keys keep their order), and the need that queues the
   * dependent assembles them in `needs` order; a need found in none
   * (completed before upstream outputs travelled this way) is read from its row, long committed.
   * Needs of one dependent completing in the same statement arrive together (`arriving`): the
   * dependent is decremented once by their number, and counted as enqueued by the last of them only.
   *
   * Only for a job whose end cannot skip anything below it (no conditional dependent, no failure
   * above it): otherwise the guard fails and leases.ts takes the general way (succeedJob).
   * Per call, lease ids distinct: $1 lease id, $2 outputs (JSON text), $3 now (bigint[]), $4 the
   * call's token name (or NULL).
   */
  completeJob: `WITH c AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS c(lease_id, outputs, now_ms, holder, call_n)
    ), locked AS (
      SELECT l.lease_id FROM leases l WHERE l.lease_id IN (SELECT lease_id FROM c) AND l.state = 'active'
      ORDER BY l.lease_id FOR UPDATE
    ), lease AS (
      UPDATE leases l SET state = 'completed'
      FROM locked, c, jobs j
      WHERE l.lease_id = locked.lease_id AND c.lease_id = l.lease_id
        AND l.state = 'active' AND c.now_ms <= l.expires_at_ms AND ${usableBy('l', 'c.holder')}
        AND j.row_id = l.job_row_id AND j.status = 'running' AND j.lease_id = l.lease_id
        AND (j.deadline_ms IS NULL OR c.now_ms <= j.deadline_ms)
        AND j.conditional_dependents = 0 AND j.failed_upstream = 0
      RETURNING l.job_row_id, c.outputs, c.now_ms, c.call_n
    ), done AS (
      UPDATE jobs j SET status = 'success', outputs = lease.outputs, finished_at_ms = lease.now_ms, deadline_ms = NULL, error = NULL
      FROM lease WHERE j.row_id = lease.job_row_id
      RETURNING j.*, lease.call_n
    ), below AS (
      SELECT d.row_id, done.job_id AS need, done.outputs, done.finished_at_ms AS now_ms, done.call_n FROM done
      CROSS JOIN LATERAL json_array_elements_text(done.dependents::json) AS e(job_id)
      JOIN jobs d ON d.workflow_id = done.workflow_id AND d.run_number = done.run_number AND d.job_id = e.job_id
      WHERE d.status = 'pending'
      ORDER BY d.row_id FOR UPDATE OF d
    ), arriving AS (
      SELECT row_id, count(*)::int AS k, jsonb_object_agg(need, outputs) AS added, max(now_ms) AS now_ms, max(call_n) AS last_n
      FROM below GROUP BY row_id
    ), unblocked AS (
      UPDATE jobs d SET pending_needs = d.pending_needs - a.k,
        status = CASE WHEN d.pending_needs = a.k THEN 'queued' ELSE d.status END,
        enqueued_at_ms = CASE WHEN d.pending_needs = a.k THEN a.now_ms ELSE d.enqueued_at_ms END,
        ready_at_ms = CASE WHEN d.pending_needs = a.k THEN a.now_ms ELSE d.ready_at_ms END,
        delayed_until_ms = CASE WHEN d.pending_needs = a.k THEN 0 ELSE d.delayed_until_ms END,
        upstream_outputs = CASE WHEN d.pending_needs = a.k THEN (
            SELECT COALESCE(json_object_agg(n.job_id, COALESCE(
                a.added ->> n.job_id,
                d.upstream_outputs::jsonb ->> n.job_id,
                (SELECT u.outputs FROM jobs u
                  WHERE u.workflow_id = d.workflow_id AND u.run_number = d.run_number AND u.job_id = n.job_id),
                '{}')::json ORDER BY n.ord), '{}'::json)::text
            FROM json_array_elements_text(d.needs::json) WITH ORDINALITY AS n(job_id, ord))
          ELSE (d.upstream_outputs::jsonb || a.added)::text END
      FROM arriving a WHERE d.row_id = a.row_id
      RETURNING d.row_id, d.job_id, d.status, a.last_n
    ), seen AS (
      INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
      SELECT s.worker_id, '[]', s.now_ms, s.now_ms FROM (
        SELECT DISTINCT ON (l.worker_id) l.worker_id, c.now_ms FROM c JOIN leases l ON l.lease_id = c.lease_id
        WHERE ${usableBy('l', 'c.holder')}
        ORDER BY l.worker_id, c.now_ms DESC) s
      ORDER BY s.worker_id
      ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms
    )
    SELECT done.*,
      (SELECT COALESCE(json_agg(json_build_object('row_id', u.row_id, 'job_id', u.job_id)), '[]')
        FROM unblocked u WHERE u.status = 'queued' AND u.last_n = done.call_n) AS enqueued
    FROM done`,
  /** A settled lease whose job needs no change. $1 lease id, $2 state. */
  setLeaseState: `UPDATE leases SET state = $2 WHERE lease_id = $1`,
  /**
   * Failure plan `retry`: lease settled, job queued again for its next attempt.
   * $1 lease id, $2 lease state, $3 job row id, $4 attempt, $5 now, $6 delayed until, $7 ready at, $8 error.
   */
  requeueJob: `WITH lease AS (UPDATE leases SET state = $2 WHERE lease_id = $1)
    UPDATE jobs SET status = 'queued', attempt = $4::int, enqueued_at_ms = $5::bigint, delayed_until_ms = $6::bigint,
      ready_at_ms = $7::bigint, error = $8, started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL,
      worker_id = NULL, lease_id = NULL
    WHERE row_id = $3::bigint RETURNING *`,
  /** Active leases past their expiry, through leases_expiry. $1 now, $2 limit. */
  expiredLeases: `SELECT lease_id FROM leases WHERE state = 'active' AND expires_at_ms < $1::bigint
    ORDER BY expires_at_ms LIMIT $2::int`,
  /**
   * One of them, locked if still active and expired; a lease another transaction holds is left to it
   * (that one settles or renews it). $1 lease id, $2 now.
   */
  lockExpiredLease: `${LEASE_WITH_JOB}
    WHERE l.lease_id = $1 AND l.state = 'active' AND l.expires_at_ms < $2::bigint
    FOR UPDATE OF l SKIP LOCKED`,
  /** Running jobs past their deadline, through jobs_deadline. $1 now, $2 limit. */
  timedOutJobs: `SELECT row_id, lease_id FROM jobs
    WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < $1::bigint
    ORDER BY deadline_ms LIMIT $2::int`,
  /** The lease of one of them, locked if its job still runs under it past the deadline. $1 lease id, $2 now. */
  lockTimedOutLease: `${LEASE_WITH_JOB}
    WHERE l.lease_id = $1 AND l.state = 'active'
      AND j.status = 'running' AND j.lease_id = l.lease_id AND j.deadline_ms < $2::bigint
    FOR UPDATE OF l SKIP LOCKED`,
  /** $1 worker id, $2 labels (JSON), $3 now. */
  registerWorker: `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES ($1, $2, $3::bigint, $3::bigint)
    ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    RETURNING *`,
  /**
   * $1 seen before (ms), $2 limit. Oldest first through workers_last_seen, one probe of leases_worker
   * each. SKIP LOCKED: two reapers take different rows; a worker being seen right now (its row locked
   * by a claim or a lease call) is left alone, and the outer condition, checked again on the row as it
   * is once locked, spares one whose sighting committed meanwhile.
   */
  pruneWorkers: `DELETE FROM workers WHERE worker_id IN (
      SELECT w.worker_id FROM workers w
      WHERE w.last_seen_ms < $1::bigint
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.worker_id = w.worker_id AND l.state = 'active')
      ORDER BY w.last_seen_ms LIMIT $2::int
      FOR UPDATE SKIP LOCKED)
    AND last_seen_ms < $1::bigint
    RETURNING worker_id`,
} as const;
