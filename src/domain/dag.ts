import type { JobState, UpstreamOutputs, Outputs } from './types.js';

/** The minimum a DAG rule needs to know about a job of a run. */
export interface DagNode {
  job_id: string;
  needs: readonly string[];
  status: JobState;
  outputs: Outputs | null;
}

/**
 * Pending jobs whose every `needs` entry is now `success`, each with the outputs of its direct needs.
 * Called after a job succeeds; only direct dependents of `finishedJobId` can have become ready.
 */
export function newlyReady(
  nodes: readonly DagNode[],
  finishedJobId: string,
): Array<{ job_id: string; upstream_outputs: UpstreamOutputs }> {
  const byId = new Map(nodes.map((n) => [n.job_id, n]));
  const ready: Array<{ job_id: string; upstream_outputs: UpstreamOutputs }> = [];
  for (const node of nodes) {
    if (node.status !== 'pending' || !node.needs.includes(finishedJobId)) continue;
    const upstream: UpstreamOutputs = {};
    let allDone = true;
    for (const need of node.needs) {
      const dep = byId.get(need);
      if (!dep || dep.status !== 'success') {
        allDone = false;
        break;
      }
      upstream[need] = { ...(dep.outputs ?? {}) };
    }
    if (allDone) ready.push({ job_id: node.job_id, upstream_outputs: upstream });
  }
  return ready;
}

/** Direct dependents of every job (the inverse of `needs`), in definition order. */
export function dependentsOf(nodes: readonly Pick<DagNode, 'job_id' | 'needs'>[]): Map<string, string[]> {
  const out = new Map<string, string[]>(nodes.map((n) => [n.job_id, []]));
  for (const n of nodes) for (const need of n.needs) out.get(need)?.push(n.job_id);
  return out;
}
