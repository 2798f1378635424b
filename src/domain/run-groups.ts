/**
 * Concurrency groups of runs (README "Concurrency groups"), GitHub Actions' semantics: of all the runs,
 * of any workflow, in one group, at most one is running and at most one waits. A start that finds the
 * group busy waits, and replaces the run that was waiting (cancelled); with `cancel_in_progress` it has
 * the running one cancelled instead of waiting for it to end. Both stores decide with this, under the
 * group's lock.
 */

export interface GroupRun {
  workflow_id: string;
  run_number: number;
  status: string;
}

export interface GroupDecision {
  /** Waiting runs the newcomer replaces: cancelled before they start. */
  replaced: GroupRun[];
  /** Running runs to cancel (cancel_in_progress); the newcomer starts once they have ended. */
  supersede: GroupRun[];
  /** True: the newcomer waits (queued) for the group. */
  wait: boolean;
}

/** `active`: the group's running and queued runs, as read under its lock. */
export function groupDecision(active: readonly GroupRun[], cancelInProgress: boolean): GroupDecision {
  const running = active.filter((r) => r.status === 'running');
  return {
    replaced: active.filter((r) => r.status === 'queued'),
    supersede: cancelInProgress ? running : [],
    wait: running.length > 0,
  };
}

/** What a start that waits tells its caller: the runs replaced and those to cancel, by key. */
export function groupOutcome(group: GroupDecision): { replaced: RunRef[]; supersede: RunRef[] } {
  const ref = (r: GroupRun): RunRef => ({ workflow_id: r.workflow_id, run_number: r.run_number });
  return { replaced: group.replaced.map(ref), supersede: group.supersede.map(ref) };
}

export interface RunRef {
  workflow_id: string;
  run_number: number;
}

/** Whether a queued run of `group` may start now: none of the group's runs is running. */
export function groupIsFree(active: readonly GroupRun[]): boolean {
  return !active.some((r) => r.status === 'running');
}
