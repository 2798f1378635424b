import { leaseExpiresAt } from '../../domain/lease.js';
import type { Claimed, JobChange, StoreClaim } from '../store.js';
import { newLease, toJob, type Row } from '../rows.js';
import { change } from '../changes.js';
import type { Conn } from './connection.js';
import { jobByRowId, runsUnder, settleLease } from './settle.js';

/** Claiming jobs and handing leases back unused, as synchronous writes (see writes.ts). */

/**
 * Hands out up to `max` claimable jobs: one ordered range read of jobs_claim per label key, merged by
 * (ready_at_ms, row_id), the oldest taken. The write transaction keeps every other writer out, and the
 * update re-checks `queued`, so a job is handed out once per attempt.
 */
export function claim(c: Conn, req: StoreClaim): Claimed[] {
  const now = req.now_ms;
  c.q('seeWorker').run(req.worker_id, JSON.stringify(req.worker_labels), now, now);
  const max = Math.min(req.max, req.lease_ids.length);
  if (max <= 0 || req.label_keys.length === 0) return [];
  const candidates: Array<{ row_id: number; ready_at_ms: number }> = [];
  const read = c.q('claimCandidates');
  for (const key of new Set(req.label_keys)) {
    for (const r of read.all(key, now, max) as Array<{ row_id: number; ready_at_ms: number }>) candidates.push(r);
  }
  candidates.sort((a, b) => a.ready_at_ms - b.ready_at_ms || a.row_id - b.row_id);
  const claimed: Claimed[] = [];
  for (const cand of candidates) {
    if (claimed.length >= max) break;
    const leaseId = req.lease_ids[claimed.length]!;
    const row = c.q('startJob').get({ row_id: cand.row_id, now_ms: now, worker_id: req.worker_id, lease_id: leaseId }) as
      | Row
      | undefined;
    if (!row) continue;
    const job = toJob(row);
    const lease = newLease(job, leaseId, req.worker_id, req.ttl_secs, now, leaseExpiresAt(now, req.ttl_secs), req.token_name ?? null);
    c.q('insertLease').run(lease);
    claimed.push({ job, lease });
  }
  return claimed;
}

/** Leases handed back unused (the claimant went away): their jobs return to their place in the queue. */
export function releaseLeases(c: Conn, leaseIds: readonly string[]): JobChange[] {
  const changes: JobChange[] = [];
  for (const leaseId of leaseIds) {
    const lease = settleLease(c, leaseId, 'released');
    if (!lease) continue;
    const job = jobByRowId(c, lease.job_row_id);
    if (!job || !runsUnder(job, lease)) continue;
    c.q('unclaimJob').run(job.row_id, leaseId);
    changes.push(change(job));
  }
  return changes;
}
