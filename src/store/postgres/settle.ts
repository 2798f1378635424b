import { isLeaseExpired, leaseUsableBy } from '../../domain/lease.js';
import { beginWaits } from '../../domain/approval.js';
import { endedJob, propagate, type EndedJob } from '../../domain/conditions.js';
import { LEASE_EXPIRED_ERROR, planFailure, timedOutError } from '../../domain/retry.js';
import { runStateFromCounts } from '../../domain/run-state.js';
import type { JobChange, JobRecord, LeaseRecord, LeaseRefusal, LeaseState } from '../store.js';
import { decisionColumns, jobRow, toJob, toLease, type Row } from '../rows.js';
import { expandFanOut, rewireBelow } from '../fan-out.js';
import { change } from '../changes.js';
import { QUERIES } from './queries.js';
import { statement, writeStatement, type Exec, type Sql } from './tx.js';

/**
 * The steps several operations share, named as in the SQLite store's settle.ts: judging a lease call
 * (checkLease), expiring a lease or timing out a job, failing a job by its retry plan (applyFailure),
 * deciding the jobs below one that ended (propagateEnd) and settling the run (settleRunIfOver).
 */

export interface LockedLease {
  lease: LeaseRecord;
  /**
   * The lease's job as of the locking statement's snapshot. While the lease is active this is also the
   * job's current state: a running job only changes together with its active lease (complete, fail,
   * expiry, timeout and cancel all settle the lease in the same transaction), and we hold that lease.
   */
  job: JobRecord;
}

/** Reads the row of a LEASE_WITH_JOB statement (lease and job as JSON). */
export function lockedLease(row: Row | undefined): LockedLease | null {
  return row ? { lease: toLease(row.lease as Row), job: toJob(row.job as Row) } : null;
}

/**
 * Records how the run ended once none of its jobs can move any more (README "How a run works"). Sent
 * after the COMMIT of whatever finished a job, never inside it: see QUERIES.runOpen for why that finds
 * every run's end, and docs/architecture.md "Run settlement". `open` is the answer of a runOpen sent
 * already, when the caller has it.
 */
export async function settleRunIfOver(sql: Sql, workflowId: string, runNumber: number, nowMs: number, open?: boolean): Promise<void> {
  if (open === undefined) open = (await statement(sql, QUERIES.runOpen, [workflowId, runNumber]))[0]!.open as boolean;
  if (open) return;
  const [tally] = await statement(sql, QUERIES.runTally, [workflowId, runNumber]);
  const state = runStateFromCounts({ unfinished: 0, failed: tally!.failed as number, cancelled: tally!.cancelled as number });
  await writeStatement(sql, QUERIES.settleRun, [workflowId, runNumber, state, nowMs]);
}

/** settleRunIfOver for every run an outcome's `changes` touched (after its transaction committed). */
export async function settleRunsOf<T extends object>(sql: Sql, nowMs: number, outcome: T): Promise<T> {
  const changes = (outcome as { changes?: readonly JobChange[] }).changes ?? [];
  const runs = new Map<string, JobChange>();
  for (const c of changes) runs.set(`${c.run_number}/${c.workflow_id}`, c);
  for (const c of runs.values()) await settleRunIfOver(sql, c.workflow_id, c.run_number, nowMs);
  return outcome;
}

/**
 * Applies a failure to the job running under `lease` (both already locked by the caller, lease first)
 * by the domain's retry plan, settling the lease in `leaseState`.
 */
export async function applyFailure(
  q: Exec,
  { lease, job }: LockedLease,
  leaseState: LeaseState,
  error: string,
  retryable: boolean,
  nowMs: number,
): Promise<{ job: JobRecord; changes: JobChange[] }> {
  const plan = planFailure(job, retryable, nowMs);
  if (plan.kind === 'retry') {
    const [row] = await q(QUERIES.requeueJob, [
      lease.lease_id, leaseState, job.row_id, plan.attempt, nowMs, plan.delayed_until_ms, plan.ready_at_ms, error,
    ]);
    return { job: toJob(row!), changes: [change(job)] };
  }
  // Sent together: the job's row is locked by the first, then what is below it in row order.
  const [[row], below] = await Promise.all([
    q(QUERIES.failJob, [lease.lease_id, leaseState, job.row_id, error, nowMs]),
    job.dependents.length === 0 ? Promise.resolve([]) : q(QUERIES.lockBelow, [job.workflow_id, job.run_number, job.dependents]),
  ]);
  const failed = toJob(row!);
  const siblings = await failFast(q, failed, nowMs);
  const ended = [endedJob(failed), ...siblings.map((s) => endedJob({ ...s, status: 'cancelled' }))];
  const changed = await propagateEnd(q, ended, below, nowMs);
  return { job: failed, changes: [change(job), ...siblings.map(change), ...changed.map(change)] };
}

/**
 * fail_fast (README "Matrix, fan-out and artifacts"): an instance failed for good cancels its
 * unfinished siblings, voiding the leases of running ones as a run cancel does. Answers them. Their
 * rows are locked after the failed one's (row order); a sibling failing at the same moment may wait
 * the other way round, which PostgreSQL breaks as a deadlock and the transaction retries.
 */
async function failFast(q: Exec, failed: JobRecord, nowMs: number): Promise<JobRecord[]> {
  if (!failed.fail_fast || failed.group_id === null) return [];
  const siblings = (await q(QUERIES.lockSiblings, [failed.workflow_id, failed.run_number, failed.group_id, failed.row_id])).map(toJob);
  if (siblings.length === 0) return [];
  const leases = siblings.filter((s) => s.status === 'running' && s.lease_id !== null).map((s) => s.lease_id!);
  const reason = `cancelled by fail_fast: instance "${failed.job_id}" failed`;
  await q(QUERIES.fastCancel, [leases, siblings.map((s) => s.row_id), nowMs, reason]);
  return siblings;
}

/**
 * Runs conditions.ts propagate over `rows` (pending jobs below the ended ones, locked by the caller)
 * and writes what it decided in one statement. Answers the jobs changed, in row order.
 */
export async function propagateEnd(q: Exec, ended: readonly EndedJob[], rows: readonly Row[], nowMs: number): Promise<JobRecord[]> {
  const byId = new Map(rows.map((r) => { const j = toJob(r); return [j.job_id, j] as const; }));
  const changed = (propagate(ended, (id) => byId.get(id)) as JobRecord[]).sort((a, b) => a.row_id - b.row_id);
  await writeDecisions(q, changed, nowMs);
  return [...changed, ...(await fanOutReady(q, changed, byId, nowMs))];
}

/**
 * The for_each jobs among `decided` that just became ready (README "Matrix, fan-out and artifacts"),
 * in the same transaction, which holds their rows and those below them locked (lockBelow, or a
 * cancel's lock of the whole run; `byId` has them as decided): each replaced by one queued instance
 * per item, the jobs below rewired to wait for every instance; or, for an empty list, ended `success`,
 * and for a bad one `failed`, with what is below decided in turn. The lock makes it exactly once:
 * of two needs ending at once, only the transaction that brings the job's count to zero finds it
 * ready. Answers the jobs it changed (instances, rewired and decided jobs; the deleted job too).
 */
export async function fanOutReady(q: Exec, decided: readonly JobRecord[], byId: Map<string, JobRecord>, nowMs: number): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  for (let todo = decided.filter((j) => j.status === 'queued' && j.for_each !== null); todo.length > 0; ) {
    const next: JobRecord[] = [];
    for (const p of todo) {
      const placeholder = toJob((await q(QUERIES.getJobByRowId, [p.row_id]))[0]!);
      const fan = expandFanOut(placeholder, nowMs);
      if (fan.kind === 'instances') {
        const rows = await q(QUERIES.insertInstances, [placeholder.workflow_id, placeholder.run_number, fan.jobs.map((j) => jobRow(j, placeholder.run_number))]);
        const ids = fan.jobs.map((j) => j.job_id);
        const rewired: JobRecord[] = [];
        for (const id of placeholder.dependents) {
          const d = byId.get(id);
          if (!d || !d.needs.includes(placeholder.job_id)) continue;
          const wired = rewireBelow(d, placeholder.job_id, ids);
          d.needs = wired.needs;
          if (d.status === 'pending') d.pending_needs = wired.pending_needs;
          rewired.push(d);
        }
        if (rewired.length > 0) {
          await q(QUERIES.rewireJobs, [rewired.map((d) => ({ row_id: d.row_id, needs: JSON.stringify(d.needs), pending_needs: d.pending_needs }))]);
        }
        await q(QUERIES.deleteJob, [placeholder.row_id]);
        out.push(placeholder, ...rows.map(toJob), ...rewired);
        continue;
      }
      const status = fan.kind === 'empty' ? 'success' : 'failed';
      const ended = toJob((await q(QUERIES.endFanOut, [placeholder.row_id, status, fan.kind === 'error' ? fan.error : null, nowMs]))[0]!);
      byId.set(ended.job_id, ended);
      const below = (propagate([endedJob(ended)], (id) => byId.get(id)) as JobRecord[]).sort((a, b) => a.row_id - b.row_id);
      await writeDecisions(q, below, nowMs);
      out.push(ended, ...below);
      next.push(...below.filter((j) => j.status === 'queued' && j.for_each !== null));
    }
    todo = next;
  }
  return out;
}

/** Writes what propagate (or a cancel) decided; a job now waiting for approval begins its wait (README "Approvals"). */
export async function writeDecisions(q: Exec, jobs: readonly JobRecord[], nowMs: number): Promise<void> {
  if (jobs.length === 0) return;
  beginWaits(jobs, nowMs);
  await q(QUERIES.applyDecisions, [jobs.map(decisionColumns), nowMs]);
}

/** Settles an active lease that ran out: expired, and its job's attempt a retryable failure. */
export async function expireLease(
  q: Exec,
  locked: LockedLease,
  nowMs: number,
): Promise<{ lease: LeaseRecord; job: JobRecord | null; changes: JobChange[] }> {
  const { lease, job } = locked;
  const expired: LeaseRecord = { ...lease, state: 'expired' };
  if (job.status === 'running' && job.lease_id === lease.lease_id) {
    const r = await applyFailure(q, locked, 'expired', LEASE_EXPIRED_ERROR, true, nowMs);
    return { lease: expired, job: r.job, changes: r.changes };
  }
  await q(QUERIES.setLeaseState, [lease.lease_id, 'expired']);
  return { lease: expired, job: null, changes: [] };
}

/** Settles an active lease whose job outlived timeout_secs: timed out, a retryable failure. */
export async function timeOut(q: Exec, locked: LockedLease, nowMs: number) {
  const r = await applyFailure(q, locked, 'timed_out', timedOutError(locked.job.timeout_secs), true, nowMs);
  return { lease: { ...locked.lease, state: 'timed_out' as const }, job: r.job, changes: r.changes };
}

export type LeaseCheck =
  | { kind: 'refused'; outcome: LeaseRefusal }
  | { kind: 'cancelled'; lease: LeaseRecord }
  | { kind: 'live'; locked: LockedLease };

/**
 * Locks the lease and decides what a lease call may do with it. Running out (expiry, then timeout) is
 * applied right here, so the caller's refusal already reflects the job back in the queue.
 */
export async function checkLease(q: Exec, leaseId: string, nowMs: number, holder: string | null = null): Promise<LeaseCheck> {
  const locked = lockedLease((await q(QUERIES.lockLease, [leaseId]))[0]);
  if (!locked) return { kind: 'refused', outcome: { kind: 'not_found' } };
  const { lease, job } = locked;
  // Before anything else: a call with another token than the claim's changes nothing, not even an expiry.
  if (!leaseUsableBy(lease.token_name, holder)) return { kind: 'refused', outcome: { kind: 'not_yours', token_name: lease.token_name! } };
  switch (lease.state) {
    case 'cancelled':
      return { kind: 'cancelled', lease };
    case 'completed':
    case 'failed':
    case 'expired':
    case 'timed_out':
    case 'released':
      return { kind: 'refused', outcome: { kind: 'settled', state: lease.state } };
    case 'active':
      break;
  }
  if (isLeaseExpired(lease.expires_at_ms, nowMs)) {
    const r = await expireLease(q, locked, nowMs);
    return { kind: 'refused', outcome: { kind: 'expired', lease: r.lease, job: r.job, ran: r.job ? job : null, changes: r.changes } };
  }
  if (job.deadline_ms !== null && nowMs > job.deadline_ms) {
    const r = await timeOut(q, locked, nowMs);
    return { kind: 'refused', outcome: { kind: 'timed_out', lease: r.lease, job: r.job, ran: job, changes: r.changes } };
  }
  return { kind: 'live', locked };
}

/** The job of a cancelled lease, read afresh: the lease lock's snapshot may predate the cancel. */
export async function currentJob(q: Exec, rowId: number): Promise<JobRecord> {
  const [row] = await q(QUERIES.getJobByRowId, [rowId]);
  return toJob(row!);
}
