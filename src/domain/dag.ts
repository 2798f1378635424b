/**
 * DAG shape rules. A job becomes ready when every entry of its `needs` has succeeded: a run starts
 * each job with one pending need per entry, and each success decrements its direct dependents'
 * counters (docs/architecture.md "Store"), so only the inverse edges are needed here.
 */

/** Direct dependents of every job (the inverse of `needs`), in definition order. */
export function dependentsOf(nodes: readonly { job_id: string; needs: readonly string[] }[]): Map<string, string[]> {
  const out = new Map<string, string[]>(nodes.map((n) => [n.job_id, []]));
  for (const n of nodes) for (const need of n.needs) out.get(need)?.push(n.job_id);
  return out;
}
