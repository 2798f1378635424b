import { leaseExpiresAt } from '../../domain/lease.js';
import type { Claimed, JobChange, StoreClaim } from '../store.js';
import { newLease, toJob, type Row } from '../rows.js';
import { change } from '../changes.js';
import { QUERIES } from './queries.js';
import { statement, transaction, writeStatement, type Sql } from './tx.js';

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
  if (rows.length < max) rows.push(...(await claimCapped(sql, req, max - rows.length, req.lease_ids.slice(rows.length), expires)));
  return rows.map((r) => {
    const job = toJob(r);
    return { job, lease: newLease(job, job.lease_id!, req.worker_id, req.ttl_secs, now, expires, req.token_name ?? null) };
  });
}

/** How many capped groups one claim looks at. */
const CAPPED_GROUPS_PER_CLAIM = 8;

/**
 * Instances of matrix groups with a max_parallel (README "Matrix, fan-out and artifacts"), which the
 * one-statement claim leaves out: a statement's snapshot cannot see what a concurrent claim takes, so
 * each group is claimed under a transaction-scoped advisory lock, counting its running instances in a
 * statement sent after the lock is held (READ COMMITTED: a new snapshot, which sees every claim of the
 * group that committed before). Groups in a fixed order, so two claims never wait for each other in turn.
 */
async function claimCapped(sql: Sql, req: StoreClaim, room: number, leaseIds: readonly string[], expires: number): Promise<Row[]> {
  const keys = [...new Set(req.label_keys)];
  const groups = await statement(sql, QUERIES.cappedGroups, [keys, req.now_ms, CAPPED_GROUPS_PER_CLAIM]);
  if (groups.length === 0) return [];
  groups.sort((a, b) => groupKey(a).localeCompare(groupKey(b)));
  return transaction(sql, async (q) => {
    const out: Row[] = [];
    for (const g of groups) {
      if (out.length >= room) break;
      const at = [g.workflow_id, g.run_number, g.group_id];
      await q(QUERIES.lockGroup, at);
      const [{ n }] = (await q(QUERIES.groupRunning, at)) as [{ n: number }];
      const limit = Math.min(room - out.length, (g.max_parallel as number) - n);
      if (limit <= 0) continue;
      const rows = await q(QUERIES.claimCapped, [
        ...at, keys, req.now_ms, limit, leaseIds.slice(out.length), req.worker_id, req.ttl_secs, expires, req.token_name ?? null,
      ]);
      out.push(...rows);
    }
    return out;
  });
}

function groupKey(g: Row): string {
  return `${g.workflow_id as string}/${g.run_number as number}/${g.group_id as string}`;
}

/** See QUERIES.releaseLeases. */
export async function releaseLeases(sql: Sql, leaseIds: readonly string[]): Promise<JobChange[]> {
  if (leaseIds.length === 0) return [];
  return (await writeStatement(sql, QUERIES.releaseLeases, [leaseIds]))
    .sort((a, b) => (a.row_id as number) - (b.row_id as number))
    .map((r) => change(r as unknown as JobChange));
}
