import { isLeaseExpired, leaseUsableBy } from '../../domain/lease.js';
import { LEASE_EXPIRED_ERROR, timedOutError } from '../../domain/retry.js';
import type { JobChange, JobRecord, LeaseRecord, LeaseRefusal } from '../store.js';
import { toLease, type Row } from '../rows.js';
import type { Conn } from './conn.js';
import { applyFailure, jobByRowId } from './settle.js';

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
  const row = c.q('getLease').get(leaseId) as Row | undefined;
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
    return { kind: 'expired', lease: settled?.lease ?? lease, job: settled?.job ?? null, changes };
  }
  const job = jobByRowId(c, lease.job_row_id)!;
  if (!runsUnder(job, lease)) {
    // An active lease whose job moved on cannot be honoured; void it rather than let it act.
    return { kind: 'expired', lease: settleLease(c, lease.lease_id, 'expired') ?? lease, job: null, changes: [] };
  }
  if (job.deadline_ms !== null && nowMs > job.deadline_ms) {
    const changes: JobChange[] = [];
    const settled = timeOut(c, job, nowMs, changes);
    return { kind: 'timed_out', lease: settled.lease ?? lease, job: settled.job, changes };
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
): { lease: LeaseRecord; job: JobRecord | null } | null {
  const settled = settleLease(c, lease.lease_id, 'expired');
  if (!settled) return null;
  const job = jobByRowId(c, lease.job_row_id);
  if (!job || !runsUnder(job, lease)) return { lease: settled, job: null };
  return { lease: settled, job: applyFailure(c, job, LEASE_EXPIRED_ERROR, true, nowMs, changes) };
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
