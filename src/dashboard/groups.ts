/**
 * Matrix and fan-out jobs in the graph (README "Matrix, fan-out and artifacts"): the instances of one
 * definition job (`group`, ids `<job>~<index>`) are drawn as one node with their count and state
 * counts, and the edges to and from them as edges of that node. A group not yet expanded (its own id
 * as `group`) is an ordinary job until its instances exist.
 */
import type { JobState } from '../domain/model.js';
import type { JobView } from '../protocol/wire.js';

export interface GroupSummary {
  /** The instances, in index order. */
  instances: JobView[];
  /** How many have ended (success, failed, skipped or cancelled). */
  done: number;
  counts: Partial<Record<JobState, number>>;
}

/** A node of the graph: a job, or a group standing for its instances. */
export interface GraphNode {
  id: string;
  name: string;
  state: JobState;
  depends_on: string[];
  /** The job itself; absent for a group. */
  job?: JobView;
  group?: GroupSummary;
}

const ENDED: ReadonlySet<JobState> = new Set(['success', 'failed', 'skipped', 'cancelled']);

/**
 * One state for a group: what still moves first (running, queued, pending), then how it ended, worst
 * first, so that a failed instance shows once the others are done.
 */
export function groupState(counts: Partial<Record<JobState, number>>): JobState {
  for (const s of ['running', 'queued', 'pending', 'failed', 'cancelled', 'success'] as const) if (counts[s]) return s;
  return 'skipped';
}

/** How many of `instances` have ended and how many are in each state. */
export function summarize(instances: JobView[]): GroupSummary {
  const counts: Partial<Record<JobState, number>> = {};
  for (const i of instances) counts[i.state] = (counts[i.state] ?? 0) + 1;
  return { instances, done: instances.filter((i) => ENDED.has(i.state)).length, counts };
}

/** The group an instance belongs to; null for a plain job or a group not yet expanded. */
export function groupOf(job: JobView): string | null {
  return job.group !== undefined && job.group !== job.id ? job.group : null;
}

/** `test (linux, 20)` → `test`: the definition job's name, when every instance's name is it plus its values. */
function groupName(id: string, instances: JobView[]): string {
  const bases = new Set(instances.map((j) => j.name.replace(/ \([^()]*\)$/, '')));
  return bases.size === 1 ? [...bases][0]! : id;
}

/** The graph's nodes: plain jobs as they are, each group's instances folded into one node. */
export function graphNodes(jobs: JobView[]): GraphNode[] {
  const members = new Map<string, JobView[]>();
  for (const j of jobs) {
    const g = groupOf(j);
    if (g !== null) members.set(g, [...(members.get(g) ?? []), j]);
  }
  const nodeOf = (id: string): string => {
    const j = id.indexOf('~');
    const g = j > 0 ? id.slice(0, j) : null;
    return g !== null && members.has(g) ? g : id;
  };
  const edges = (deps: string[], self: string) => [...new Set(deps.map(nodeOf))].filter((d) => d !== self);
  const nodes: GraphNode[] = [];
  const placed = new Set<string>();
  for (const j of jobs) {
    const g = groupOf(j);
    if (g === null) {
      nodes.push({ id: j.id, name: j.name, state: j.state, depends_on: edges(j.depends_on, j.id), job: j });
      continue;
    }
    if (placed.has(g)) continue;
    placed.add(g);
    const instances = members.get(g)!;
    const group = summarize(instances);
    nodes.push({
      id: g,
      name: groupName(g, instances),
      state: groupState(group.counts),
      depends_on: edges(instances.flatMap((i) => i.depends_on), g),
      group,
    });
  }
  return nodes;
}
