import { planCancel } from '../../domain/conditions.js';
import { runStateFromCounts } from '../../domain/run-state.js';
import type {
  CancelRunOutcome,
  FireScheduleOutcome,
  FireScheduleRequest,
  JobChange,
  NewJob,
  RunRecord,
  StartedRuns,
  StartRunOutcome,
  StartRunRequest,
  WorkflowRecord,
} from '../store.js';
import { DEFAULT_CONCURRENCY, isTerminal } from '../../domain/model.js';
import { groupDecision, groupIsFree, groupOutcome, type GroupRun } from '../../domain/run-groups.js';
import { plannedJobsAt } from '../rows.js';
import { inputsColumn, jobRow, toJob, toRun, toWorkflow, type Row } from '../rows.js';
import { change } from '../changes.js';
import { keptJobIds } from '../artifact-types.js';
import { copyKeptArtifacts } from './artifacts.js';
import type { Conn } from './connection.js';
import { decisionParams, finishJobs, propagateEnd } from './settle.js';
import { deliveredRun, recordRunStart } from './triggers.js';

/** Runs as synchronous writes (see writes.ts): starting, queueing, firing schedules, cancelling. */

/**
 * Run latest_run + 1. The write transaction holds SQLite's single write lock from its first statement
 * (BEGIN IMMEDIATE), so reading latest_run and setting it cannot interleave with another start: the
 * numbers are unique and gapless. So does counting the running runs against `concurrency.max_runs`
 * (docs/architecture.md "Concurrent runs") and reading the run's concurrency group, of every workflow
 * (README "Concurrency groups"): queued runs that a free slot is waiting for start first, then the new
 * run starts, queues (the workflow's slots are taken and it says `queue`, or its group has a running
 * run: it replaces the group's waiting run), or is refused.
 */
export function startRun(
  c: Conn,
  req: StartRunRequest,
): StartRunOutcome {
  const row = c.q('getWorkflow').get(req.workflow_id) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const wf = toWorkflow(row);
  // A delivery seen before starts nothing, whatever the definition became since (README "Triggers and notifications").
  const seen = req.delivery_key ? deliveredRun(c, wf.id, req.delivery_key) : null;
  if (seen) return { kind: 'duplicate', run: seen };
  if (wf.hash !== req.expected_hash) return { kind: 'stale' };
  const drained = startQueuedIn(c, wf, req.now_ms);
  const { max_runs, when_full } = wf.definition.concurrency ?? DEFAULT_CONCURRENCY;
  const active = (c.q('activeRuns').all(wf.id, wf.id) as Row[]).map(toRun);
  const running = active.filter((r) => r.status === 'running').length;
  const runNumber = wf.latest_run + 1;
  const group = req.group ? groupDecision(groupRuns(c, req.group.name), req.group.cancel_in_progress) : null;
  if (running >= max_runs && when_full === 'reject' && !group?.wait) {
    const numbers = active.map((r) => r.run_number);
    return { kind: 'active', run_number: numbers[numbers.length - 1]!, run_numbers: numbers };
  }
  // GitHub's rule: the newcomer replaces the group's waiting run, whether it waits itself or not.
  for (const r of group?.replaced ?? []) c.q('cancelQueuedRun').run(req.now_ms, r.workflow_id, r.run_number);
  const base = {
    workflow_id: wf.id,
    run_number: runNumber,
    created_at_ms: req.now_ms,
    inputs: { ...req.inputs },
    rerun_of: req.rerun_of ?? null,
    concurrency_group: req.group?.name ?? null,
    trigger: req.trigger ?? null,
    definition_hash: wf.hash,
    event_name: req.event?.name ?? null,
  };
  c.q('keepRunDefinition').run(req.now_ms, wf.id);
  if (running >= max_runs || group?.wait) {
    const run: RunRecord = { ...base, status: 'queued', finished_at_ms: null };
    c.q('insertRun').run({ ...run, inputs: inputsColumn(req.inputs ?? {}), unfinished_jobs: 0, plan: JSON.stringify(req.jobs) });
    recordRunStart(c, wf.id, runNumber, req);
    if (req.rerun_of != null) copyKeptArtifacts(c, wf.id, req.rerun_of, runNumber, keptJobIds(req.jobs));
    insertLabelSets(c, req);
    c.q('setLatestRun').run(runNumber, wf.id);
    return { kind: 'queued', run: { ...run, plan: [...req.jobs] }, ...(group ? groupOutcome(group) : {}) };
  }
  // A re-run's kept jobs start as `success`, and jobs a condition skipped at the start as `skipped`
  // (src/engine/run-plan.ts): both are finished already.
  const unfinished = req.jobs.filter((j) => !isTerminal(j.status)).length;
  const counts = { unfinished, failed: 0, cancelled: 0 };
  const run: RunRecord = { ...base, status: runStateFromCounts(counts), finished_at_ms: unfinished === 0 ? req.now_ms : null };
  c.q('insertRun').run({ ...run, inputs: inputsColumn(req.inputs ?? {}), unfinished_jobs: unfinished, plan: null });
  recordRunStart(c, wf.id, runNumber, req);
  if (req.rerun_of != null) copyKeptArtifacts(c, wf.id, req.rerun_of, runNumber, keptJobIds(req.jobs));
  const changes = [...drained.changes, ...insertJobs(c, wf.id, runNumber, req.jobs)];
  insertLabelSets(c, req);
  c.q('setLatestRun').run(runNumber, wf.id);
  return { kind: 'started', run, changes };
}

/** A concurrency group's running and queued runs, of every workflow (README "Concurrency groups"). */
function groupRuns(c: Conn, group: string): GroupRun[] {
  return c.q('groupRuns').all(group) as GroupRun[];
}

function insertJobs(c: Conn, workflowId: string, runNumber: number, jobs: readonly NewJob[]): JobChange[] {
  const insertJob = c.q('insertJob');
  const changes: JobChange[] = [];
  for (const j of jobs) {
    insertJob.run(jobRow({ ...j, workflow_id: workflowId }, runNumber));
    changes.push({ workflow_id: workflowId, run_number: runNumber, job_id: j.job_id });
  }
  return changes;
}

function insertLabelSets(c: Conn, req: StartRunRequest): void {
  const insertLabelSet = c.q('insertLabelSet');
  for (const set of req.label_sets) insertLabelSet.run(set.key, JSON.stringify(set.labels));
}

/** The workflow's queued runs, oldest first, while a slot is free; see Store.startQueuedRuns. */
export function startQueuedRuns(c: Conn, workflowId: string, nowMs: number): StartedRuns {
  const row = c.q('getWorkflow').get(workflowId) as Row | undefined;
  if (!row) return { started: [], changes: [] };
  return startQueuedIn(c, toWorkflow(row), nowMs);
}

function startQueuedIn(c: Conn, wf: WorkflowRecord, nowMs: number): StartedRuns {
  const out: StartedRuns = { started: [], changes: [] };
  const active = (c.q('activeRuns').all(wf.id, wf.id) as Row[]).map(toRun);
  const queued = active.filter((r) => r.status === 'queued');
  if (queued.length === 0) return out;
  const { max_runs } = wf.definition.concurrency ?? DEFAULT_CONCURRENCY;
  let running = active.length - queued.length;
  for (const run of queued) {
    if (running >= max_runs) break;
    // Its group's running run, of whichever workflow, goes first (README "Concurrency groups").
    if (run.concurrency_group !== null && !groupIsFree(groupRuns(c, run.concurrency_group))) continue;
    const jobs = plannedJobsAt(run.plan ?? [], nowMs);
    const unfinished = jobs.filter((j) => !isTerminal(j.status)).length;
    const status = runStateFromCounts({ unfinished, failed: 0, cancelled: 0 });
    const finished = unfinished === 0 ? nowMs : null;
    c.q('startQueuedRun').run(status, unfinished, finished, wf.id, run.run_number);
    out.changes.push(...insertJobs(c, wf.id, run.run_number, jobs));
    out.started.push({ ...run, status, finished_at_ms: finished, plan: undefined });
    if (status === 'running') running++;
  }
  return out;
}

/**
 * One due time of the workflow's schedules. Under the single writer nothing moves between the check of
 * next_fire_at_ms and its update, so of several schedulers calling with the same time one proceeds.
 */
export function fireSchedule(c: Conn, req: FireScheduleRequest): FireScheduleOutcome {
  const row = c.q('getWorkflow').get(req.workflow_id) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const wf = toWorkflow(row);
  if (wf.next_fire_at_ms !== req.fire_at_ms) return { kind: 'taken' };
  if (wf.hash !== req.expected_hash) return { kind: 'stale' };
  c.q('setNextFire').run(req.next_fire_at_ms, req.workflow_id);
  if (!req.start) return { kind: 'advanced' };
  const started = startRun(c, req);
  if (started.kind === 'active') return { kind: 'skipped', run_number: started.run_number };
  if (started.kind === 'queued') return started;
  if (started.kind !== 'started') throw new Error(`startRun answered ${started.kind} for a workflow just read`);
  return started;
}

/**
 * Cancels run `runNumber`, or every active run of the workflow: a queued run just ends `cancelled`;
 * of a running one what is left, voiding the leases of its running jobs; `always()` and
 * `cancelled()` jobs no cancel spared before are spared: marked, counted down for the needs this
 * cancel ended, and queued once none is left (docs/architecture.md "Conditions").
 */
export function cancelRun(c: Conn, workflowId: string, nowMs: number, runNumber?: number): CancelRunOutcome {
  const row = c.q('getWorkflow').get(workflowId) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const active = (c.q('activeRuns').all(workflowId, workflowId) as Row[])
    .map(toRun)
    .filter((r) => runNumber === undefined || r.run_number === runNumber);
  if (active.length === 0) return { kind: 'idle' };
  const jobs: string[] = [];
  const changes: JobChange[] = [];
  // Queued runs first, so that nothing this cancel ends can hand one of them a slot meanwhile.
  for (const run of active.filter((r) => r.status === 'queued')) c.q('cancelQueuedRun').run(nowMs, workflowId, run.run_number);
  for (const run of active.filter((r) => r.status === 'running')) {
    const done = cancelRunning(c, workflowId, run.run_number, nowMs);
    jobs.push(...done.jobs);
    changes.push(...done.changes);
  }
  const runs = active.map((r) => r.run_number);
  return { kind: 'cancelled', run_number: runs[runs.length - 1]!, runs, jobs, changes };
}

function cancelRunning(c: Conn, workflowId: string, runNumber: number, nowMs: number): { jobs: string[]; changes: JobChange[] } {
  const run = { workflow_id: workflowId, run_number: runNumber };
  const plan = planCancel((c.q('unfinishedRunJobs').all(workflowId, runNumber) as Row[]).map(toJob));
  for (const j of plan.cancelled) {
    if (j.status === 'running' && j.lease_id !== null) c.q('closeLease').run('cancelled', j.lease_id);
    c.q('cancelJob').run(nowMs, j.row_id);
  }
  const changes: JobChange[] = plan.cancelled.map(change);
  // Marked run_cancelled first; those the cancelled jobs unblock are written again by propagateEnd.
  for (const j of plan.spared) c.q('applyDecision').run(decisionParams(j, nowMs));
  const pendingSpared = new Map(plan.spared.filter((j) => j.status === 'pending').map((j) => [j.job_id, j]));
  propagateEnd(c, run, plan.ended, nowMs, changes, pendingSpared);
  // Spared jobs count as the cancel's too: the run ends `cancelled` whatever they do.
  const reached = plan.cancelled.length + plan.spared.length;
  finishJobs(c, run, { finished: plan.cancelled.length, failed: 0, cancelled: reached }, nowMs);
  if (plan.spared.length === 0) {
    // A cancel is the user's last word on the run, even if its counters disagreed (no-op once settled).
    c.q('settleRun').run('cancelled', nowMs, workflowId, runNumber);
  }
  return { jobs: plan.cancelled.map((j) => j.job_id), changes };
}
