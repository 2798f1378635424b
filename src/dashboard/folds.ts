/**
 * Wide levels and long chains of a run's graph folded into single nodes (README "Dashboard"), so that a
 * run of hundreds of jobs opens readable at its first Fit instead of as a one-pixel strip:
 *
 * - a level (the jobs at one depth: the longest way down from a job without needs) holding more than
 *   LEVEL_LIMIT plain jobs folds the jobs of that level that need the same jobs into one node per set
 *   of needs, with their count and state counts as a matrix group shows them (groups.ts);
 * - when the graph still has more than CHAIN_FOLD_ABOVE nodes, each run of CHAIN_MIN or more jobs one
 *   after the other (each the only need of the next, and the next its only dependant) folds into one
 *   node.
 *
 * What a reader triages stays drawn on its own, outside any fold: failed and running jobs, jobs
 * awaiting a person's approval, and the selected job (unless its fold is expanded, where it is drawn
 * anyway). Edges to and from folded jobs become edges of their fold. A fold's id is its key in the
 * set of expanded folds: it depends only on the jobs' depths and needs, not on their states, so a fold
 * stays expanded (or folded) while its jobs move on. Pure: tested in test/unit/dashboard-folds.test.ts.
 */
import type { JobState } from '../domain/model.js';
import type { JobView } from '../protocol/wire.js';
import { groupState, summarize, type GraphNode, type GroupSummary } from './groups.js';

/**
 * The most plain jobs a level keeps before folding. The graph is 100vh − 220 px high (styles.css):
 * 680 px in a 900 px window. A node takes 82 px of a level (64 high, 18 apart), so 10 of them are
 * 842 px with the margins, which fits at a scale of 0.8, where a 13 px name is still 10 px; from 12
 * on it would be under 9 px. A fold whose jobs lead on to more nodes than this is not made either: it
 * would leave the level after it as wide, and its edges would no longer tell which job leads where.
 */
export const LEVEL_LIMIT = 10;
/**
 * Chains are folded only in a graph with more nodes than this (after its levels are): a short
 * pipeline (lint → build → test → deploy) reads best drawn whole, but a large graph is as wide as
 * its longest chain, and 25 stages in a row only fit at a scale where nothing can be read.
 */
export const CHAIN_FOLD_ABOVE = 60;
/** The fewest jobs a folded chain holds: folding two saves too little to hide their names. */
export const CHAIN_MIN = 3;

/** States a reader looks for first: never folded away. */
const KEEP: ReadonlySet<JobState> = new Set(['failed', 'running', 'awaiting_approval']);

export interface Fold {
  kind: 'level' | 'chain';
  /** The folded jobs: in document order for a level, from first to last for a chain. */
  members: JobView[];
  summary: GroupSummary;
  /** Drawn open: each member as its own node, inside the fold's box. */
  expanded: boolean;
  /** What the members need (level), or the jobs before the chain; names, for the tooltip. */
  needs: string[];
}

/** A node of the drawn graph: a job, a matrix group (groups.ts) or a fold of jobs. */
export interface FoldedNode extends GraphNode {
  fold?: Fold;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

/** Longest way down from a job without needs, for every node; a node in a cycle (never made by the server) counts as 0. */
export function depths(nodes: GraphNode[]): Map<string, number> {
  const ids = new Set(nodes.map((n) => n.id));
  const waiting = new Map<string, number>();
  const next = new Map<string, string[]>();
  for (const n of nodes) {
    const needs = n.depends_on.filter((d) => ids.has(d));
    waiting.set(n.id, needs.length);
    for (const d of needs) push(next, d, n.id);
  }
  const depth = new Map<string, number>();
  const ready = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id);
  for (const id of ready) depth.set(id, 0);
  while (ready.length > 0) {
    const id = ready.pop()!;
    for (const c of next.get(id) ?? []) {
      depth.set(c, Math.max(depth.get(c) ?? 0, depth.get(id)! + 1));
      const left = waiting.get(c)! - 1;
      waiting.set(c, left);
      if (left === 0) ready.push(c);
    }
  }
  for (const n of nodes) if (!depth.has(n.id)) depth.set(n.id, 0);
  return depth;
}

/** The words the jobs' names start with (`shard 1`…`shard 40` → `shard`), or null when too short to name them. */
function commonStart(names: string[]): string | null {
  let p = names[0] ?? '';
  for (const n of names) while (!n.startsWith(p)) p = p.slice(0, -1);
  p = p.replace(/[\s\-_.:#(\d]+$/, '');
  return p.length >= 2 ? p : null;
}

function foldNode(kind: Fold['kind'], id: string, name: string, members: JobView[], depends_on: string[], needs: string[], expanded: ReadonlySet<string>): FoldedNode {
  const summary = summarize(members);
  return { id, name, state: groupState(summary.counts), depends_on, fold: { kind, members, summary, expanded: expanded.has(id), needs } };
}

/** Ids of folds that are never job ids: those are [A-Za-z0-9_.-] (and `~` for instances). */
const levelKey = (depth: number, needs: string[]) => `*level:${depth}:${needs.join(',')}`;
const chainKey = (first: string) => `*chain:${first}`;

/**
 * The nodes to draw for `nodes` (graphNodes' output): wide levels and, in a large graph, long chains
 * folded, except the folds in `expanded`. `selected` is the job in the address, drawn on its own.
 */
export function foldGraph(nodes: GraphNode[], expanded: ReadonlySet<string>, selected: string | null): FoldedNode[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const dependants = new Map<string, Set<string>>();
  for (const n of nodes) for (const d of n.depends_on) if (byId.has(d)) (dependants.get(d) ?? dependants.set(d, new Set()).get(d)!).add(n.id);
  const depth = depths(nodes);
  const nameOf = (id: string) => byId.get(id)?.name ?? id;

  // Levels: the plain jobs at each depth, then those needing the same jobs.
  const levels = new Map<number, GraphNode[]>();
  for (const n of nodes) if (n.job) push(levels, depth.get(n.id)!, n);
  const foldOf = new Map<string, string>();
  const folds = new Map<string, FoldedNode>();
  for (const [d, plain] of levels) {
    if (plain.length <= LEVEL_LIMIT) continue;
    const sets = new Map<string, GraphNode[]>();
    for (const n of plain) {
      const needs = [...n.depends_on].sort();
      const key = levelKey(d, needs);
      const open = expanded.has(key);
      if (KEEP.has(n.state) || (n.id === selected && !open)) continue;
      push(sets, key, n);
    }
    for (const [key, members] of sets) {
      if (members.length < 2) continue;
      const next = new Set(members.flatMap((m) => [...(dependants.get(m.id) ?? [])]));
      if (next.size > LEVEL_LIMIT) continue;
      const needs = [...members[0]!.depends_on].sort();
      const start = commonStart(members.map((m) => m.name));
      const name = start ?? (needs.length > 0 ? `after ${needs.map(nameOf).join(', ')}` : 'without needs');
      folds.set(key, foldNode('level', key, name, members.map((m) => m.job!), needs, needs.map(nameOf), expanded));
      for (const m of members) foldOf.set(m.id, key);
    }
  }
  let drawn = place(nodes, foldOf, folds);

  const count = drawn.reduce((sum, n) => sum + (n.fold?.expanded ? n.fold.members.length : 1), 0);
  if (count <= CHAIN_FOLD_ABOVE) return drawn;

  // Chains, in the graph as folded so far: a fold's dependants read as the dependants of its jobs.
  const ids = new Map(drawn.map((n) => [n.id, n]));
  const after = new Map<string, string[]>();
  for (const n of drawn) for (const d of n.depends_on) push(after, d, n.id);
  const foldable = (n: FoldedNode | undefined): n is FoldedNode => n !== undefined && n.job !== undefined && !KEEP.has(n.state);
  const link = (a: FoldedNode): FoldedNode | null => {
    const next = after.get(a.id);
    if (next?.length !== 1) return null;
    const b = ids.get(next[0]!);
    return foldable(b) && b.depends_on.length === 1 ? b : null;
  };
  const linked = new Set<string>();
  for (const n of drawn) if (foldable(n)) {
    const b = link(n);
    if (b) linked.add(b.id);
  }
  const chainOf = new Map<string, string>();
  const chains = new Map<string, FoldedNode>();
  const addChain = (run: FoldedNode[]) => {
    if (run.length < CHAIN_MIN) return;
    const key = chainKey(run[0]!.id);
    const first = run[0]!.name;
    const last = run[run.length - 1]!.name;
    chains.set(key, foldNode('chain', key, `${first} → ${last}`, run.map((m) => m.job!), run[0]!.depends_on, run[0]!.depends_on.map((d) => ids.get(d)?.name ?? d), expanded));
    for (const m of run) chainOf.set(m.id, key);
  };
  for (const n of drawn) {
    if (!foldable(n) || linked.has(n.id)) continue;
    const run = [n];
    for (let b = link(n); b; b = link(b)) run.push(b);
    // The selected job splits a folded chain: it is drawn on its own between the two parts.
    const at = run.findIndex((m) => m.id === selected);
    if (at >= 0 && !expanded.has(chainKey(run[0]!.id))) {
      addChain(run.slice(0, at));
      addChain(run.slice(at + 1));
    } else addChain(run);
  }
  drawn = place(drawn, chainOf, chains);
  return drawn;
}

/** `nodes` with the members of `folds` (by `foldOf`) replaced by their fold, where its first member was; edges follow. */
function place(nodes: FoldedNode[], foldOf: Map<string, string>, folds: Map<string, FoldedNode>): FoldedNode[] {
  if (folds.size === 0) return nodes;
  const to = (id: string) => foldOf.get(id) ?? id;
  const remap = (n: FoldedNode): FoldedNode => {
    const deps = [...new Set(n.depends_on.map(to))].filter((d) => d !== n.id);
    return deps.length === n.depends_on.length && deps.every((d, i) => d === n.depends_on[i]) ? n : { ...n, depends_on: deps };
  };
  const out: FoldedNode[] = [];
  for (const n of nodes) {
    const f = foldOf.get(n.id);
    if (f === undefined) out.push(remap(n));
    else if (folds.get(f)!.fold!.members[0]!.id === n.id) out.push(remap(folds.get(f)!));
  }
  return out;
}
