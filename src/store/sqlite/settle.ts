import { endedJob, propagate, type EndedJob, type WaitingJob } from '../../domain/conditions.js';
import { planFailure } from '../../domain/retry.js';
import { runStateFromCounts } from '../../domain/run-state.js';
import type { JobChange, JobRecord } from '../store.js';
import { decisionColumns, toJob, type Row } from '../rows.js';
import type { Conn } from './conn.js';

/**
 * The steps several operations share: failing a job by its retry plan, keeping the run's counters and
 * settling the run. Synchronous, like every operation (see operations.ts).
 */

export function change(j: { workflow_id: string; run_number: number; job_id: string }): JobChange {
  return { workflow_id: j.workflow_id, run_number: j.run_number, job_id: j.job_id };
}

export function jobByRowId(c: Conn, rowId: number): JobRecord | null {
  const row = c.q('getJobByRowId').get(rowId) as Row | undefined;
  return row ? toJob(row) : null;
}

/**
 * Counts jobs that just reached a terminal state on their run and, when none is left unfinished,
 * records how the run ended (README "How a run works"). The counter lives on the run row, so the
 * transaction that finishes the last job is the one that sees zero.
 */
export function finishJobs(
  c: Conn,
  run: { workflow_id: string; run_number: number },
  counts: { finished: number; failed: number; cancelled: number },
  nowMs: number,
): void {
  if (counts.finished === 0 && counts.cancelled === 0) return;
  const r = c.q('countFinishedJobs').get({ workflow_id: run.workflow_id, run_number: run.run_number, ...counts }) as
    | RunCounters
    | undefined;
  if (r && r.status === 'running') settleIfOver(c, run, r, nowMs);
}

export interface RunCounters {
  status: string;
  unfinished_jobs: number;
  failed_jobs: number;
  cancelled_jobs: number;
}

/** Records how a running run ended, once its counters say no job is left unfinished. */
export function settleIfOver(c: Conn, run: { workflow_id: string; run_number: number }, r: RunCounters, nowMs: number): void {
  if (r.unfinished_jobs > 0) return;
  const state = runStateFromCounts({ unfinished: r.unfinished_jobs, failed: r.failed_jobs, cancelled: r.cancelled_jobs });
  c.q('settleRun').run(state, nowMs, run.workflow_id, run.run_number);
}

/**
 * Applies a failure to a job by its retry plan: back in the queue for the next attempt, or failed for
 * good with what is pending downstream decided by its conditions (skipped, or counted down and maybe
 * queued: docs/architecture.md "Conditions") and the run settled if it is over. Returns the job
 * as it is afterwards; the jobs it changed are appended to `changes`.
 */
export function applyFailure(
  c: Conn,
  job: JobRecord,
  error: string,
  retryable: boolean,
  nowMs: number,
  changes: JobChange[],
): JobRecord {
  changes.push(change(job));
  const plan = planFailure(job, retryable, nowMs);
  if (plan.kind === 'retry') {
    return toJob(
      c.q('requeueJob').get({
        row_id: job.row_id,
        attempt: plan.attempt,
        now_ms: nowMs,
        delayed_until_ms: plan.delayed_until_ms,
        ready_at_ms: plan.ready_at_ms,
        error,
      }) as Row,
    );
  }
  const failed = toJob(c.q('failJob').get({ row_id: job.row_id, now_ms: nowMs, error }) as Row);
  const { skipped } = propagateEnd(c, job, [endedJob(failed)], nowMs, changes);
  finishJobs(c, job, { finished: 1 + skipped, failed: 1, cancelled: 0 }, nowMs);
  return failed;
}

/**
 * Tells the jobs below `ended` (jobs of `run` that just ended) and writes what conditions.ts decided:
 * dependents counted down, queued (with their upstream outputs) or skipped, and so on down. The jobs
 * it changed are appended to `changes`; answers the ones queued and how many were skipped (for the
 * run's counters, which the caller keeps).
 */
export function propagateEnd(
  c: Conn,
  run: { workflow_id: string; run_number: number },
  ended: readonly EndedJob[],
  nowMs: number,
  changes: JobChange[],
  seed: ReadonlyMap<string, JobRecord> = new Map(),
): { enqueued: string[]; skipped: number } {
  const rows = new Map<string, JobRecord>(seed);
  const lookup = (id: string): WaitingJob | undefined => {
    let j = rows.get(id);
    if (!j) {
      const row = c.q('getJob').get(run.workflow_id, run.run_number, id) as Row | undefined;
      if (!row) return undefined;
      j = toJob(row);
      rows.set(id, j);
    }
    return j;
  };
  const changed = propagate(ended, lookup) as unknown as JobRecord[];
  changed.sort((a, b) => a.row_id - b.row_id);
  const enqueued: string[] = [];
  let skipped = 0;
  for (const j of changed) {
    writeDecision(c, j, nowMs);
    if (j.status === 'queued') enqueued.push(j.job_id);
    if (j.status === 'skipped') skipped++;
    changes.push(change(j));
  }
  return { enqueued, skipped };
}

/** Writes a pending job's decision; one now queued also takes enqueueReady (its times and upstream outputs). */
function writeDecision(c: Conn, j: JobRecord, nowMs: number): void {
  c.q('applyDecision').run(decisionParams({ ...j, status: j.status === 'queued' ? 'pending' : j.status }, nowMs));
  if (j.status === 'queued') c.q('enqueueReady').run({ row_id: j.row_id, now_ms: nowMs });
}

/** The parameters of applyDecision for `j` as it is now. */
export function decisionParams(j: JobRecord, nowMs: number): Row {
  return { ...decisionColumns(j), now_ms: nowMs };
}
