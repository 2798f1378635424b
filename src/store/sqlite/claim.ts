import { leaseExpiresAt } from '../../domain/lease.js';
import type { Claimed, JobChange, StoreClaim } from '../store.js';
import { newLease, toJob } from '../rows.js';
import { change } from '../changes.js';
import type { Conn } from './connection.js';
import { jobByRowId, runsUnder, settleLease } from './settle.js';

/** Claiming jobs and handing leases back unused, as synchronous writes (see writes.ts). */

/**
 * Hands out up to `max` claimable jobs: one ordered range read of jobs_claim per label key, merged by
 * (priority descending, ready_at_ms, row_id): the highest priority first, the oldest within it. The
 * write transaction keeps every other writer out, and the update re-checks `queued`, so a job is
 * handed out once per attempt.
 */
export function claim(c: Conn, req: StoreClaim): Claimed[] {
  const now = req.now_ms;
  const see = () => c.q('seeWorker').run(req.worker_id, JSON.stringify(req.worker_labels), now, now);
  // A retry that takes nothing leaves the transaction empty (StoreClaim.retry).
  if (!req.retry) see();
  const max = Math.min(req.max, req.lease_ids.length);
  if (max <= 0 || req.label_keys.length === 0) return [];
  const candidates: Candidate[] = [];
  // Counting a capped group's running instances costs every candidate read; most claims find no
  // capped instance queued, and read plainly (Conn.cappedQueued).
  c.cappedQueued ??= (c.q('cappedQueued').get() as { any: number }).any === 1;
  const read = c.q(c.cappedQueued ? 'claimCandidates' : 'plainClaimCandidates');
  for (const key of new Set(req.label_keys)) {
    for (const r of read.all(key, now, max) as Candidate[]) candidates.push(r);
  }
  candidates.sort((a, b) => b.priority - a.priority || a.ready_at_ms - b.ready_at_ms || a.row_id - b.row_id);
  const claimed: Claimed[] = [];
  // max_parallel: the candidates counted each group's running instances; this claim adds its own.
  const taken = new Map<string, number>();
  // Concurrency groups: the candidates are of groups none of whose jobs runs; this claim takes one of each.
  const groups = new Set<string>();
  for (const cand of candidates) {
    if (claimed.length >= max) break;
    if (cand.concurrency_group !== null) {
      if (groups.has(cand.concurrency_group)) continue;
      groups.add(cand.concurrency_group);
    }
    if (cand.group_key !== null) {
      const mine = taken.get(cand.group_key) ?? 0;
      if (cand.group_running + mine >= cand.max_parallel!) continue;
      taken.set(cand.group_key, mine + 1);
    }
    const leaseId = req.lease_ids[claimed.length]!;
    const expires = leaseExpiresAt(now, req.ttl_secs);
    const tokenName = req.token_name ?? null;
    // The lease is written into the job's row by this one update (migrations.ts version 24).
    const row = c.row('startJob', {
      row_id: cand.row_id, now_ms: now, worker_id: req.worker_id, lease_id: leaseId, ttl_secs: req.ttl_secs, expires_at_ms: expires, token_name: tokenName,
    });
    if (!row) continue;
    const job = toJob(row);
    claimed.push({ job, lease: newLease(job, leaseId, req.worker_id, req.ttl_secs, now, expires, tokenName) });
  }
  if (req.retry && claimed.length > 0) see();
  return claimed;
}

interface Candidate {
  row_id: number;
  priority: number;
  ready_at_ms: number;
  max_parallel: number | null;
  /** Names the candidate's group when it has a max_parallel; null otherwise. */
  group_key: string | null;
  group_running: number;
  /** The job's concurrency group (README "Concurrency groups"); null: none. */
  concurrency_group: string | null;
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
