import type { JobChange } from '../store.js';
import { toJob, toLease, type Row } from '../rows.js';
import type { Conn } from './conn.js';
import { expireLease, timeOut } from './lease-check.js';

/**
 * The reaper's operations: what no lease call came to settle. Each item is found through its partial
 * index and settled under the same guard a lease call uses (only an active lease moves), so two
 * reapers, in one process or two, never settle the same lease twice.
 */

export function expireLeases(c: Conn, nowMs: number, limit: number): JobChange[] {
  const changes: JobChange[] = [];
  for (const row of c.q('expiredLeases').all(nowMs, limit) as Row[]) expireLease(c, toLease(row), nowMs, changes);
  return changes;
}

export function timeOutJobs(c: Conn, nowMs: number, limit: number): JobChange[] {
  const changes: JobChange[] = [];
  for (const row of c.q('timedOutJobs').all(nowMs, limit) as Row[]) timeOut(c, toJob(row), nowMs, changes);
  return changes;
}
