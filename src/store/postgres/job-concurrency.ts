import { arrivalCancels } from '../../domain/job-groups.js';
import { endedJob } from '../../domain/conditions.js';
import type { JobChange, JobGroupsOutcome } from '../store.js';
import { change } from '../changes.js';
import { toJob } from '../rows.js';
import { QUERIES } from './queries.js';
import { propagateEnd, settleRunsOf } from './settle.js';
import { statement, transaction, type Sql } from './tx.js';

/**
 * Concurrency groups of jobs (README "Concurrency groups"), named as in the SQLite store's
 * job-concurrency.ts: settles the arrivals of up to `limit` groups by domain/job-groups.ts, each group
 * in a transaction of its own under the advisory lock its claims take (claim.ts), cancelling the jobs
 * they replace (and, with cancel_in_progress, the running ones, whose leases are voided), with what is
 * below each decided as after a cancel; the runs are settled after COMMIT. The members' rows are locked
 * before their leases, the other way round from a lease call: PostgreSQL breaks such a rare crossing
 * as a deadlock and the transaction runs again (tx.ts).
 */
export async function settleJobGroups(sql: Sql, nowMs: number, limit: number): Promise<JobGroupsOutcome> {
  const groups = (await statement(sql, QUERIES.groupsWithArrivals, [limit])).map((g) => g.concurrency_group as string);
  const out: JobGroupsOutcome = { changes: [], workflows: [], groups: groups.length };
  const workflows = new Set<string>();
  for (const group of groups.sort()) {
    const settled = await transaction(sql, async (q) => {
      await q(QUERIES.lockJobGroup, [group]);
      const members = (await q(QUERIES.lockJobGroupMembers, [group])).map((r) => ({ ...toJob(r), group_checked: Boolean(r.group_checked) }));
      const arrivals = members.filter((m) => !m.group_checked);
      const changes: JobChange[] = [];
      for (const { job, reason } of arrivalCancels(group, members)) {
        const [row] = await q(QUERIES.cancelGroupJob, [job.status === 'running' ? job.lease_id : null, job.row_id, nowMs, reason]);
        const cancelled = toJob(row!);
        const below = job.dependents.length === 0 ? [] : await q(QUERIES.lockBelow, [job.workflow_id, job.run_number, job.dependents]);
        const decided = await propagateEnd(q, [endedJob(cancelled)], below, nowMs);
        changes.push(change(cancelled), ...decided.map(change));
      }
      if (arrivals.length > 0) await q(QUERIES.markGroupChecked, [arrivals.map((a) => a.row_id)]);
      return { changes, workflows: arrivals.map((a) => a.workflow_id) };
    });
    await settleRunsOf(sql, nowMs, settled);
    out.changes.push(...settled.changes);
    for (const w of settled.workflows) workflows.add(w);
  }
  out.workflows = [...workflows];
  return out;
}
