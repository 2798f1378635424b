import { isLeaseExpired, leaseUsableBy } from '../../domain/lease.js';
import { beginWaits } from '../../domain/approval.js';
import { endedJob, propagate, type EndedJob, type WaitingJob } from '../../domain/conditions.js';
import { LEASE_EXPIRED_ERROR, planFailure, timedOutError } from '../../domain/retry.js';
import { runStateFromCounts } from '../../domain/run-state.js';
import type { JobChange, JobRecord, LeaseRecord, LeaseRefusal } from '../store.js';
import { change } from '../changes.js';
import { decisionColumns, jobRow, toJob, toLease, type Row } from '../rows.js';
import { expandFanOut, rewireBelow } from '../fan-out.js';
import type { Conn } from './connection.js';

/**
 * The steps several operations share, named as in the PostgreSQL store's settle.ts: judging a lease
 * call (checkLease), expiring a lease or timing out a job, failing a job by its retry plan
 * (applyFailure), deciding the jobs below one that ended (propagateEnd), keeping the run's counters
 * and settling the run (settleRunIfOver). Synchronous, like every write (see writes.ts).
 */

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
  if (r && r.status === 'running') settleRunIfOver(c, run, r, nowMs);
}

export interface RunCounters {
  status: string;
  unfinished_jobs: number;
  failed_jobs: number;
  cancelled_jobs: number;
}

/** Records how a running run ended, once its counters say no job is left unfinished. */
export function settleRunIfOver(c: Conn, run: { workflow_id: string; run_number: number }, r: RunCounters, nowMs: number): void {
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
  const siblings = failFast(c, failed, nowMs, changes);
  const ended = [endedJob(failed), ...siblings.map((s) => endedJob({ ...s, status: 'cancelled' }))];
  const { skipped } = propagateEnd(c, job, ended, nowMs, changes);
  // Siblings fail_fast cancelled count as finished, not cancelled: the run ends `failed`, as on GitHub.
  finishJobs(c, job, { finished: 1 + siblings.length + skipped, failed: 1, cancelled: 0 }, nowMs);
  return failed;
}

/**
 * fail_fast (README "Matrix, fan-out and artifacts"): an instance failed for good cancels its
 * unfinished siblings, voiding the leases of running ones as a run cancel does. Answers them.
 */
export function failFast(c: Conn, failed: JobRecord, nowMs: number, changes: JobChange[]): JobRecord[] {
  if (!failed.fail_fast || failed.group_id === null) return [];
  const siblings = (c.q('unfinishedSiblings').all(failed.workflow_id, failed.run_number, failed.group_id, failed.row_id) as Row[]).map(toJob);
  const reason = `cancelled by fail_fast: instance "${failed.job_id}" failed`;
  for (const s of siblings) {
    if (s.status === 'running' && s.lease_id !== null) c.q('closeLease').run('cancelled', s.lease_id);
    c.q('fastCancelJob').run(nowMs, reason, s.row_id);
    changes.push(change(s));
  }
  return siblings;
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
  for (const j of changed) if (j.status === 'queued' && j.for_each !== null) fanOut(c, run, j.row_id, nowMs, changes, lookup);
  return { enqueued, skipped };
}

/**
 * A for_each job that just became ready (README "Matrix, fan-out and artifacts"), in the same
 * transaction: replaced by one queued instance per item, the jobs below it rewired to wait for every
 * instance; or, for an empty list, ended `success`, and for a bad one `failed`, with what is below it
 * decided. Keeps the run's counters itself (an expansion adds unfinished jobs).
 */
function fanOut(
  c: Conn,
  run: { workflow_id: string; run_number: number },
  rowId: number,
  nowMs: number,
  changes: JobChange[],
  lookup: (id: string) => WaitingJob | undefined,
): void {
  const placeholder = jobByRowId(c, rowId)!;
  const fan = expandFanOut(placeholder, nowMs);
  if (fan.kind === 'instances') {
    const ids = fan.jobs.map((j) => j.job_id);
    for (const j of fan.jobs) c.q('insertJob').run(jobRow(j, run.run_number));
    for (const id of placeholder.dependents) {
      const d = lookup(id) as JobRecord | undefined;
      if (!d || !d.needs.includes(placeholder.job_id)) continue;
      const wired = rewireBelow(d, placeholder.job_id, ids);
      d.needs = wired.needs;
      d.pending_needs = d.status === 'pending' ? wired.pending_needs : d.pending_needs;
      c.q('rewireJob').run(JSON.stringify(d.needs), d.pending_needs, d.row_id);
      changes.push(change(d));
    }
    c.q('deleteJob').run(placeholder.row_id);
    for (const id of ids) changes.push({ workflow_id: run.workflow_id, run_number: run.run_number, job_id: id });
    finishJobs(c, run, { finished: 1 - ids.length, failed: 0, cancelled: 0 }, nowMs);
    return;
  }
  const status = fan.kind === 'empty' ? 'success' : 'failed';
  const ended = toJob(c.q('endFanOut').get({ status, error: fan.kind === 'error' ? fan.error : null, now_ms: nowMs, row_id: rowId }) as Row);
  changes.push(change(ended));
  const { skipped } = propagateEnd(c, run, [endedJob(ended)], nowMs, changes);
  finishJobs(c, run, { finished: 1 + skipped, failed: status === 'failed' ? 1 : 0, cancelled: 0 }, nowMs);
}

/**
 * Writes a pending job's decision; one now queued also takes enqueueReady (its times and upstream
 * outputs), one now waiting for approval begins its wait and gathers its upstream outputs
 * (README "Approvals").
 */
function writeDecision(c: Conn, j: JobRecord, nowMs: number): void {
  beginWaits([j], nowMs);
  c.q('applyDecision').run(decisionParams({ ...j, status: j.status === 'queued' ? 'pending' : j.status }, nowMs));
  if (j.status === 'queued') c.q('enqueueReady').run({ row_id: j.row_id, now_ms: nowMs });
  if (j.status === 'awaiting_approval') c.q('gatherUpstreamOutputs').run(j.row_id);
}

/** The parameters of applyDecision for `j` as it is now. */
export function decisionParams(j: JobRecord, nowMs: number): Row {
  return { ...decisionColumns(j), now_ms: nowMs };
}

/** What a lease call may go on with, or why it may not. */
export type LeaseCheck =
  | { kind: 'live'; lease: LeaseRecord; job: JobRecord }
  | { kind: 'cancelled'; lease: LeaseRecord; job: JobRecord }
  | LeaseRefusal;

/**
 * The guard of every lease call. Running out of time is settled right here, not only by the reaper
 * (README "How a run works": the call that finds the lease expired puts the job back in the queue).
 * The worker is recorded as seen whatever the answer, once its lease is known, unless the call came
 * with another token than the claim (`holder`, see leaseUsableBy): that one changes nothing at all.
 */
export function checkLease(c: Conn, leaseId: string, nowMs: number, holder: string | null): LeaseCheck {
  const row = c.q('getLease').get({ lease_id: leaseId }) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const lease = toLease(row);
  if (!leaseUsableBy(lease.token_name, holder)) return { kind: 'not_yours', token_name: lease.token_name! };
  c.q('touchWorker').run(lease.worker_id, nowMs, nowMs);
  switch (lease.state) {
    case 'active':
      break;
    case 'cancelled':
      return { kind: 'cancelled', lease, job: jobByRowId(c, lease.job_row_id)! };
    default:
      return { kind: 'settled', state: lease.state };
  }
  if (isLeaseExpired(lease.expires_at_ms, nowMs)) {
    const changes: JobChange[] = [];
    const settled = expireLease(c, lease, nowMs, changes);
    return { kind: 'expired', lease: settled?.lease ?? lease, job: settled?.job ?? null, ran: settled?.ran ?? null, changes };
  }
  const job = jobByRowId(c, lease.job_row_id)!;
  if (!runsUnder(job, lease)) {
    // An active lease whose job moved on cannot be honoured; void it rather than let it act.
    return { kind: 'expired', lease: settleLease(c, lease.lease_id, 'expired') ?? lease, job: null, ran: null, changes: [] };
  }
  if (job.deadline_ms !== null && nowMs > job.deadline_ms) {
    const changes: JobChange[] = [];
    const settled = timeOut(c, job, nowMs, changes);
    return { kind: 'timed_out', lease: settled.lease ?? lease, job: settled.job, ran: job, changes };
  }
  return { kind: 'live', lease, job };
}

/** Whether the job is running under this very lease: only that lease may move it. */
export function runsUnder(job: JobRecord, lease: LeaseRecord): boolean {
  return job.status === 'running' && job.lease_id === lease.lease_id;
}

/** Moves an active lease to `state`; null when it was no longer active (someone settled it first). */
export function settleLease(c: Conn, leaseId: string, state: LeaseRecord['state']): LeaseRecord | null {
  const row = c.q('settleLease').get(state, leaseId) as Row | undefined;
  return row ? toLease(row) : null;
}

/**
 * An expired lease is a retryable failure of its job (README "How a run works"), if the job still
 * runs under it. Returns the settled lease and the job after the failure (null when the job had moved
 * on), or null when the lease was settled already.
 */
export function expireLease(
  c: Conn,
  lease: LeaseRecord,
  nowMs: number,
  changes: JobChange[],
): { lease: LeaseRecord; job: JobRecord | null; ran: JobRecord | null } | null {
  const settled = settleLease(c, lease.lease_id, 'expired');
  if (!settled) return null;
  const job = jobByRowId(c, lease.job_row_id);
  if (!job || !runsUnder(job, lease)) return { lease: settled, job: null, ran: null };
  return { lease: settled, job: applyFailure(c, job, LEASE_EXPIRED_ERROR, true, nowMs, changes), ran: job };
}

/**
 * A job past its deadline: its lease becomes timed_out and the job takes a retryable failure.
 * The job must be running (the caller read it so in this transaction).
 */
export function timeOut(
  c: Conn,
  job: JobRecord,
  nowMs: number,
  changes: JobChange[],
): { lease: LeaseRecord | null; job: JobRecord } {
  const lease = job.lease_id === null ? null : settleLease(c, job.lease_id, 'timed_out');
  const after = applyFailure(c, job, timedOutError(job.timeout_secs), true, nowMs, changes);
  return { lease, job: after };
}
