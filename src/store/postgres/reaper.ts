import type { ReapOutcome } from '../store.js';
import { expireLease, lockedLease, settleRunIfOver, settleRunsOf, timeOut } from './settle.js';
import { QUERIES } from './queries.js';
import { statement, transaction, type Sql } from './tx.js';

/**
 * The reaper's operations: what no lease call came to settle. Each item is found by a plain read,
 * then settled under the same lock and guard a lease call uses (only an active lease moves), so two
 * reapers, in one process or two, never settle the same lease twice.
 */

/**
 * Each expired lease is settled in a transaction of its own that locks it again with SKIP LOCKED and
 * re-checks it: a lease that another reaper or the worker's own call is settling is left to that one,
 * so no lease is settled twice, and no transaction holds a run row while waiting for another's jobs.
 */
export async function expireLeases(sql: Sql, nowMs: number, limit: number): Promise<ReapOutcome> {
  const out: Required<ReapOutcome> = { changes: [], ended: [], ran: [] };
  for (const { lease_id } of await statement(sql, QUERIES.expiredLeases, [nowMs, limit])) {
    const settled = await transaction(sql, async (q) => {
      const locked = lockedLease((await q(QUERIES.lockExpiredLease, [lease_id, nowMs]))[0]);
      return locked ? { ...(await expireLease(q, locked, nowMs)), ran: locked.job } : { job: null, ran: null, changes: [] };
    });
    out.changes.push(...(await settleRunsOf(sql, nowMs, settled)).changes);
    if (settled.job) {
      out.ended.push(settled.job);
      out.ran.push(settled.ran);
    }
  }
  return out;
}

/** As expireLeases, for running jobs past their deadline (their lease is locked first, as everywhere). */
export async function timeOutJobs(sql: Sql, nowMs: number, limit: number): Promise<ReapOutcome> {
  const out: Required<ReapOutcome> = { changes: [], ended: [], ran: [] };
  for (const { lease_id } of await statement(sql, QUERIES.timedOutJobs, [nowMs, limit])) {
    if (lease_id === null) continue;
    const settled = await transaction(sql, async (q) => {
      const locked = lockedLease((await q(QUERIES.lockTimedOutLease, [lease_id, nowMs]))[0]);
      return locked ? { ...(await timeOut(q, locked, nowMs)), ran: locked.job } : { job: null, ran: null, changes: [] };
    });
    out.changes.push(...(await settleRunsOf(sql, nowMs, settled)).changes);
    if (settled.job) {
      out.ended.push(settled.job);
      out.ran.push(settled.ran);
    }
  }
  return out;
}

/** The reaper's sweep for runs a crash left unsettled (see QUERIES.unsettledRuns); answers how many. */
export async function settleStrandedRuns(sql: Sql, nowMs: number, limit: number): Promise<number> {
  const runs = await statement(sql, QUERIES.unsettledRuns, [limit]);
  for (const r of runs) await settleRunIfOver(sql, r.workflow_id as string, r.run_number as number, nowMs, false);
  return runs.length;
}
