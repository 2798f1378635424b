import { CALL_LABEL_KEY, CallGraphLoader, callsOf, type CallEdge } from '../../domain/calls.js';
import { endedJob } from '../../domain/conditions.js';
import { isTerminal } from '../../domain/model.js';
import { storableText } from '../../domain/text.js';
import type {
  CallChainRefusal,
  CallReads,
  SettleCallOutcome,
  SettleCallRequest,
  StartChildRunOutcome,
  StartChildRunRequest,
  StartedRuns,
  WorkflowRecord,
} from '../store.js';
import { change } from '../changes.js';
import { toJob, toRun } from '../rows.js';
import { applyJobFailure, propagateEnd, settleRunIfOver, settleRunsOf } from './settle.js';
import { settleStarted, startOrQueue } from './runs.js';
import { QUERIES } from './queries.js';
import { statement, transaction, type Exec, type Sql } from './tx.js';

/**
 * Workflows calling workflows (README "Workflows calling workflows"), named as in the SQLite store's
 * calls.ts: the check and record of a definition's calls, the start of a called workflow's run for
 * its calling job, and that job's end. Locks, in the store's order: the calling job's row (and the
 * pending jobs below it, in row order), then the called workflow's row, then runs.
 */

/**
 * Refuses a definition whose calls close a cycle or nest too deep, given the calls saved; null: fine.
 * Takes the calls lock first (QUERIES.lockCalls) when the definition calls anything.
 */
export async function checkCalls(q: Exec, rec: WorkflowRecord): Promise<CallChainRefusal | null> {
  const callees = callsOf(rec.definition);
  if (callees.length === 0) return null;
  await q(QUERIES.lockCalls);
  const graph = new CallGraphLoader(rec.id, callees);
  for (let ask = graph.next(); ask; ask = graph.next()) {
    graph.add((await q(QUERIES.callEdges, [ask.from, ask.to])) as unknown as CallEdge[], ask);
  }
  const problem = graph.problem();
  return problem ? { kind: 'call_chain', problem } : null;
}

/** The workflow's calls as its saved definition makes them (none: its rows go). */
export async function saveCalls(q: Exec, rec: WorkflowRecord): Promise<void> {
  await q(QUERIES.deleteCallEdges, [rec.id]);
  const callees = callsOf(rec.definition);
  if (callees.length > 0) await q(QUERIES.insertCallEdges, [rec.id, callees]);
}

/** See Store.startChildRun. */
export async function startChildRun(sql: Sql, req: StartChildRunRequest): Promise<StartChildRunOutcome> {
  const { parent } = req;
  const { outcome, drained } = await transaction(sql, async (q): Promise<{ outcome: StartChildRunOutcome; drained: StartedRuns }> => {
    const drained: StartedRuns = { started: [], changes: [] };
    const [row] = await q(QUERIES.lockCallingJob, [parent.workflow_id, parent.run_number, parent.job_id]);
    const job = row ? toJob(row) : null;
    if (!job || !job.call || job.status !== 'queued' || job.attempt !== parent.attempt) return { outcome: { kind: 'moved' }, drained };
    // As insertRun (runs.ts): the read after the workflow row's lock sees the run a start we waited for made.
    const [, [wf]] = await Promise.all([
      q(QUERIES.lockWorkflow, [req.workflow_id]),
      q(QUERIES.latestRunOf, [req.workflow_id]),
      q(QUERIES.dropStaleLogChunks, [req.workflow_id]),
    ]);
    if (!wf) return { outcome: { kind: 'not_found' }, drained };
    if (wf.hash !== req.expected_hash) return { outcome: { kind: 'stale' }, drained };
    const started = await startOrQueue(q, req, wf, drained);
    // A child run is started without a delivery key, so no start of one answers `duplicate`.
    if (started.kind === 'duplicate') throw new Error(`child run of ${req.workflow_id} answered as a delivery seen before`);
    if (started.kind !== 'started' && started.kind !== 'queued') return { outcome: started, drained };
    const [runRow] = await q(QUERIES.setRunParent, [started.run.workflow_id, started.run.run_number, parent.workflow_id, parent.run_number, parent.job_id]);
    const [moved] = await q(QUERIES.beginCall, [job.row_id, parent.attempt, started.run.run_number, req.now_ms]);
    const calling = toJob(moved!);
    if (started.kind === 'queued') return { outcome: { ...started, run: toRun(runRow!), parent: calling }, drained };
    return { outcome: { kind: 'started', run: toRun(runRow!), changes: [...drained.changes, ...started.changes, change(calling)], parent: calling }, drained };
  });
  await settleStarted(sql, drained.started, req.now_ms);
  // Conditions may have skipped every job at the start (src/engine/run-plan.ts): the run is over.
  if (outcome.kind === 'started' && req.jobs.every((j) => isTerminal(j.status))) {
    await settleRunIfOver(sql, req.workflow_id, outcome.run.run_number, req.now_ms);
    const [row] = await statement(sql, QUERIES.getRun, [req.workflow_id, outcome.run.run_number]);
    return { ...outcome, run: toRun(row!) };
  }
  return outcome;
}

/** See Store.settleCall. The run is settled after COMMIT, as after every end of a job. */
export async function settleCall(sql: Sql, req: SettleCallRequest): Promise<SettleCallOutcome> {
  const outcome = await transaction(sql, async (q): Promise<SettleCallOutcome> => {
    const [seen] = await q(QUERIES.getJob, [req.workflow_id, req.run_number, req.job_id]);
    if (!seen || seen.call_spec === null || seen.call_spec === undefined) return { kind: 'moved' };
    const first = toJob(seen);
    const locked = await q(QUERIES.lockCallAndBelow, [req.workflow_id, req.run_number, first.dependents, first.row_id]);
    const mine = locked.find((r) => Number(r.row_id) === first.row_id);
    const job = mine ? toJob(mine) : null;
    const expected =
      job !== null &&
      ('child_run' in req.expect
        ? job.status === 'running' && job.child_run === req.expect.child_run
        : job.status === 'queued' && job.attempt === req.expect.attempt);
    if (!job || !expected) return { kind: 'moved' };
    if (req.result.kind === 'failed') {
      const r = await applyJobFailure(q, job, null, 'failed', storableText(req.result.error), req.result.retryable, req.now_ms);
      return { kind: 'settled', job: r.job, changes: r.changes };
    }
    if (!('child_run' in req.expect)) throw new Error('a call that never started its child cannot succeed');
    const [row] = await q(QUERIES.succeedCall, [job.row_id, req.expect.child_run, req.now_ms, JSON.stringify(req.result.outputs)]);
    const done = toJob(row!);
    const below = locked.filter((r) => Number(r.row_id) !== job.row_id);
    const changed = await propagateEnd(q, [endedJob(done)], below, req.now_ms);
    return { kind: 'settled', job: done, changes: [change(done), ...changed.map(change)] };
  });
  return settleRunsOf(sql, req.now_ms, outcome);
}

export function callReads(q: Exec): CallReads {
  return {
    queuedCalls: async (nowMs, limit) => (await q(QUERIES.queuedCalls, [CALL_LABEL_KEY, nowMs, limit])).map(toJob),
    orphanedChildRuns: async (limit) => (await q(QUERIES.orphanedChildRuns, [limit])).map(toRun),
    callingWorkflows: async (limit) => (await q(QUERIES.callingWorkflows, [limit])).map((r) => r.caller_id as string),
  };
}
