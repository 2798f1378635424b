import type { ReapOutcome } from '../store.js';
import { toJob, toLease, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { expireLease, settleRunIfOver, timeOut, type RunCounters } from './settle.js';

/**
 * The reaper's operations: what no lease call came to settle. Each item is found through its partial
 * index and settled under the same guard a lease call uses (only an active lease moves), so two
 * reapers, in one process or two, never settle the same lease twice.
 */

export function expireLeases(c: Conn, nowMs: number, limit: number): ReapOutcome {
  const out: Required<ReapOutcome> = { changes: [], ended: [], ran: [] };
  for (const row of c.q('expiredLeases').all(nowMs, limit) as Row[]) {
    const settled = expireLease(c, toLease(row), nowMs, out.changes);
    if (settled?.job && settled.ran) {
      out.ended.push(settled.job);
      out.ran.push(settled.ran);
    }
  }
  return out;
}

export function timeOutJobs(c: Conn, nowMs: number, limit: number): ReapOutcome {
  const out: Required<ReapOutcome> = { changes: [], ended: [], ran: [] };
  for (const row of c.q('timedOutJobs').all(nowMs, limit) as Row[]) {
    const job = toJob(row);
    out.ended.push(timeOut(c, job, nowMs, out.changes).job);
    out.ran.push(job);
  }
  return out;
}

/**
 * Runs whose counters say nothing is left but which are still running. The transaction that finishes
 * a run's last job settles it here, so none is expected; the sweep keeps the Store contract alike on
 * both stores (docs/architecture.md "Run settlement").
 */
export function settleStrandedRuns(c: Conn, nowMs: number, limit: number): number {
  const runs = c.q('strandedRuns').all(limit) as Array<RunCounters & { workflow_id: string; run_number: number }>;
  for (const r of runs) settleRunIfOver(c, r, r, nowMs);
  return runs.length;
}
