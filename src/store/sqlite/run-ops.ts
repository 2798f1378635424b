import { planCancel } from '../../domain/conditions.js';
import { runStateFromCounts } from '../../domain/run-state.js';
import type {
  CancelRunOutcome,
  FireScheduleOutcome,
  FireScheduleRequest,
  JobChange,
  RunRecord,
  StartRunOutcome,
  StartRunRequest,
  WorkflowRecord,
} from '../store.js';
import { isTerminal } from '../../domain/types.js';
import { inputsColumn, jobRow, schedulesColumn, toJob, toRun, toWorkflow, type Row } from '../rows.js';
import type { Conn } from './conn.js';
import { change, decisionParams, finishJobs, propagateEnd } from './settle.js';

/** Workflows and runs as synchronous operations (see operations.ts). */

function workflowRow(rec: WorkflowRecord): Row {
  return { ...rec, definition: JSON.stringify(rec.definition), schedules: schedulesColumn(rec.definition), next_fire_at_ms: rec.next_fire_at_ms ?? null };
}

export function createWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'exists' {
  return c.q('insertWorkflow').run(workflowRow(rec)).changes === 1 ? 'created' : 'exists';
}

/** Creates, or replaces the definition in place (run history and latest_run stay) when it changed. */
export function saveWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'updated' | 'unchanged' {
  const row = c.q('getWorkflow').get(rec.id) as Row | undefined;
  if (!row) {
    c.q('insertWorkflow').run(workflowRow(rec));
    return 'created';
  }
  const existing = toWorkflow(row);
  if (existing.hash === rec.hash && existing.source === rec.source) return 'unchanged';
  c.q('updateWorkflowDefinition').run({
    id: rec.id,
    name: rec.name,
    trigger: rec.trigger,
    definition: JSON.stringify(rec.definition),
    source: rec.source,
    hash: rec.hash,
    updated_at_ms: rec.updated_at_ms,
    schedules: schedulesColumn(rec.definition),
    next_fire_at_ms: rec.next_fire_at_ms ?? null,
  });
  return 'updated';
}

/**
 * Run latest_run + 1. The write transaction holds SQLite's single write lock from its first statement
 * (BEGIN IMMEDIATE), so reading latest_run and setting it cannot interleave with another start: the
 * numbers are unique and gapless.
 */
export function startRun(
  c: Conn,
  req: StartRunRequest,
): StartRunOutcome {
  const row = c.q('getWorkflow').get(req.workflow_id) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const wf = toWorkflow(row);
  if (wf.hash !== req.expected_hash) return { kind: 'stale' };
  if (wf.latest_run > 0) {
    const last = c.q('getRun').get(wf.id, wf.latest_run) as Row | undefined;
    if (last && last.status === 'running') return { kind: 'active', run_number: wf.latest_run };
  }
  const runNumber = wf.latest_run + 1;
  // A re-run's kept jobs start as `success`, and jobs a condition skipped at the start as `skipped`
  // (src/engine/run-plan.ts): both are finished already.
  const unfinished = req.jobs.filter((j) => !isTerminal(j.status)).length;
  const counts = { unfinished, failed: 0, cancelled: 0 };
  const run: RunRecord = {
    workflow_id: wf.id,
    run_number: runNumber,
    status: runStateFromCounts(counts),
    created_at_ms: req.now_ms,
    finished_at_ms: unfinished === 0 ? req.now_ms : null,
    inputs: { ...req.inputs },
    rerun_of: req.rerun_of ?? null,
  };
  c.q('insertRun').run({ ...run, inputs: inputsColumn(req.inputs ?? {}), unfinished_jobs: unfinished });
  const insertJob = c.q('insertJob');
  const changes: JobChange[] = [];
  for (const j of req.jobs) {
    insertJob.run(jobRow({ ...j, workflow_id: wf.id }, runNumber));
    changes.push({ workflow_id: wf.id, run_number: runNumber, job_id: j.job_id });
  }
  const insertLabelSet = c.q('insertLabelSet');
  for (const set of req.label_sets) insertLabelSet.run(set.key, JSON.stringify(set.labels));
  c.q('setLatestRun').run(runNumber, wf.id);
  return { kind: 'started', run, changes };
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
  if (started.kind !== 'started') throw new Error(`startRun answered ${started.kind} for a workflow just read`);
  return started;
}

/**
 * Cancels what is left of the latest run, voiding the leases of its running jobs; `always()` and
 * `cancelled()` jobs no cancel spared before are spared: marked, counted down for the needs this
 * cancel ended, and queued once none is left (docs/architecture.md "Conditions").
 */
export function cancelRun(c: Conn, workflowId: string, nowMs: number): CancelRunOutcome {
  const row = c.q('getWorkflow').get(workflowId) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const latest = row.latest_run as number;
  if (latest === 0) return { kind: 'idle' };
  const runRow = c.q('getRun').get(workflowId, latest) as Row | undefined;
  if (!runRow || toRun(runRow).status !== 'running') return { kind: 'idle' };
  const run = { workflow_id: workflowId, run_number: latest };
  const plan = planCancel((c.q('unfinishedRunJobs').all(workflowId, latest) as Row[]).map(toJob));
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
    c.q('settleRun').run('cancelled', nowMs, workflowId, latest);
  }
  const jobs = plan.cancelled.map((j) => j.job_id);
  return { kind: 'cancelled', run_number: latest, jobs, changes };
}
