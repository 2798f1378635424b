/**
 * Concurrency groups of jobs (README "Concurrency groups"), GitHub Actions' semantics: of all the jobs,
 * of any run or workflow, in one group, at most one runs (the claim sees to that) and at most one
 * waits. A job arriving in the group (queued for the first time) replaces the group's waiting jobs,
 * which are cancelled; with `cancel_in_progress` it also has the running one cancelled. Both stores
 * settle arrivals with this rule, under the group's lock.
 */

/** A job of a group as its store reads it: queued (waiting) or running. */
export interface GroupMember {
  workflow_id: string;
  run_number: number;
  job_id: string;
  row_id: number;
  status: string;
  enqueued_at_ms: number;
  cancel_in_progress: boolean;
  /** False for a job whose arrival has not been settled yet. */
  group_checked: boolean;
}

export interface GroupCancel<M extends GroupMember> {
  job: M;
  /** The job's error: why it was cancelled, naming the job that arrived. */
  reason: string;
}

/**
 * The cancels the arrivals among `members` (the group's queued and running jobs) call for, each
 * arrival in turn in order of arrival, as if it had been settled on its own: it replaces the jobs
 * queued before it, and with cancel_in_progress cancels those running before it.
 */
export function arrivalCancels<M extends GroupMember>(group: string, members: readonly M[]): GroupCancel<M>[] {
  const ordered = [...members].sort((a, b) => a.enqueued_at_ms - b.enqueued_at_ms || a.row_id - b.row_id);
  const cancelled = new Map<M, string>();
  ordered.forEach((arrival, i) => {
    if (arrival.group_checked || cancelled.has(arrival)) return;
    for (const earlier of ordered.slice(0, i)) {
      if (cancelled.has(earlier)) continue;
      if (earlier.status === 'queued') cancelled.set(earlier, `replaced in concurrency group "${group}" by ${jobName(arrival)}`);
      else if (earlier.status === 'running' && arrival.cancel_in_progress) {
        cancelled.set(earlier, `cancelled in progress in concurrency group "${group}" by ${jobName(arrival)}`);
      }
    }
  });
  return [...cancelled].map(([job, reason]) => ({ job, reason }));
}

function jobName(j: GroupMember): string {
  return `job "${j.job_id}" of run #${j.run_number} of "${j.workflow_id}"`;
}
