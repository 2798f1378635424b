import { CALL_LABEL_KEY, CallGraphLoader, callsOf, type CallEdge } from '../../domain/calls.js';
import { endedJob } from '../../domain/conditions.js';
import { storableText } from '../../domain/text.js';
import type {
  CallChainRefusal,
  CallReads,
  JobChange,
  SettleCallOutcome,
  SettleCallRequest,
  StartChildRunOutcome,
  StartChildRunRequest,
  WorkflowRecord,
} from '../store.js';
import { change } from '../changes.js';
import { toJob, toRun, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { startRun } from './runs.js';
import { applyFailure, finishJobs, propagateEnd } from './settle.js';

/**
 * Workflows calling workflows (README "Workflows calling workflows"), named as in the PostgreSQL
 * store's calls.ts: the check and record of a definition's calls, the start of a called workflow's run
 * for its calling job, and that job's end. Synchronous, like every write (see writes.ts): under
 * SQLite's single writer, reading the calling job and moving it are one step.
 */

/** Refuses a definition whose calls close a cycle or nest too deep, given the calls saved; null: fine. */
export function checkCalls(c: Conn, rec: WorkflowRecord): CallChainRefusal | null {
  const callees = callsOf(rec.definition);
  if (callees.length === 0) return null;
  const graph = new CallGraphLoader(rec.id, callees);
  for (let ask = graph.next(); ask; ask = graph.next()) {
    graph.add(c.q('callEdges').all(JSON.stringify(ask.from), JSON.stringify(ask.to)) as CallEdge[], ask);
  }
  const problem = graph.problem();
  return problem ? { kind: 'call_chain', problem } : null;
}

/** The workflow's calls as its saved definition makes them (none: its rows go). */
export function saveCalls(c: Conn, rec: WorkflowRecord): void {
  c.q('deleteCallEdges').run(rec.id);
  for (const callee of callsOf(rec.definition)) c.q('insertCallEdge').run(rec.id, callee);
}

/** See Store.startChildRun: the calling job is read and moved under the same write lock as the start. */
export function startChildRun(c: Conn, req: StartChildRunRequest): StartChildRunOutcome {
  const { parent } = req;
  const row = c.q('getJob').get(parent.workflow_id, parent.run_number, parent.job_id) as Row | undefined;
  const job = row ? toJob(row) : null;
  if (!job || !job.call || job.status !== 'queued' || job.attempt !== parent.attempt) return { kind: 'moved' };
  const started = startRun(c, req);
  // A child run is started without a delivery key, so no start of one answers `duplicate`.
  if (started.kind === 'duplicate') throw new Error(`child run of ${req.workflow_id} answered as a delivery seen before`);
  if (started.kind !== 'started' && started.kind !== 'queued') return started;
  const run = started.run;
  c.q('setRunParent').run(parent.workflow_id, parent.run_number, parent.job_id, run.workflow_id, run.run_number);
  const moved = toJob(c.q('beginCall').get({ row_id: job.row_id, attempt: parent.attempt, child_run: run.run_number, now_ms: req.now_ms }) as Row);
  const withParent = { ...run, parent: { workflow_id: parent.workflow_id, run_number: parent.run_number, job_id: parent.job_id } };
  if (started.kind === 'queued') return { ...started, run: withParent, parent: moved };
  return { kind: 'started', run: withParent, changes: [...started.changes, change(moved)], parent: moved };
}

/** See Store.settleCall. */
export function settleCall(c: Conn, req: SettleCallRequest): SettleCallOutcome {
  const row = c.q('getJob').get(req.workflow_id, req.run_number, req.job_id) as Row | undefined;
  const job = row ? toJob(row) : null;
  if (!job || !job.call) return { kind: 'moved' };
  const expected = 'child_run' in req.expect
    ? job.status === 'running' && job.child_run === req.expect.child_run
    : job.status === 'queued' && job.attempt === req.expect.attempt;
  if (!expected) return { kind: 'moved' };
  const changes: JobChange[] = [];
  if (req.result.kind === 'failed') {
    const after = applyFailure(c, job, storableText(req.result.error), req.result.retryable, req.now_ms, changes);
    return { kind: 'settled', job: after, changes };
  }
  if (!('child_run' in req.expect)) throw new Error('a call that never started its child cannot succeed');
  const done = toJob(
    c.q('succeedCall').get({ row_id: job.row_id, child_run: req.expect.child_run, now_ms: req.now_ms, outputs: JSON.stringify(req.result.outputs) }) as Row,
  );
  changes.push(change(done));
  const { skipped } = propagateEnd(c, done, [endedJob(done)], req.now_ms, changes);
  finishJobs(c, done, { finished: 1 + skipped, failed: 0, cancelled: 0 }, req.now_ms);
  return { kind: 'settled', job: done, changes };
}

export function callReads(c: Conn): CallReads {
  return {
    queuedCalls: async (nowMs, limit) => (c.q('queuedCalls').all(CALL_LABEL_KEY, nowMs, limit) as Row[]).map(toJob),
    orphanedChildRuns: async (limit) => (c.q('orphanedChildRuns').all(limit) as Row[]).map(toRun),
    callingWorkflows: async (limit) => (c.q('callingWorkflows').all(limit) as Array<{ caller_id: string }>).map((r) => r.caller_id),
  };
}
