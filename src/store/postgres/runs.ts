import { planCancel, propagate } from '../../domain/conditions.js';
import { DEFAULT_CONCURRENCY, isTerminal, type Concurrency, type WorkflowDefinition } from '../../domain/model.js';
import { groupDecision, groupIsFree, groupOutcome, type GroupRun } from '../../domain/run-groups.js';
import type {
  CancelRunOutcome,
  FireScheduleOutcome,
  FireScheduleRequest,
  JobChange,
  JobRecord,
  RunRecord,
  StartRunOutcome,
  StartedRuns,
  StartRunRequest,
} from '../store.js';
import { keptJobIds } from '../artifact-types.js';
import { copyKeptArtifacts } from './artifacts.js';
import { inputsColumn, jobRow, plannedJobsAt, toJob, toRun, type Row } from '../rows.js';
import { fanOutReady, settleRunIfOver, writeDecisions } from './settle.js';
import { QUERIES } from './queries.js';
import { deliveredRun, recordRunStart } from './triggers.js';
import { StartOver, statement, transaction, writeStatement, type Exec, type Sql } from './tx.js';

/** Runs: starting, queueing, firing schedules, cancelling. */

export async function startRun(
  sql: Sql,
  req: StartRunRequest,
): Promise<StartRunOutcome> {
  const { outcome, drained } = await insertRun(sql, req);
  await settleStarted(sql, drained.started, req.now_ms);
  // Conditions may have skipped every job at the start (src/engine/run-plan.ts): the run is over.
  if (outcome.kind === 'started') {
    const changes = [...drained.changes, ...outcome.changes];
    if (req.jobs.every((j) => isTerminal(j.status))) {
      await settleRunIfOver(sql, req.workflow_id, outcome.run.run_number, req.now_ms);
      const [row] = await statement(sql, QUERIES.getRun, [req.workflow_id, outcome.run.run_number]);
      return { ...outcome, run: toRun(row!), changes };
    }
    return { ...outcome, changes };
  }
  return outcome;
}

async function insertRun(sql: Sql, req: StartRunRequest): Promise<{ outcome: StartRunOutcome; drained: StartedRuns }> {
  return transaction(sql, async (q) => {
    // Sent together: the read runs once the lock is held (gapless run numbers, see latestRunOf), and so
    // does the clean-up of chunks left by a deleted run of the same number (see dropStaleLogChunks).
    const [, [wf], , seen] = await Promise.all([
      q(QUERIES.lockWorkflow, [req.workflow_id]),
      q(QUERIES.latestRunOf, [req.workflow_id]),
      q(QUERIES.dropStaleLogChunks, [req.workflow_id]),
      // A delivery seen before starts nothing (README "Triggers and notifications"); read under the lock too.
      req.delivery_key ? deliveredRun(q, req.workflow_id, req.delivery_key) : null,
    ]);
    const drained: StartedRuns = { started: [], changes: [] };
    if (!wf) return { outcome: { kind: 'not_found' }, drained };
    if (seen) return { outcome: { kind: 'duplicate', run: seen }, drained };
    if (wf.hash !== req.expected_hash) return { outcome: { kind: 'stale' }, drained };
    return { outcome: await startOrQueue(q, req, wf, drained), drained };
  });
}

/**
 * Under the workflow row's lock (docs/architecture.md "Concurrent runs"): queued runs a free slot waits
 * for start first (into `drained`), then the new run starts, queues or is refused by `concurrency`.
 */
export async function startOrQueue(q: Exec, req: StartRunRequest, wf: Row, drained: StartedRuns): Promise<StartRunOutcome> {
  const concurrency = concurrencyOf(wf);
  Object.assign(drained, await startQueuedIn(q, req.workflow_id, concurrency.max_runs, req.now_ms));
  const active = (await q(QUERIES.activeRuns, [req.workflow_id])).map(toRun);
  const running = active.filter((r) => r.status === 'running').length;
  const group = req.group ? groupDecision(await lockedGroupRuns(q, req.group.name), req.group.cancel_in_progress) : null;
  if (running >= concurrency.max_runs && concurrency.when_full === 'reject' && !group?.wait) {
    const numbers = active.map((r) => r.run_number);
    return { kind: 'active', run_number: numbers[numbers.length - 1]!, run_numbers: numbers };
  }
  // GitHub's rule: the newcomer replaces the group's waiting run, whether it waits itself or not.
  for (const r of group?.replaced ?? []) await q(QUERIES.cancelQueuedRun, [r.workflow_id, r.run_number, req.now_ms]);
  if (running < concurrency.max_runs && !group?.wait) return insertNextRun(q, req, wf.latest_run as number, 'running');
  const queued = await insertNextRun(q, req, wf.latest_run as number, 'queued');
  if (!group || queued.kind !== 'queued') return queued;
  return { ...queued, ...groupOutcome(group) };
}

/** The group's running and queued runs, read once its lock is held (README "Concurrency groups"). */
async function lockedGroupRuns(q: Exec, group: string): Promise<GroupRun[]> {
  await q(QUERIES.lockRunGroup, [group]);
  return (await q(QUERIES.groupRuns, [group])) as unknown as GroupRun[];
}

function concurrencyOf(wf: Row): Concurrency {
  return (JSON.parse(wf.definition as string) as WorkflowDefinition).concurrency ?? DEFAULT_CONCURRENCY;
}

/** See Store.startQueuedRuns: one transaction under the workflow row's lock, as a start. */
export async function startQueuedRuns(sql: Sql, workflowId: string, nowMs: number): Promise<StartedRuns> {
  const out = await transaction(sql, async (q): Promise<StartedRuns> => {
    const [, [wf]] = await Promise.all([q(QUERIES.lockWorkflow, [workflowId]), q(QUERIES.latestRunOf, [workflowId])]);
    if (!wf) return { started: [], changes: [] };
    return startQueuedIn(q, workflowId, concurrencyOf(wf).max_runs, nowMs);
  });
  await settleStarted(sql, out.started, nowMs);
  return out;
}

/**
 * Queued runs, oldest first, while fewer than `maxRuns` run; the caller holds the workflow row's lock.
 * A run in a concurrency group starts only while none of the group's runs runs, read under the group's
 * lock (README "Concurrency groups").
 */
async function startQueuedIn(q: Exec, workflowId: string, maxRuns: number, nowMs: number): Promise<StartedRuns> {
  const out: StartedRuns = { started: [], changes: [] };
  const active = (await q(QUERIES.activeRuns, [workflowId])).map(toRun);
  let running = active.filter((r) => r.status === 'running').length;
  for (const run of active) {
    if (run.status !== 'queued') continue;
    if (running >= maxRuns) break;
    if (run.concurrency_group !== null && !groupIsFree(await lockedGroupRuns(q, run.concurrency_group))) continue;
    const jobs = plannedJobsAt(run.plan ?? [], nowMs);
    const [row] = await q(QUERIES.startQueuedRun, [workflowId, run.run_number, jobs.map((j) => jobRow(j, run.run_number))]);
    if (!row) continue;
    running++;
    out.started.push(toRun(row));
    out.changes.push(...jobs.map((j) => ({ workflow_id: workflowId, run_number: run.run_number, job_id: j.job_id })));
  }
  return out;
}

/** A started queued run whose jobs a condition all skipped at the start is over at once (after COMMIT, as every settlement). */
export async function settleStarted(sql: Sql, started: readonly RunRecord[], nowMs: number): Promise<void> {
  for (const run of started) await settleRunIfOver(sql, run.workflow_id, run.run_number, nowMs);
}

/**
 * One due time of the workflow's schedules, in one transaction with the run it starts. The workflow row
 * is locked first, as a run start does, and next_fire_at_ms is read after the lock: of several
 * schedulers calling with the same time, the first moves it on and the others then read the new value
 * and answer `taken` (docs/architecture.md "Schedules").
 */
export async function fireSchedule(sql: Sql, req: FireScheduleRequest): Promise<FireScheduleOutcome> {
  const drained: StartedRuns = { started: [], changes: [] };
  const outcome = await transaction(sql, async (q): Promise<FireScheduleOutcome> => {
    const [, [wf]] = await Promise.all([
      q(QUERIES.lockWorkflow, [req.workflow_id]),
      q(QUERIES.latestRunOf, [req.workflow_id]),
      q(QUERIES.dropStaleLogChunks, [req.workflow_id]),
    ]);
    if (!wf) return { kind: 'not_found' };
    if (wf.next_fire_at_ms !== req.fire_at_ms) return { kind: 'taken' };
    if (wf.hash !== req.expected_hash) return { kind: 'stale' };
    await q(QUERIES.setNextFire, [req.workflow_id, req.next_fire_at_ms]);
    if (!req.start) return { kind: 'advanced' };
    const started = await startOrQueue(q, req, wf, drained);
    if (started.kind === 'active') return { kind: 'skipped', run_number: started.run_number };
    if (started.kind === 'started' || started.kind === 'queued') return started;
    throw new Error(`startRun answered ${started.kind} for a workflow just read`);
  });
  await settleStarted(sql, drained.started, req.now_ms);
  if (outcome.kind === 'started') return { ...outcome, changes: [...drained.changes, ...outcome.changes] };
  return outcome;
}

/** Inserts run latest + 1 (with its jobs, or queued with them as its plan) and label sets; the caller holds the workflow row's lock. */
async function insertNextRun(
  q: Exec,
  req: StartRunRequest,
  latestRun: number,
  status: 'running' | 'queued',
): Promise<StartRunOutcome & { kind: 'started' | 'queued' }> {
  const runNumber = latestRun + 1;
  const [row] = await q(QUERIES.insertRun, [
    req.workflow_id,
    runNumber,
    req.now_ms,
    status === 'running' ? req.jobs.map((j) => jobRow(j, runNumber)) : [],
    req.label_sets.map((s) => s.key),
    inputsColumn(req.inputs ?? {}),
    req.rerun_of ?? null,
    status,
    status === 'queued' ? JSON.stringify(req.jobs) : null,
    req.group?.name ?? null,
    req.trigger ?? null,
    req.expected_hash,
    req.event?.name ?? null,
  ]);
  await recordRunStart(q, runNumber, req);
  if (req.rerun_of != null) await copyKeptArtifacts(q, req.workflow_id, req.rerun_of, runNumber, keptJobIds(req.jobs));
  const missing = new Set(row!.missing_label_keys as string[]);
  if (missing.size > 0) {
    const sets = req.label_sets
      .filter((s) => missing.has(s.key))
      .map((s) => ({ key: s.key, labels: JSON.stringify(s.labels) }));
    // Both go out together; the table lock is held from here to COMMIT only (see lockLabelSets).
    await Promise.all([q(QUERIES.lockLabelSets), q(QUERIES.insertLabelSets, [sets])]);
  }
  if (status === 'queued') return { kind: 'queued', run: toRun(row!) };
  return {
    kind: 'started',
    run: toRun(row!),
    changes: req.jobs.map((j) => ({ workflow_id: req.workflow_id, run_number: runNumber, job_id: j.job_id })),
  };
}

/** A run has few jobs in motion; a fence needs about as many rounds as completions race it. */
const MAX_FENCE_ROUNDS = 64;

/**
 * Leases, then jobs, then the run, as everywhere, with one twist. While the cancel waits for a lease,
 * claims go on taking the run's queued jobs and completions go on queueing its pending ones, each under
 * a lease the cancel has not seen. So the cancel first fences the run (QUERIES.cancelFence): round
 * after round it locks the queued jobs, which stops claims on them, and the running jobs' leases, until
 * a round's snapshot shows nothing it does not hold. Holding queued jobs while waiting for a lease does
 * not deadlock: a lease holder never waits for a queued job (its own job runs, the dependents it
 * touches are pending), and a claim, the only other taker of queued jobs, waits for nothing the cancel
 * holds. After the fence nobody else can hold an unfinished job of the run, so locking them all in row
 * order waits for nothing.
 * One gap remains: a claim that commits between a round's snapshot and its lock of that job leaves
 * the cancel holding a job that now runs (PostgreSQL keeps a lock taken on a row that then fails the
 * re-check). If that job's worker reports on it before the cancel is done, the two wait for each other
 * until the deadlock detector ends one, which `transaction` then runs again.
 */
export async function cancelRun(sql: Sql, workflowId: string, nowMs: number, runNumber?: number): Promise<CancelRunOutcome> {
  const [target] = await statement(sql, QUERIES.cancelTarget, [workflowId]);
  if (!target) return { kind: 'not_found' };
  const active = (await statement(sql, QUERIES.activeRuns, [workflowId]))
    .map(toRun)
    .filter((r) => runNumber === undefined || r.run_number === runNumber);
  const runs: number[] = [];
  const jobs: string[] = [];
  const changes: JobChange[] = [];
  // Queued runs first, so that nothing this cancel ends can hand one of them a slot meanwhile. One that
  // started since it was read is cancelled as a running run.
  for (const run of active.filter((r) => r.status === 'queued')) {
    const [gone] = await writeStatement(sql, QUERIES.cancelQueuedRun, [workflowId, run.run_number, nowMs]);
    if (gone) runs.push(run.run_number);
    else run.status = 'running';
  }
  for (const run of active.filter((r) => r.status === 'running')) {
    const done = await cancelRunning(sql, workflowId, run.run_number, nowMs);
    if (done.kind !== 'cancelled') continue;
    runs.push(run.run_number);
    jobs.push(...done.jobs);
    changes.push(...done.changes);
  }
  if (runs.length === 0) return { kind: 'idle' };
  runs.sort((a, b) => a - b);
  return { kind: 'cancelled', run_number: runs[runs.length - 1]!, runs, jobs, changes };
}

async function cancelRunning(sql: Sql, workflowId: string, runNumber: number, nowMs: number): Promise<CancelRunOutcome> {
  const outcome = await transaction(sql, async (q): Promise<CancelRunOutcome> => {
    const [target] = await q(QUERIES.getRun, [workflowId, runNumber]);
    if (!target || target.status !== 'running') return { kind: 'idle' };
    const heldJobs: number[] = [];
    const heldLeases: string[] = [];
    for (let round = 1; ; round++) {
      if (round > MAX_FENCE_ROUNDS) throw new StartOver('the run kept moving while it was being cancelled');
      const [got] = await q(QUERIES.cancelFence, [workflowId, runNumber, heldJobs, heldLeases]);
      const leases = got!.leases as string[];
      const queued = got!.jobs as number[];
      if (got!.queued_seen === 0 && got!.leases_seen === 0) break;
      heldLeases.push(...leases);
      heldJobs.push(...queued);
    }
    const jobs = await q(QUERIES.cancelLockJobs, [workflowId, runNumber]);
    if (jobs.length === 0) return { kind: 'idle' };
    const held = new Set(heldLeases);
    // A job that calls a workflow runs with no lease (README "Workflows calling workflows"): its row lock is enough.
    if (jobs.some((j) => j.status === 'running' && j.lease_id !== null && !held.has(j.lease_id as string))) {
      throw new StartOver('a job of the run runs under a lease the fence did not take');
    }
    // always()/cancelled() jobs are spared (docs/architecture.md "Conditions"); every pending job of
    // the run is among the rows locked, so what the cancel decides for them needs nothing more.
    const records = jobs.map(toJob);
    const plan = planCancel(records);
    const voided = plan.cancelled.filter((j) => j.status === 'running' && j.lease_id !== null).map((j) => j.lease_id!);
    await q(QUERIES.cancelApply, [voided, plan.cancelled.map((j) => j.row_id), nowMs]);
    for (const j of plan.cancelled) j.status = 'cancelled';
    const byId = new Map(records.map((j) => [j.job_id, j]));
    const decided = propagate(plan.ended, (id) => byId.get(id)) as JobRecord[];
    await writeDecisions(q, [...new Set([...plan.spared, ...decided])].sort((a, b) => a.row_id - b.row_id), nowMs);
    decided.push(...(await fanOutReady(q, decided, byId, nowMs)));
    const ids = plan.cancelled.map((j) => j.job_id);
    return {
      kind: 'cancelled',
      run_number: runNumber,
      runs: [runNumber],
      jobs: ids,
      changes: [...plan.cancelled, ...decided].map((j) => ({ workflow_id: workflowId, run_number: runNumber, job_id: j.job_id })),
    };
  });
  if (outcome.kind === 'cancelled') await settleRunIfOver(sql, workflowId, outcome.run_number, nowMs);
  return outcome;
}
