import { leaseExpiresAt } from '../../domain/lease.js';
import type { Claimed, JobChange, StoreClaim } from '../store.js';
import { newLease, toJob } from '../rows.js';
import { change } from '../changes.js';
import { QUERIES } from './queries.js';
import { writeStatement, type Sql } from './tx.js';

/** Claiming jobs (one statement, QUERIES.claim) and handing leases back unused. */

export async function claim(sql: Sql, req: StoreClaim): Promise<Claimed[]> {
  const now = req.now_ms;
  const expires = leaseExpiresAt(now, req.ttl_secs);
  const max = Math.max(0, Math.min(req.max, req.lease_ids.length));
  const rows = await writeStatement(sql, QUERIES.claim, [
    [...new Set(req.label_keys)],
    now,
    max,
    req.lease_ids,
    req.worker_id,
    JSON.stringify(req.worker_labels),
    req.ttl_secs,
    expires,
    req.token_name ?? null,
  ]);
  return rows.map((r) => {
    const job = toJob(r);
    return { job, lease: newLease(job, job.lease_id!, req.worker_id, req.ttl_secs, now, expires, req.token_name ?? null) };
  });
}

/** See QUERIES.releaseLeases. */
export async function releaseLeases(sql: Sql, leaseIds: readonly string[]): Promise<JobChange[]> {
  if (leaseIds.length === 0) return [];
  return (await writeStatement(sql, QUERIES.releaseLeases, [leaseIds]))
    .sort((a, b) => (a.row_id as number) - (b.row_id as number))
    .map((r) => change(r as unknown as JobChange));
}
