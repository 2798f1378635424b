import { GROUP_QUERIES } from './group-queries.js';
import { CONDITION_QUERIES } from './condition-queries.js';
import { ARTIFACT_QUERIES } from './artifact-queries.js';
import { RETENTION_QUERIES } from './retention-queries.js';

/**
 * Every SQL statement of the PostgreSQL store, by name. The store runs exactly these strings (the
 * index-plan tests EXPLAIN the same ones; `claim` runs `claimCandidates` inside it, verbatim), always
 * with bind parameters, listed above each statement. Times are epoch milliseconds; JSON columns are
 * TEXT holding JSON.stringify output (see migrations.ts). A parameter cast to json takes a JavaScript
 * value, which the driver encodes.
 *
 * Concurrency (READ COMMITTED, no global lock): every write is guarded by the state it expects, and
 * rows are locked in one order: leases, then jobs by ascending row_id, then runs; the workers row last,
 * or in a statement of its own (a cancel's fence is the one reasoned exception, see cancelRun). An
 * UPDATE re-evaluates its WHERE and SET against the newest committed version of a row it had to wait
 * for, so counters decremented with `UPDATE … RETURNING` serialize on their row and exactly one caller
 * sees them reach zero. A plain read in the same statement does not: it keeps the statement's snapshot,
 * which is why some steps are statements of their own (latestRunOf), and why completeJob carries
 * upstream outputs on the rows it locks.
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

/**
 * The claim's candidates: for each label key, the oldest claimable jobs, read in claim order from the
 * partial index jobs_claim and locked as they are read. SKIP LOCKED passes over rows another claim
 * holds, so concurrent claimers take different jobs and none waits. No sort: the global order across
 * keys is settled by `claim` over these few rows.
 * $1 label keys (text[], distinct), $2 now, $3 how many per key.
 */
const CLAIM_CANDIDATES = `SELECT c.row_id, c.ready_at_ms FROM unnest($1::text[]) AS k(label_key)
  CROSS JOIN LATERAL (
    SELECT j.row_id, j.ready_at_ms FROM jobs j
    WHERE j.status = 'queued' AND j.label_key = k.label_key AND j.ready_at_ms <= $2::bigint AND j.max_parallel IS NULL
    ORDER BY j.ready_at_ms, j.row_id
    LIMIT $3::int
    FOR UPDATE SKIP LOCKED
  ) AS c`;

/**
 * The jobs of a run from a JSON array of jobRow objects, in the given order (row_id follows it); `from`
 * is what the array is read from, `param` its placeholder.
 */
const insertJobs = (from: string, param: string) => `
      INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
        pending_needs, max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms,
        started_at_ms, finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id,
        condition, needs_results, failed_upstream, run_cancelled, conditional_dependents,
        group_id, matrix, max_parallel, fail_fast, for_each, item, item_index, artifact_spec)
      SELECT $1, $2::int, e.j->>'job_id', e.j->>'name', e.j->>'command', e.j->>'env', e.j->>'labels', e.j->>'label_key',
        e.j->>'needs', e.j->>'dependents', (e.j->>'pending_needs')::int, (e.j->>'max_retries')::int, e.j->>'backoff',
        (e.j->>'timeout_secs')::int, e.j->>'status', (e.j->>'attempt')::int, (e.j->>'enqueued_at_ms')::bigint,
        (e.j->>'delayed_until_ms')::bigint, (e.j->>'ready_at_ms')::bigint, (e.j->>'started_at_ms')::bigint,
        (e.j->>'finished_at_ms')::bigint, (e.j->>'deadline_ms')::bigint, e.j->>'error', e.j->>'outputs',
        e.j->>'upstream_outputs', e.j->>'worker_id', e.j->>'lease_id',
        e.j->>'condition', e.j->>'needs_results', (e.j->>'failed_upstream')::smallint, (e.j->>'run_cancelled')::smallint,
        (e.j->>'conditional_dependents')::smallint,
        e.j->>'group_id', e.j->>'matrix', (e.j->>'max_parallel')::int, coalesce((e.j->>'fail_fast')::smallint, 0),
        e.j->>'for_each', e.j->>'item', (e.j->>'item_index')::int, e.j->>'artifact_spec'
      FROM ${from}json_array_elements(${param}::json) WITH ORDINALITY AS e(j, ord)
      ORDER BY e.ord`;

export const QUERIES = {
  ...RETENTION_QUERIES,
  ...ARTIFACT_QUERIES,
  ...CONDITION_QUERIES,
  ...GROUP_QUERIES,
  // ------------------------------------------------------------------------------------ reads
  /** $1 workflow id. */
  getWorkflow: `SELECT * FROM workflows WHERE id = $1`,
  /** $1 limit, $2 offset. */
  listWorkflows: `SELECT * FROM workflows
    WHERE $3::text IS NULL OR strpos(lower(id), $3) > 0 OR strpos(lower(name), $3) > 0
    ORDER BY id LIMIT $1::int OFFSET $2::int`,
  /** Due schedules, an ordered range read of workflows_next_fire. $1 now, $2 limit. */
  dueSchedules: `SELECT * FROM workflows WHERE next_fire_at_ms IS NOT NULL AND next_fire_at_ms <= $1::bigint
    ORDER BY next_fire_at_ms LIMIT $2::int`,
  /** $1 limit, $2 offset, $3 job state, $4 search (lower-case, or null); idle workflows count as all-pending. */
  listWorkflowsWithJobStatus: `SELECT w.* FROM workflows w
    WHERE (EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = $3)
       OR ($3 = 'pending' AND w.latest_run = 0))
      AND ($4::text IS NULL OR strpos(lower(w.id), $4) > 0 OR strpos(lower(w.name), $4) > 0)
    ORDER BY w.id LIMIT $1::int OFFSET $2::int`,
  /** $1 workflow id, $2 run number. */
  getRun: `SELECT * FROM runs WHERE workflow_id = $1 AND run_number = $2::int`,
  /** $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  getRuns: `SELECT r.* FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN runs r ON r.workflow_id = k.workflow_id AND r.run_number = k.run_number`,
  /** $1 workflow id, $2 run number. */
  getRunJobs: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int ORDER BY row_id`,
  /**
   * A page of a run's jobs: through jobs_run_status, sorted by the database (a few milliseconds of its
   * time for a run of 10,000 jobs); only the page crosses to the server. $1 workflow id, $2 run number,
   * $3 after this row id, $4 limit.
   */
  getRunJobsPage: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND row_id > $3::bigint ORDER BY row_id LIMIT $4::int`,
  /** $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  getJobsOfRuns: `SELECT j.* FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN jobs j ON j.workflow_id = k.workflow_id AND j.run_number = k.run_number
    ORDER BY j.row_id`,
  /** Newest first, through the primary key. $1 workflow id, $2 limit, $3 offset. */
  listRuns: `SELECT * FROM runs WHERE workflow_id = $1 ORDER BY run_number DESC LIMIT $2::int OFFSET $3::int`,
  /** Counted off the covering index jobs_run_status. $1 workflow ids (text[]), $2 run numbers (int[]), pairwise. */
  jobCountsOfRuns: `SELECT j.workflow_id, j.run_number, j.status, count(*)::int AS count
    FROM unnest($1::text[], $2::int[]) AS k(workflow_id, run_number)
    JOIN jobs j ON j.workflow_id = k.workflow_id AND j.run_number = k.run_number
    GROUP BY j.workflow_id, j.run_number, j.status`,
  /** $1 workflow id, $2 run number, $3 job id. */
  getJob: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3`,
  /** $1 row id. */
  getJobByRowId: `SELECT * FROM jobs WHERE row_id = $1::bigint`,
  /** $1 lease id. */
  getLease: `SELECT * FROM leases WHERE lease_id = $1`,
  /** No parameters. */
  activeLeases: `SELECT * FROM leases WHERE state = 'active' ORDER BY granted_at_ms, lease_id`,
  /**
   * Queued jobs per label key (an index read of jobs_claim), then running ones: a running job holds an
   * active lease, so they are reached through an active-lease partial index and, per lease, the jobs'
   * primary key, never a pass over finished jobs. The lookup is a subquery because as a join the
   * planner may prefer reading every job's entry in jobs_run_status for `status = 'running'`; OFFSET 0
   * keeps it from being inlined twice (once to filter, once to group). No parameters.
   */
  activeJobCounts: `SELECT 'queued' AS status, label_key, count(*) AS count FROM jobs WHERE status = 'queued' GROUP BY label_key
    UNION ALL
    SELECT 'running', label_key, count(*) FROM (
      SELECT (SELECT j.label_key FROM jobs j WHERE j.row_id = l.job_row_id AND j.status = 'running' AND j.lease_id = l.lease_id) AS label_key
      FROM leases l WHERE l.state = 'active' OFFSET 0
    ) running WHERE label_key IS NOT NULL GROUP BY label_key`,
  /** $1 workflow id, $2 run number, $3 job id, $4 attempt, $5 after this sequence, $6 limit (null: all). */
  getLogChunks: `SELECT * FROM log_chunks
    WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 AND attempt = $4::int AND sequence > $5::int
    ORDER BY sequence LIMIT $6::int`,
  /** $1 workflow id, $2 run number, $3 job id. */
  latestLogAttempt: `SELECT max(attempt) AS attempt FROM log_chunks
    WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3`,
  /** $1 limit (null: all), $2 offset. */
  listWorkers: `SELECT * FROM workers ORDER BY worker_id LIMIT $1::int OFFSET $2::int`,
  /** $1 worker id. */
  getWorker: `SELECT * FROM workers WHERE worker_id = $1`,
  /** $1 after this seq. */
  labelSetsSince: `SELECT seq, key, labels FROM label_sets WHERE seq > $1::bigint ORDER BY seq`,

  // -------------------------------------------------------------------------------- workflows
  /** $1 id, $2 name, $3 trigger, $4 definition (JSON), $5 source, $6 hash, $7 created, $8 updated, $9 latest run. A row when created. */
  createWorkflow: `INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run,
      schedules, next_fire_at_ms)
    VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::int, $10, $11::bigint)
    ON CONFLICT (id) DO NOTHING RETURNING id`,
  /**
   * $10 schedules (JSON or null), $11 next fire time. Same parameters as createWorkflow. No row: unchanged. `created` tells an insert from an update:
   * a row version made by ON CONFLICT DO UPDATE carries the updater's xid in xmax, a fresh insert 0.
   */
  saveWorkflow: `INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run,
      schedules, next_fire_at_ms)
    VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::int, $10, $11::bigint)
    ON CONFLICT (id) DO UPDATE SET name = excluded.name, trigger = excluded.trigger, definition = excluded.definition,
      hash = excluded.hash, source = excluded.source, updated_at_ms = excluded.updated_at_ms,
      -- Kept while the schedules stay the same, so a pending catch-up survives an edit of the jobs.
      next_fire_at_ms = CASE WHEN workflows.schedules IS NOT DISTINCT FROM excluded.schedules
        THEN workflows.next_fire_at_ms ELSE excluded.next_fire_at_ms END,
      schedules = excluded.schedules
    WHERE workflows.hash <> excluded.hash OR workflows.source <> excluded.source
    RETURNING (xmax = 0) AS created`,

  // ------------------------------------------------------------------------------------- runs
  /** $1 workflow id, $2 next fire time (or null). */
  setNextFire: `UPDATE workflows SET next_fire_at_ms = $2::bigint WHERE id = $1`,
  /** Locks the workflow row: concurrent starts of one workflow queue here. $1 workflow id. */
  lockWorkflow: `SELECT 1 FROM workflows WHERE id = $1 FOR UPDATE`,
  /**
   * The workflow's hash and latest run, read by a statement after lockWorkflow: its snapshot then
   * includes the run a start we waited for has just committed (a join in the locking statement would
   * still see the run as it was before). $1 workflow id.
   */
  latestRunOf: `SELECT w.hash, w.latest_run, r.status AS latest_status, w.next_fire_at_ms, w.definition
    FROM workflows w LEFT JOIN runs r ON r.workflow_id = w.id AND r.run_number = w.latest_run
    WHERE w.id = $1`,
  /**
   * Inserts the run with its jobs (row_id follows the given order) and makes it the latest; answers the
   * run and which of the given label keys are not recorded yet.
   * $1 workflow id, $2 run number, $3 now, $4 jobs (JSON array of jobRow objects), $5 label keys
   * (JSON array), $6 inputs (JSON text or NULL), $7 the run a re-run was made from (or NULL), $8 status
   * (`running`, or `queued` with no jobs and $9 its planned jobs as JSON text; NULL otherwise). A run
   * over at the start is settled after COMMIT (startRun).
   */
  insertRun: `WITH run AS (
      INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms, inputs, rerun_of, plan)
      VALUES ($1, $2::int, $8, $3::bigint, NULL, $6, $7::int, $9) RETURNING *
    ), inserted AS (${insertJobs('', '$4')}
    ), latest AS (
      UPDATE workflows SET latest_run = $2::int WHERE id = $1
    )
    SELECT run.*, (SELECT COALESCE(json_agg(k.key), '[]') FROM json_array_elements_text($5::json) AS k(key)
        WHERE NOT EXISTS (SELECT 1 FROM label_sets s WHERE s.key = k.key)) AS missing_label_keys
    FROM run`,
  /**
   * A queued run starts with its planned jobs; no row unless it is still queued. The caller holds the
   * workflow row's lock. $1 workflow id, $2 run number, $3 jobs (as for insertRun).
   */
  startQueuedRun: `WITH run AS (
      UPDATE runs SET status = 'running', plan = NULL WHERE workflow_id = $1 AND run_number = $2::int AND status = 'queued'
      RETURNING *
    ), inserted AS (${insertJobs('run, ', '$3')}
    )
    SELECT run.* FROM run`,
  /** The workflow's running and queued runs, oldest first, through runs_running and runs_queued. $1 workflow id. */
  activeRuns: `SELECT * FROM runs WHERE workflow_id = $1 AND status = 'running'
    UNION ALL SELECT * FROM runs WHERE workflow_id = $1 AND status = 'queued'
    ORDER BY run_number`,
  /** Workflows with a queued run, through runs_queued. $1 limit. */
  queuedWorkflows: `SELECT DISTINCT workflow_id FROM runs WHERE status = 'queued' LIMIT $1::int`,
  /** A queued run cancelled before it started. $1 workflow id, $2 run number, $3 now. */
  cancelQueuedRun: `UPDATE runs SET status = 'cancelled', plan = NULL, finished_at_ms = $3::bigint
    WHERE workflow_id = $1 AND run_number = $2::int AND status = 'queued' RETURNING run_number`,
  /**
   * Held until commit by whoever adds label sets, so that seq values become visible in the order they
   * were taken: a reader that has seen seq N has seen every set below N (labelSetsSince relies on it).
   * Only a run bringing a new label set takes it. Reads are not blocked. No parameters.
   */
  lockLabelSets: `LOCK TABLE label_sets IN SHARE ROW EXCLUSIVE MODE`,
  /** $1 label sets (JSON array of {key, labels: JSON text}), in the order to number them. */
  insertLabelSets: `INSERT INTO label_sets (key, labels)
    SELECT s.key, s.labels FROM ROWS FROM (json_to_recordset($1::json) AS (key text, labels text))
      WITH ORDINALITY AS s(key, labels, ord)
    ORDER BY s.ord
    ON CONFLICT (key) DO NOTHING`,
  /** A cancel's target: the latest run and its state. $1 workflow id. */
  cancelTarget: `SELECT w.latest_run, r.status FROM workflows w
    LEFT JOIN runs r ON r.workflow_id = w.id AND r.run_number = w.latest_run
    WHERE w.id = $1`,
  /**
   * One round of a cancel's fence: locks the run's queued jobs (first, so that claims stop taking them
   * at once; SKIP LOCKED: one a claim holds right now is left to the next round), then the active
   * leases of its running jobs, leaving out what is already held; answers what it locked and how many
   * of each its snapshot showed. Repeated until a snapshot shows none: in that round's
   * snapshot the cancel held every job a claim could take and every lease that can move a job of the
   * run, so no other transaction can start or unblock one (see cancelRun).
   * $1 workflow id, $2 run number, $3 job row ids held (bigint[]), $4 lease ids held (text[]).
   */
  cancelFence: `WITH queued AS (
      SELECT row_id FROM jobs
      WHERE workflow_id = $1 AND run_number = $2::int AND status = 'queued' AND row_id <> ALL($3::bigint[])
      ORDER BY row_id FOR UPDATE SKIP LOCKED
    ), leased AS (
      SELECT l.lease_id FROM jobs j JOIN leases l ON l.lease_id = j.lease_id
      WHERE j.workflow_id = $1 AND j.run_number = $2::int AND j.status = 'running' AND l.state = 'active'
        AND l.lease_id <> ALL($4::text[]) AND (SELECT count(*) FROM queued) >= 0
      ORDER BY l.lease_id FOR UPDATE OF l
    )
    SELECT (SELECT COALESCE(json_agg(row_id), '[]') FROM queued) AS jobs,
      (SELECT COALESCE(json_agg(lease_id), '[]') FROM leased) AS leases,
      (SELECT count(*) FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND status = 'queued'
        AND row_id <> ALL($3::bigint[])) AS queued_seen,
      (SELECT count(*) FROM jobs j JOIN leases l ON l.lease_id = j.lease_id
        WHERE j.workflow_id = $1 AND j.run_number = $2::int AND j.status = 'running' AND l.state = 'active'
          AND l.lease_id <> ALL($4::text[])) AS leases_seen`,
  /** Then every unfinished job of the run, locked in row order. $1 workflow id, $2 run number. */
  cancelLockJobs: `SELECT * FROM jobs
    WHERE workflow_id = $1 AND run_number = $2::int AND status IN ('pending', 'queued', 'running')
    ORDER BY row_id FOR UPDATE`,
  /**
   * Last step, everything already locked: voids the leases and cancels the jobs (the run is settled
   * after COMMIT, see settleRunIfOver). $1 lease ids (text[]), $2 job row ids (bigint[]), $3 now.
   */
  cancelApply: `WITH voided AS (
      UPDATE leases SET state = 'cancelled' WHERE lease_id = ANY($1::text[]) AND state = 'active'
    )
    UPDATE jobs SET status = 'cancelled', finished_at_ms = $3::bigint, deadline_ms = NULL
    WHERE row_id = ANY($2::bigint[])`,
  /**
   * Whether a run still has a job that can move: three probes of jobs_run_status. Sent after the
   * transaction that finished a job has committed, so it sees every other transaction that committed
   * before it; of two that finish a run's last jobs at once, the later check sees both (docs/architecture.md
   * "Run settlement"). $1 workflow id, $2 run number.
   */
  runOpen: `SELECT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = $1 AND run_number = $2::int
      AND status IN ('pending', 'queued', 'running')) AS open`,
  /** As runOpen, for the run of a lease, sent right behind that lease's completion. $1 lease id. */
  runOpenOfLease: `SELECT l.workflow_id, l.run_number, EXISTS (SELECT 1 FROM jobs j
      WHERE j.workflow_id = l.workflow_id AND j.run_number = l.run_number AND j.status IN ('pending', 'queued', 'running')) AS open
    FROM leases l WHERE l.lease_id = $1`,
  /**
   * How a run that has no job left in motion ended, by its jobs: a job a cancel spared counts as
   * cancelled whatever it did afterwards. $1 workflow id, $2 run number.
   */
  runTally: `SELECT count(*) FILTER (WHERE status = 'failed')::int AS failed,
      count(*) FILTER (WHERE (status = 'cancelled' AND fast_cancelled = 0) OR run_cancelled = 1)::int AS cancelled
    FROM jobs WHERE workflow_id = $1 AND run_number = $2::int`,
  /**
   * Running runs with no job left in motion: what a crash between a job's last transaction and its
   * run's settlement leaves behind, for the reaper (runs_running keeps it to the running ones). $1 limit.
   */
  unsettledRuns: `SELECT r.workflow_id, r.run_number FROM runs r
    WHERE r.status = 'running' AND NOT EXISTS (SELECT 1 FROM jobs j
      WHERE j.workflow_id = r.workflow_id AND j.run_number = r.run_number AND j.status IN ('pending', 'queued', 'running'))
    LIMIT $1::int`,
  /** Records the end of a run that has no job left in motion. $1 workflow id, $2 run number, $3 state, $4 now. */
  settleRun: `UPDATE runs SET status = $3, finished_at_ms = $4::bigint
    WHERE workflow_id = $1 AND run_number = $2::int AND status = 'running'`,

  // ------------------------------------------------------------------------------------ claim
  claimCandidates: CLAIM_CANDIDATES,
  /**
   * The whole claim in one statement: the oldest `max` of the locked candidates become running under a
   * fresh lease each, and the worker is recorded (its row last: the unreferenced CTE runs after the rest).
   * $1..$3 as claimCandidates ($3 = max), $4 lease ids (text[], the i-th claimed job takes the i-th),
   * $5 worker id, $6 worker labels (JSON), $7 ttl secs, $8 lease expiry, $9 the claim's token name (or NULL).
   */
  claim: `WITH cand AS MATERIALIZED (${CLAIM_CANDIDATES}
    ), pick AS (
      SELECT row_id, row_number() OVER (ORDER BY ready_at_ms, row_id) AS n FROM cand
      ORDER BY ready_at_ms, row_id LIMIT $3::int
    ), taken AS (
      UPDATE jobs j SET status = 'running', started_at_ms = $2::bigint, finished_at_ms = NULL,
        deadline_ms = CASE WHEN j.timeout_secs IS NULL THEN NULL ELSE $2::bigint + j.timeout_secs::bigint * 1000 END,
        worker_id = $5, lease_id = ($4::text[])[p.n]
      FROM pick p WHERE j.row_id = p.row_id
      RETURNING j.*, p.n
    ), granted AS (
      INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
        granted_at_ms, renewed_at_ms, expires_at_ms, state, token_name)
      SELECT t.lease_id, t.row_id, t.workflow_id, t.run_number, t.job_id, t.attempt, $5, $7::int,
        $2::bigint, $2::bigint, $8::bigint, 'active', $9::text
      FROM taken t
    ), seen AS (
      INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES ($5, $6, $2::bigint, $2::bigint)
      ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms
    )
    SELECT * FROM taken ORDER BY n`,

  /**
   * A fan-out's instances (README "Matrix, fan-out and artifacts"), inserted in the transaction that
   * made it ready. $1 workflow id, $2 run number, $3 jobs (JSON array of jobRow objects).
   */
  insertInstances: `${insertJobs('', '$3')} RETURNING *`,
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

  // ------------------------------------------------------------------------------- lease calls
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
   * Completes the job of a live lease in one statement, which runs as its own transaction, so no lock
   * is held across a round trip: lease completed, job success, each pending direct dependent's
   * pending_needs decremented (rows locked in row order first) and those reaching 0 queued; the worker
   * is recorded as seen (its row last). The run row is not touched: every completion of a run would
   * queue on it. The run is settled after COMMIT instead (runOpenOfLease, settleRunIfOver). No row:
   * the guard failed (leases.ts then looks closer).
   *
   * Upstream outputs travel with the decrement: a dependent's row is locked and re-read at its newest
   * version, so each need adds its own outputs there as it completes (whatever the statements'
   * snapshots; kept as JSON text, so their keys keep their order), and the need that queues the
   * dependent assembles them in `needs` order; a need found in none
   * (completed before upstream outputs travelled this way) is read from its row, long committed.
   *
   * Only for a job whose end cannot skip anything below it (no conditional dependent, no failure
   * above it): otherwise the guard fails and leases.ts takes the general way (succeedJob).
   * $1 lease id, $2 outputs (JSON), $3 now, $4 the call's token name (or NULL).
   */
  completeJob: `WITH lease AS (
      UPDATE leases l SET state = 'completed'
      FROM jobs j
      WHERE l.lease_id = $1 AND l.state = 'active' AND $3::bigint <= l.expires_at_ms AND ${usableBy('l', '$4')}
        AND j.row_id = l.job_row_id AND j.status = 'running' AND j.lease_id = l.lease_id
        AND (j.deadline_ms IS NULL OR $3::bigint <= j.deadline_ms)
        AND j.conditional_dependents = 0 AND j.failed_upstream = 0
      RETURNING l.job_row_id
    ), done AS (
      UPDATE jobs j SET status = 'success', outputs = $2::text, finished_at_ms = $3::bigint, deadline_ms = NULL, error = NULL
      FROM lease WHERE j.row_id = lease.job_row_id
      RETURNING j.*
    ), below AS (
      SELECT d.row_id FROM done
      CROSS JOIN LATERAL json_array_elements_text(done.dependents::json) AS e(job_id)
      JOIN jobs d ON d.workflow_id = done.workflow_id AND d.run_number = done.run_number AND d.job_id = e.job_id
      WHERE d.status = 'pending'
      ORDER BY d.row_id FOR UPDATE OF d
    ), unblocked AS (
      UPDATE jobs d SET pending_needs = d.pending_needs - 1,
        status = CASE WHEN d.pending_needs = 1 THEN 'queued' ELSE d.status END,
        enqueued_at_ms = CASE WHEN d.pending_needs = 1 THEN $3::bigint ELSE d.enqueued_at_ms END,
        ready_at_ms = CASE WHEN d.pending_needs = 1 THEN $3::bigint ELSE d.ready_at_ms END,
        delayed_until_ms = CASE WHEN d.pending_needs = 1 THEN 0 ELSE d.delayed_until_ms END,
        upstream_outputs = CASE WHEN d.pending_needs = 1 THEN (
            SELECT COALESCE(json_object_agg(n.job_id, COALESCE(
                CASE WHEN n.job_id = done.job_id THEN $2::text END,
                d.upstream_outputs::jsonb ->> n.job_id,
                (SELECT u.outputs FROM jobs u
                  WHERE u.workflow_id = d.workflow_id AND u.run_number = d.run_number AND u.job_id = n.job_id),
                '{}')::json ORDER BY n.ord), '{}'::json)::text
            FROM json_array_elements_text(d.needs::json) WITH ORDINALITY AS n(job_id, ord))
          ELSE (d.upstream_outputs::jsonb || jsonb_build_object(done.job_id, $2::text))::text END
      FROM below, done WHERE d.row_id = below.row_id
      RETURNING d.row_id, d.job_id, d.status
    ), seen AS (${touchWorkerOf('$1', '$3::bigint', '$4')})
    SELECT done.*,
      (SELECT COALESCE(json_agg(json_build_object('row_id', u.row_id, 'job_id', u.job_id)), '[]')
        FROM unblocked u WHERE u.status = 'queued') AS enqueued
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
  // ----------------------------------------------------------------------------------- reaper
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

  // ---------------------------------------------------------------------------------- workers
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
