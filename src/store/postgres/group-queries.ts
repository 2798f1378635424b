/**
 * The statements of matrix and fan-out groups (README "Matrix, fan-out and artifacts";
 * docs/architecture.md "Matrix and fan-out jobs"): claiming instances under max_parallel, fail_fast,
 * and replacing a fan-out by its instances. Part of QUERIES (queries.ts), kept apart only for length;
 * parameters are listed above each statement, as there.
 */
export const GROUP_QUERIES = {
  /**
   * Matrix groups with a max_parallel that have a claimable instance for these label keys (README
   * "Matrix, fan-out and artifacts"), through the partial index jobs_claim_capped, which holds only
   * such instances: empty, and so free, when no run has one. $1 label keys (text[]), $2 now, $3 limit.
   */
  cappedGroups: `SELECT DISTINCT j.workflow_id, j.run_number, j.group_id, j.max_parallel FROM jobs j
    WHERE j.status = 'queued' AND j.max_parallel IS NOT NULL AND j.label_key = ANY($1::text[]) AND j.ready_at_ms <= $2::bigint
    LIMIT $3::int`,
  /**
   * Serialises the claims of one capped group until COMMIT, so that the count each takes next (a new
   * statement, a new snapshot) includes every instance an earlier claim took. $1 workflow, $2 run, $3 group.
   */
  lockGroup: `SELECT pg_advisory_xact_lock(hashtext('weft.group/' || $1 || '/' || $2::text || '/' || $3))`,
  /** $1 workflow, $2 run, $3 group. */
  groupRunning: `SELECT count(*)::int AS n FROM jobs
    WHERE workflow_id = $1 AND run_number = $2::int AND group_id = $3 AND status = 'running' AND group_id IS NOT NULL`,
  /**
   * As claim, for the instances of one capped group, at most $6 of them (its room under max_parallel).
   * $1 workflow, $2 run, $3 group, $4 label keys, $5 now, $6 limit, $7 lease ids, $8 worker id, $9 ttl,
   * $10 lease expiry, $11 token name.
   */
  claimCapped: `WITH cand AS MATERIALIZED (
      SELECT j.row_id, j.ready_at_ms FROM jobs j
      WHERE j.workflow_id = $1 AND j.run_number = $2::int AND j.group_id = $3 AND j.status = 'queued'
        AND j.label_key = ANY($4::text[]) AND j.ready_at_ms <= $5::bigint
      ORDER BY j.ready_at_ms, j.row_id LIMIT $6::int
      FOR UPDATE SKIP LOCKED
    ), pick AS (
      SELECT row_id, row_number() OVER (ORDER BY ready_at_ms, row_id) AS n FROM cand
    ), taken AS (
      UPDATE jobs j SET status = 'running', started_at_ms = $5::bigint, finished_at_ms = NULL,
        deadline_ms = CASE WHEN j.timeout_secs IS NULL THEN NULL ELSE $5::bigint + j.timeout_secs::bigint * 1000 END,
        worker_id = $8, lease_id = ($7::text[])[p.n]
      FROM pick p WHERE j.row_id = p.row_id
      RETURNING j.*, p.n
    ), granted AS (
      INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
        granted_at_ms, renewed_at_ms, expires_at_ms, state, token_name)
      SELECT t.lease_id, t.row_id, t.workflow_id, t.run_number, t.job_id, t.attempt, $8, $9::int,
        $5::bigint, $5::bigint, $10::bigint, 'active', $11::text
      FROM taken t
    )
    SELECT * FROM taken ORDER BY n`,
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
