/**
 * Claiming jobs and handing leases back (claim.ts): the one-statement claim, the claim of matrix
 * groups with a max_parallel and that of concurrency groups, each of which takes a few statements per
 * group under an advisory lock. Part of
 * QUERIES (queries.ts, which states the rules every statement follows); parameters are listed above
 * each statement.
 */

/** A job the one-statement claim may take, of label key `key` (a job of a capped group or a concurrency group is claimed apart). */
const claimable = (key: string) => `j.status = 'queued' AND j.label_key = ${key} AND j.ready_at_ms <= $2::bigint AND j.max_parallel IS NULL
      AND j.concurrency_group IS NULL`;

/**
 * The claim's candidates: for each label key, the first claimable jobs in claim order (highest
 * priority, then oldest), read in that order from the partial index jobs_claim, without locks. No
 * sort: the global order across keys is settled by `claim` over these few rows. A job waiting on a
 * backoff (ready_at_ms later than now) sits at the end of its priority in the index, so it is passed
 * over only when nothing of that priority or above is claimable.
 * $1 label keys (text[], distinct), $2 now, $3 how many per key.
 */
const CLAIM_CANDIDATES = `SELECT c.label_key, c.row_id, c.priority, c.ready_at_ms FROM unnest($1::text[]) AS k(label_key)
  CROSS JOIN LATERAL (
    SELECT j.label_key, j.row_id, j.priority, j.ready_at_ms FROM jobs j
    WHERE ${claimable('k.label_key')}
    ORDER BY j.priority DESC, j.ready_at_ms, j.row_id
    LIMIT $3::int
  ) AS c`;

/**
 * The part every claim shares, after a `pick` of (row_id, n): each picked job becomes running under
 * the n-th of the given lease ids (`taken`), and its lease is recorded (`granted`). Each placeholder
 * is an expression of the row's `n` (`at(alias)`), so that the n-th job of a coalesced claim takes the
 * n-th slot's claimer (see QUERIES.claim): now, lease id, worker id, ttl secs, lease expiry, the
 * claim's token name (or NULL).
 */
type At = (alias: string) => string;
const grantLeases = (p: { now: At; leaseId: At; worker: At; ttl: At; expires: At; token: At }) => `taken AS (
      UPDATE jobs j SET status = 'running', started_at_ms = ${p.now('p')}, finished_at_ms = NULL,
        deadline_ms = CASE WHEN j.timeout_secs IS NULL THEN NULL ELSE ${p.now('p')} + j.timeout_secs::bigint * 1000 END,
        worker_id = ${p.worker('p')}, lease_id = ${p.leaseId('p')}
      FROM pick p WHERE j.row_id = p.row_id
      RETURNING j.*, p.n
    ), granted AS (
      INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
        granted_at_ms, renewed_at_ms, expires_at_ms, state, token_name)
      SELECT t.lease_id, t.row_id, t.workflow_id, t.run_number, t.job_id, t.attempt, ${p.worker('t')}, ${p.ttl('t')},
        ${p.now('t')}, ${p.now('t')}, ${p.expires('t')}, 'active', ${p.token('t')}
      FROM taken t
    )`;

/** The same value for every job of the claim: a scalar parameter. */
const one = (param: string, type: string): At => () => `${param}::${type}`;
/** The n-th job's own value: the n-th element of an array parameter. */
const nth = (param: string, type: string): At => (alias) => `(${param}::${type}[])[${alias}.n]`;

/**
 * The one-statement claim around `locked`, a CTE of the jobs to take (row_id, priority,
 * ready_at_ms), already locked: they become running in claim order under the slots' leases, and the
 * workers are recorded (their rows last: the unreferenced CTE runs after the rest). Parameters: see
 * QUERIES.claim.
 */
const claimStatement = (locked: string) => `WITH ${locked}, pick AS (
      SELECT row_id, row_number() OVER (ORDER BY priority DESC, ready_at_ms, row_id) AS n FROM locked
    ), ${grantLeases({ now: nth('$9', 'bigint'), leaseId: nth('$4', 'text'), worker: nth('$5', 'text'), ttl: nth('$6', 'int'), expires: nth('$7', 'bigint'), token: nth('$8', 'text') })}, seen AS (
      INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
      SELECT w.worker_id, w.labels, w.now_ms, w.now_ms
      FROM unnest($10::text[], $11::text[], $12::bigint[], $13::int[]) AS w(worker_id, labels, now_ms, always)
      WHERE w.always = 1 OR w.worker_id IN (SELECT t.worker_id FROM taken t)
      ORDER BY w.worker_id
      ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    )
    SELECT * FROM taken ORDER BY n`;

export const CLAIM_QUERIES = {
  claimCandidates: CLAIM_CANDIDATES,
  /**
   * The whole claim in one statement, for one claim or for several with the same label key that
   * arrived together (claim.ts, coalesce.ts): the key's first $3 claimable jobs in claim order,
   * read from the partial index jobs_claim and locked as they are read (SKIP LOCKED passes over rows
   * another claim holds, so concurrent claimers take different jobs and none waits), become running
   * under a fresh lease each. Each claimer has a run of consecutive slots, as many as it asked for,
   * so the n-th job taken is the n-th slot's: its lease id, worker, ttl, expiry, token and time. With
   * fewer jobs than slots the later claimers get fewer, as if they had come later. $1 the label key
   * (a text[] of one; claimAcrossKeys takes several), $2 the earliest claimer's now, $3 slots; per
   * slot: $4 lease id, $5 worker id, $6 ttl secs (int[]), $7 lease expiry (bigint[]), $8 token name
   * (or NULL), $9 now (bigint[]); per distinct worker, in worker_id order (the lock order of their
   * rows): $10 worker id, $11 labels (JSON text), $12 now (bigint[]), $13 whether it is recorded even
   * if it takes no job (int[], 1 or 0: 0 only when all its claims here are retries, StoreClaim.retry;
   * postgres.js sends no boolean arrays).
   */
  claim: claimStatement(`locked AS MATERIALIZED (
      SELECT j.row_id, j.priority, j.ready_at_ms FROM jobs j
      WHERE ${claimable('($1::text[])[1]')}
      ORDER BY j.priority DESC, j.ready_at_ms, j.row_id
      LIMIT $3::int
      FOR UPDATE SKIP LOCKED
    )`),
  /**
   * As claim, for claimers that fit several label keys. Locking each key's first $3 candidates as
   * they are read would hold up to $3 jobs per key for a claim that takes $3 in all, and a concurrent
   * claim of other label keys would skip the ones not taken (SKIP LOCKED) and come back with less than
   * there was. So the candidates are read without locks (claimCandidates), the first $3 of them in
   * claim order say how many jobs each key gives (`share`), and only that many per key are locked as
   * they are read, SKIP LOCKED passing over rows other claims hold.
   */
  claimAcrossKeys: claimStatement(`cand AS MATERIALIZED (${CLAIM_CANDIDATES}
    ), share AS (
      SELECT f.label_key, count(*)::int AS n
      FROM (SELECT label_key FROM cand ORDER BY priority DESC, ready_at_ms, row_id LIMIT $3::int) AS f GROUP BY f.label_key
    ), locked AS MATERIALIZED (
      SELECT l.row_id, l.priority, l.ready_at_ms FROM share s
      CROSS JOIN LATERAL (
        SELECT j.row_id, j.priority, j.ready_at_ms FROM jobs j
        WHERE ${claimable('s.label_key')}
        ORDER BY j.priority DESC, j.ready_at_ms, j.row_id
        LIMIT s.n
        FOR UPDATE SKIP LOCKED
      ) AS l
    )`),
  /**
   * Hands claims back unused: each still-active lease becomes `released` and its job, if running under
   * it, returns to the queue with the same attempt and ready_at_ms (its place). Leases are locked in
   * lease_id order; their jobs only move with them. $1 lease ids (text[]).
   */
  releaseLeases: `WITH locked AS (
      SELECT lease_id FROM leases WHERE lease_id = ANY($1::text[]) AND state = 'active'
      ORDER BY lease_id FOR UPDATE
    ), released AS (
      UPDATE leases l SET state = 'released' FROM locked WHERE l.lease_id = locked.lease_id
      RETURNING l.lease_id, l.job_row_id
    )
    UPDATE jobs j SET status = 'queued', started_at_ms = NULL, finished_at_ms = NULL, deadline_ms = NULL,
      worker_id = NULL, lease_id = NULL
    FROM released r WHERE j.row_id = r.job_row_id AND j.status = 'running' AND j.lease_id = r.lease_id
    RETURNING j.row_id, j.workflow_id, j.run_number, j.job_id`,
  /**
   * The groups the one-statement claim leaves out that have a claimable job for these label keys:
   * matrix groups with a max_parallel (README "Matrix, fan-out and artifacts"), through the partial
   * index jobs_claim_capped, and concurrency groups (README "Concurrency groups"), through
   * jobs_job_group. Both indexes hold only such jobs: empty, and so free, when no run has one; one
   * statement asks for both. $1 label keys (text[]), $2 now, $3 limit of each kind.
   */
  claimableGroups: `(SELECT DISTINCT 'matrix' AS kind, j.workflow_id, j.run_number, j.group_id, j.max_parallel, NULL::text AS concurrency_group
      FROM jobs j
      WHERE j.status = 'queued' AND j.max_parallel IS NOT NULL AND j.label_key = ANY($1::text[]) AND j.ready_at_ms <= $2::bigint
        AND j.concurrency_group IS NULL
      LIMIT $3::int)
    UNION ALL
    (SELECT DISTINCT 'concurrency' AS kind, NULL::text, NULL::int, NULL::text, NULL::int, j.concurrency_group FROM jobs j
      WHERE j.concurrency_group IS NOT NULL AND j.status = 'queued' AND j.label_key = ANY($1::text[]) AND j.ready_at_ms <= $2::bigint
      LIMIT $3::int)`,
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
      SELECT j.row_id, j.priority, j.ready_at_ms FROM jobs j
      WHERE j.workflow_id = $1 AND j.run_number = $2::int AND j.group_id = $3 AND j.status = 'queued'
        AND j.label_key = ANY($4::text[]) AND j.ready_at_ms <= $5::bigint AND j.concurrency_group IS NULL
      ORDER BY j.priority DESC, j.ready_at_ms, j.row_id LIMIT $6::int
      FOR UPDATE SKIP LOCKED
    ), pick AS (
      SELECT row_id, row_number() OVER (ORDER BY priority DESC, ready_at_ms, row_id) AS n FROM cand
    ), ${grantLeases({ now: one('$5', 'bigint'), leaseId: nth('$7', 'text'), worker: one('$8', 'text'), ttl: one('$9', 'int'), expires: one('$10', 'bigint'), token: one('$11', 'text') })}
    SELECT * FROM taken ORDER BY n`,
  /** Whether a job of the group runs. $1 group. */
  jobGroupBusy: `SELECT EXISTS (SELECT 1 FROM jobs WHERE concurrency_group = $1 AND status = 'running') AS busy`,
  /**
   * The group's first claimable job in claim order, locked, with what its matrix group's max_parallel
   * needs. $1 group, $2 label keys (text[]), $3 now.
   */
  firstInJobGroup: `SELECT j.row_id, j.workflow_id, j.run_number, j.group_id, j.max_parallel FROM jobs j
    WHERE j.concurrency_group = $1 AND j.status = 'queued' AND j.label_key = ANY($2::text[]) AND j.ready_at_ms <= $3::bigint
    ORDER BY j.priority DESC, j.ready_at_ms, j.row_id LIMIT 1
    FOR UPDATE SKIP LOCKED`,
  /**
   * As claim, for the one job firstInJobGroup locked. $1 row id, $2 now, $3 lease ids (text[], the
   * first is taken), $4 worker id, $5 ttl, $6 lease expiry, $7 token name.
   */
  claimJobOfGroup: `WITH pick AS (SELECT $1::bigint AS row_id, 1 AS n),
    ${grantLeases({ now: one('$2', 'bigint'), leaseId: nth('$3', 'text'), worker: one('$4', 'text'), ttl: one('$5', 'int'), expires: one('$6', 'bigint'), token: one('$7', 'text') })}
    SELECT * FROM taken`,
} as const;
