import type { JobState, UpstreamOutputs, Outputs } from './types.js';

/** The minimum a DAG rule needs to know about a job of a run. */
export interface DagNode {
  job_id: string;
  needs: readonly string[];
  status: JobState;
  outputs: Outputs | null;
}

/** Jobs with no `needs`: the ones a new run enqueues. */
export function rootJobIds(nodes: readonly Pick<DagNode, 'job_id' | 'needs'>[]): string[] {
  return nodes.filter((n) => n.needs.length === 0).map((n) => n.job_id);
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

/** Every job transitively downstream of `jobId` (not including it), in no particular order. */
export function downstreamOf(nodes: readonly Pick<DagNode, 'job_id' | 'needs'>[], jobId: string): Set<string> {
  const dependents = new Map<string, string[]>();
  for (const n of nodes) {
    for (const need of n.needs) {
      const list = dependents.get(need);
      if (list) list.push(n.job_id);
      else dependents.set(need, [n.job_id]);
    }
  }
  const out = new Set<string>();
  const stack = [jobId];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const d of dependents.get(current) ?? []) {
      if (!out.has(d)) {
        out.add(d);
        stack.push(d);
      }
    }
  }
  return out;
}
