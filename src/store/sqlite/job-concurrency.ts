import { arrivalCancels } from '../../domain/job-groups.js';
import { endedJob } from '../../domain/conditions.js';
import type { JobChange, JobGroupsOutcome, JobRecord } from '../store.js';
import { change } from '../changes.js';
import { toJob, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { finishJobs, propagateEnd } from './settle.js';

/**
 * Concurrency groups of jobs (README "Concurrency groups"), named as in the PostgreSQL store's
 * job-concurrency.ts: settles the arrivals of up to `limit` groups by domain/job-groups.ts, cancelling
 * the jobs they replace (and, with cancel_in_progress, the running ones, whose leases are voided),
 * with what is below each decided as after a cancel. The single writer is the group's lock.
 */
export function settleJobGroups(c: Conn, nowMs: number, limit: number): JobGroupsOutcome {
  const groups = (c.q('groupsWithArrivals').all(limit) as Array<{ concurrency_group: string }>).map((g) => g.concurrency_group);
  const changes: JobChange[] = [];
  const workflows = new Set<string>();
  for (const group of groups) {
    const members = (c.q('jobGroupMembers').all(group) as Row[]).map((r) => ({ ...toJob(r), group_checked: Boolean(r.group_checked) }));
    const arrivals = members.filter((m) => !m.group_checked);
    for (const a of arrivals) workflows.add(a.workflow_id);
    for (const { job, reason } of arrivalCancels(group, members)) cancelGroupJob(c, job, reason, nowMs, changes);
    c.q('markGroupChecked').run(JSON.stringify(arrivals.map((a) => a.row_id)));
  }
  return { changes, workflows: [...workflows], groups: groups.length };
}

function cancelGroupJob(c: Conn, job: JobRecord, reason: string, nowMs: number, changes: JobChange[]): void {
  if (job.status === 'running' && job.lease_id !== null) c.q('closeLease').run('cancelled', job.lease_id);
  const cancelled = toJob(c.q('cancelGroupJob').get(nowMs, reason, job.row_id) as Row);
  changes.push(change(cancelled));
  const { skipped } = propagateEnd(c, job, [endedJob(cancelled)], nowMs, changes);
  finishJobs(c, job, { finished: 1 + skipped, failed: 0, cancelled: 1 }, nowMs);
}
