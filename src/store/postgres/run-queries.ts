/**
 * Workflows and runs (workflows.ts, runs.ts): saving definitions, starting, queueing and cancelling
 * runs, label sets, and settling a run once none of its jobs can move. Part of QUERIES (queries.ts,
 * which states the rules every statement follows); parameters are listed above each statement.
 */

/**
 * The jobs of a run from a JSON array of jobRow objects, in the given order (row_id follows it); `from`
 * is what the array is read from, `param` its placeholder. Read as jsonb: each `->>` of a json value
 * parses the whole object again, 52 columns a job, which made the start of a 10,000-job run take
 * seconds inside PostgreSQL (docs/performance.md "Large runs"); jsonb parses each object once.
 */
export const insertJobs = (from: string, param: string) => `
      INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
        pending_needs, max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms,
        started_at_ms, finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id,
        condition, needs_results, failed_upstream, run_cancelled, conditional_dependents,
        group_id, matrix, max_parallel, fail_fast, for_each, item, item_index, artifact_spec, priority,
        approval, approval_requested_at_ms, approval_deadline_ms, approval_decision, approval_decided_by,
        approval_decided_at_ms, approval_comment, concurrency_group, cancel_in_progress, call_spec, child_run)
      SELECT $1, $2::int, e.j->>'job_id', e.j->>'name', e.j->>'command', e.j->>'env', e.j->>'labels', e.j->>'label_key',
        e.j->>'needs', e.j->>'dependents', (e.j->>'pending_needs')::int, (e.j->>'max_retries')::int, e.j->>'backoff',
        (e.j->>'timeout_secs')::int, e.j->>'status', (e.j->>'attempt')::int, (e.j->>'enqueued_at_ms')::bigint,
        (e.j->>'delayed_until_ms')::bigint, (e.j->>'ready_at_ms')::bigint, (e.j->>'started_at_ms')::bigint,
        (e.j->>'finished_at_ms')::bigint, (e.j->>'deadline_ms')::bigint, e.j->>'error', e.j->>'outputs',
        e.j->>'upstream_outputs', e.j->>'worker_id', e.j->>'lease_id',
        e.j->>'condition', e.j->>'needs_results', (e.j->>'failed_upstream')::smallint, (e.j->>'run_cancelled')::smallint,
        (e.j->>'conditional_dependents')::smallint,
        e.j->>'group_id', e.j->>'matrix', (e.j->>'max_parallel')::int, coalesce((e.j->>'fail_fast')::smallint, 0),
        e.j->>'for_each', e.j->>'item', (e.j->>'item_index')::int, e.j->>'artifact_spec',
        coalesce((e.j->>'priority')::smallint, 0),
        e.j->>'approval', (e.j->>'approval_requested_at_ms')::bigint, (e.j->>'approval_deadline_ms')::bigint,
        e.j->>'approval_decision', e.j->>'approval_decided_by', (e.j->>'approval_decided_at_ms')::bigint, e.j->>'approval_comment',
        e.j->>'concurrency_group', coalesce((e.j->>'cancel_in_progress')::smallint, 0),
        e.j->>'call_spec', (e.j->>'child_run')::int
      FROM ${from}jsonb_array_elements(${param}::jsonb) WITH ORDINALITY AS e(j, ord)
      ORDER BY e.ord`;

import { keepTriggers } from './trigger-queries.js';

export const RUN_QUERIES = {
  /**
   * $1 id, $2 name, $3 trigger, $4 definition (JSON), $5 source, $6 hash, $7 created, $8 updated, $9 latest run, $12 its
   * listener rows (JSON array of {kind, key}; see keepTriggers). A row when created.
   */
  createWorkflow: `WITH saved AS (
      INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run,
        schedules, next_fire_at_ms)
      VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::int, $10, $11::bigint)
      ON CONFLICT (id) DO NOTHING RETURNING id
    ), ${keepTriggers('saved', '$12')}
    SELECT id FROM saved`,
  /**
   * $10 schedules (JSON or null), $11 next fire time, $12 listener rows. Same parameters as createWorkflow. No row: unchanged. `created` tells an insert from an update:
   * a row version made by ON CONFLICT DO UPDATE carries the updater's xid in xmax, a fresh insert 0.
   */
  saveWorkflow: `WITH saved AS (
      INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run,
        schedules, next_fire_at_ms)
      VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::int, $10, $11::bigint)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, trigger = excluded.trigger, definition = excluded.definition,
        hash = excluded.hash, source = excluded.source, updated_at_ms = excluded.updated_at_ms,
        -- Kept while the schedules stay the same, so a pending catch-up survives an edit of the jobs.
        next_fire_at_ms = CASE WHEN workflows.schedules IS NOT DISTINCT FROM excluded.schedules
          THEN workflows.next_fire_at_ms ELSE excluded.next_fire_at_ms END,
        schedules = excluded.schedules
      WHERE workflows.hash <> excluded.hash OR workflows.source <> excluded.source
      RETURNING id, (xmax = 0) AS created
    ), ${keepTriggers('saved', '$12')}
    SELECT created FROM saved`,
  /** $1 workflow id, $2 next fire time (or null). */
  setNextFire: `UPDATE workflows SET next_fire_at_ms = $2::bigint WHERE id = $1`,
  /** Due schedules, an ordered range read of workflows_next_fire. $1 now, $2 limit. */
  dueSchedules: `SELECT * FROM workflows WHERE next_fire_at_ms IS NOT NULL AND next_fire_at_ms <= $1::bigint
    ORDER BY next_fire_at_ms LIMIT $2::int`,
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
   * (`running`, or `queued` with no jobs and $9 its planned jobs as JSON text; NULL otherwise), $10 its
   * concurrency group (or NULL), $11 what started it (or NULL), $12 the definition's hash, whose
   * definition is kept in run_definitions once per hash, $13 the name of its event (or NULL). A run over
   * at the start is settled after COMMIT (startRun).
   */
  insertRun: `WITH run AS (
      INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms, inputs, rerun_of, plan, concurrency_group,
        trigger, definition_hash, event_name)
      VALUES ($1, $2::int, $8, $3::bigint, NULL, $6, $7::int, $9, $10, $11, $12, $13) RETURNING *
    ), kept AS (
      INSERT INTO run_definitions (workflow_id, hash, definition, created_at_ms)
      SELECT id, hash, definition, $3::bigint FROM workflows WHERE id = $1
      ON CONFLICT (workflow_id, hash) DO NOTHING
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
  /**
   * A concurrency group's lock (README "Concurrency groups"), held to COMMIT: every start and queued
   * start in the group reads its runs after taking it, so of two racing starts the second sees the
   * first's run. Taken after the workflow row's lock; a start of several queued runs in different
   * groups takes several, so two such may deadlock, which PostgreSQL ends and `transaction` runs again. $1 group
   */
  lockRunGroup: `SELECT pg_advisory_xact_lock(hashtext('weft.run-group'), hashtext($1))`,
  /** A concurrency group's running and queued runs, of every workflow, oldest first, through runs_group. $1 group */
  groupRuns: `SELECT workflow_id, run_number, status FROM runs WHERE concurrency_group = $1 AND status IN ('running', 'queued')
    ORDER BY created_at_ms, workflow_id, run_number`,
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
    WHERE workflow_id = $1 AND run_number = $2::int AND status IN ('pending', 'awaiting_approval', 'queued', 'running')
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
   * Whether a run still has a job that can move: four probes of jobs_run_status (a job awaiting
   * approval can still move: README "Approvals"). Sent after the
   * transaction that finished a job has committed, so it sees every other transaction that committed
   * before it; of two that finish a run's last jobs at once, the later check sees both (docs/architecture.md
   * "Run settlement"). $1 workflow id, $2 run number.
   */
  runOpen: `SELECT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = $1 AND run_number = $2::int
      AND status IN ('pending', 'awaiting_approval', 'queued', 'running')) AS open`,
  /**
   * As runOpen, for the runs of leases, sent right behind those leases' completion (completeJob): one
   * row per run. $1 lease ids, as a JSON array in text.
   *
   * The ids come as JSON, not text[], so that the statement keeps one plan on its connection: the
   * planner sizes `unnest` or `= ANY` by the array bound at each run, which made every custom plan
   * cheaper than the generic one, and the statement was planned anew at every complete (about 0.2 ms
   * each, four to five times its run; docs/performance.md "Seventh round").
   * jsonb_array_elements_text is sized the same either way, so the generic plan is kept; the lease
   * is read under LIMIT 1 (its key) in a LATERAL subquery, so that plan probes leases_pkey per id
   * however few leases the table held when it was made.
   */
  runsOpenOfLeases: `SELECT r.workflow_id, r.run_number, EXISTS (SELECT 1 FROM jobs j
      WHERE j.workflow_id = r.workflow_id AND j.run_number = r.run_number AND j.status IN ('pending', 'awaiting_approval', 'queued', 'running')) AS open
    FROM (SELECT DISTINCT l.workflow_id, l.run_number FROM jsonb_array_elements_text($1::text::jsonb) AS c(lease_id)
      CROSS JOIN LATERAL (SELECT l.workflow_id, l.run_number FROM leases l WHERE l.lease_id = c.lease_id LIMIT 1) l) r`,
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
      WHERE j.workflow_id = r.workflow_id AND j.run_number = r.run_number AND j.status IN ('pending', 'awaiting_approval', 'queued', 'running'))
    LIMIT $1::int`,
  /** Records the end of a run that has no job left in motion. $1 workflow id, $2 run number, $3 state, $4 now. */
  settleRun: `UPDATE runs SET status = $3, finished_at_ms = $4::bigint
    WHERE workflow_id = $1 AND run_number = $2::int AND status = 'running'`,
} as const;
