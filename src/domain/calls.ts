/**
 * Workflows calling workflows (README "Workflows calling workflows"): a job `uses: <workflow>` starts a
 * run of that workflow (its child) and ends as the child ends. The pure rules: how deep calls may
 * nest, whether a definition would close a cycle or nest too deep, what a child hands back as its
 * caller's outputs, and the error its caller's job ends with.
 */
import { substitute } from './expressions.js';
import { groupOfInstance } from './matrix.js';
import type { WorkflowDefinition } from './model.js';

/** At most this many nested calls: a run started by hand is at depth 0, the deepest child at depth 5. */
export const MAX_CALL_DEPTH = 5;

/**
 * The label key of every job that calls a workflow. No label set has it (labelKey answers '' or a JSON
 * array), and the engine never records it as one, so no claim ever reads its jobs: the engine starts
 * them (docs/architecture.md "Workflows calling workflows"), at the cost of nothing in the claim.
 */
export const CALL_LABEL_KEY = 'call';

/** What a job that calls a workflow carries on its row: the workflow and the input values (templates). */
export interface JobCall {
  uses: string;
  with: Record<string, string>;
}

/** The workflows a definition calls, each once, in job order. */
export function callsOf(def: Pick<WorkflowDefinition, 'jobs'>): string[] {
  return [...new Set(def.jobs.flatMap((j) => (j.uses !== undefined ? [j.uses] : [])))];
}

/** Why a definition may not be saved: the chain of workflows (ids, caller first) it would make. */
export interface CallChainProblem {
  kind: 'cycle' | 'depth';
  chain: string[];
}

/**
 * Whether `id`, calling `callees`, would close a cycle or make a chain of more than MAX_CALL_DEPTH
 * nested calls, given the calls every other workflow makes (`calleesOf`, `callersOf`: the saved calls,
 * `id`'s own left out, since `callees` replace them). The store loads those calls to at least
 * MAX_CALL_DEPTH + 1 steps either way and asks this under a lock, so two saves cannot each pass alone
 * and together close a cycle.
 */
export function callChainProblem(
  id: string,
  callees: readonly string[],
  calleesOf: (workflow: string) => readonly string[],
  callersOf: (workflow: string) => readonly string[],
): CallChainProblem | null {
  if (callees.includes(id)) return { kind: 'cycle', chain: [id, id] };
  // Down: the longest chain of calls below `id`, or a way back to it. Saved calls hold no cycle (each
  // save was checked), so memoising each workflow's longest chain is exact.
  const below = new Map<string, string[]>();
  const onPath = new Set<string>([id]);
  let cycle: string[] | null = null;
  const down = (w: string, path: readonly string[]): string[] => {
    const known = below.get(w);
    if (known) return known;
    onPath.add(w);
    let longest: string[] = [w];
    for (const next of calleesOf(w)) {
      if (onPath.has(next)) {
        cycle = [...path, w, next];
        break;
      }
      const chain = down(next, [...path, w]);
      if (cycle) break;
      if (chain.length + 1 > longest.length) longest = [w, ...chain];
    }
    onPath.delete(w);
    below.set(w, longest);
    return longest;
  };
  let deepest: string[] = [id];
  for (const c of callees) {
    const chain = down(c, [id]);
    if (cycle) return { kind: 'cycle', chain: cycle };
    if (chain.length + 1 > deepest.length) deepest = [id, ...chain];
  }
  // Up: the longest chain of callers that ends at `id`.
  const above = new Map<string, string[]>();
  const upPath = new Set<string>([id]);
  const up = (w: string): string[] => {
    const known = above.get(w);
    if (known) return known;
    upPath.add(w);
    let longest: string[] = [w];
    for (const caller of callersOf(w)) {
      if (upPath.has(caller)) continue;
      const chain = up(caller);
      if (chain.length + 1 > longest.length) longest = [...chain, w];
    }
    upPath.delete(w);
    above.set(w, longest);
    return longest;
  };
  const chain = [...up(id).slice(0, -1), ...deepest];
  return chain.length - 1 > MAX_CALL_DEPTH ? { kind: 'depth', chain } : null;
}

/** A refused save in words, naming the chain (README "Workflows calling workflows"). */
export function callChainMessage(id: string, p: CallChainProblem): string {
  const at = p.chain.indexOf(id);
  const callee = p.chain[at + 1] ?? p.chain[1]!;
  const chain = p.chain.join(' → ');
  if (p.kind === 'cycle') {
    return callee === id
      ? `a workflow cannot call itself (uses: ${id})`
      : `calling "${callee}" makes a cycle: ${chain}; a workflow may not call itself through others`;
  }
  return `calling "${callee}" makes the call chain ${chain}, ${p.chain.length - 1} calls deep; at most ${MAX_CALL_DEPTH} nested calls are allowed`;
}

/** One job of a child run, as its outputs are read. */
export interface ChildJob {
  job_id: string;
  status: string;
  outputs: Record<string, string> | null;
  finished_at_ms: number | null;
}

/**
 * The outputs a successful child run hands to its caller's job: the called workflow's `outputs:`, each
 * with `${{ jobs.<job>.outputs.<key> }}` (of a matrix or fan-out job: its instance that finished last,
 * as GitHub Actions does), `${{ inputs.<name> }}` and literals filled in. A job that did not run, or has
 * no such output, gives ''.
 */
export function childOutputs(def: Pick<WorkflowDefinition, 'outputs'>, inputs: Readonly<Record<string, string>>, jobs: readonly ChildJob[]): Record<string, string> {
  const out: Array<[string, string]> = [];
  for (const [name, spec] of Object.entries(def.outputs ?? {})) {
    out.push([
      name,
      substitute(spec.value, (ref) => {
        if (ref.kind === 'inputs') return Object.hasOwn(inputs, ref.key) ? inputs[ref.key] : '';
        if (ref.kind !== 'jobs_output') return '';
        const candidates = jobs.filter((j) => (j.job_id === ref.job || groupOfInstance(j.job_id) === ref.job) && j.outputs !== null && Object.hasOwn(j.outputs, ref.key));
        // The last to finish; in row order among equals (the later instance).
        let last: ChildJob | undefined;
        for (const j of candidates) if (!last || (j.finished_at_ms ?? 0) >= (last.finished_at_ms ?? 0)) last = j;
        return last ? last.outputs![ref.key]! : '';
      }),
    ]);
  }
  // An output may be named `__proto__`: fromEntries defines own properties, never the prototype.
  return Object.fromEntries(out);
}

/** At most this much of a child's failed jobs' errors goes into its caller's error. */
const MAX_CHILD_ERROR_CHARS = 2000;

/**
 * The error of a caller's job whose child run did not succeed: which run, how it ended, and the failed
 * jobs with the first line of each one's error.
 */
export function childFailure(child: { workflow_id: string; run_number: number; state: 'failed' | 'cancelled' }, jobs: ReadonlyArray<Pick<ChildJob, 'job_id' | 'status'> & { error: string | null }>): string {
  const head = `called workflow "${child.workflow_id}" run #${child.run_number} ${child.state === 'cancelled' ? 'was cancelled' : 'failed'}`;
  const failed = jobs.filter((j) => j.status === 'failed');
  if (failed.length === 0) return head;
  const parts = failed.map((j) => `${j.job_id}${j.error ? `: ${j.error.split('\n', 1)[0]}` : ''}`);
  const text = `${head}: failed ${failed.length === 1 ? 'job' : 'jobs'} ${parts.join('; ')}`;
  return text.length > MAX_CHILD_ERROR_CHARS ? `${text.slice(0, MAX_CHILD_ERROR_CHARS - 1)}…` : text;
}

/** One saved call: `caller_id`'s definition has a job `uses: callee_id`. */
export interface CallEdge {
  caller_id: string;
  callee_id: string;
}

/**
 * Loads what callChainProblem needs of the saved calls, a level at a time: the calls below the new
 * callees and the callers above `id`, each to MAX_CALL_DEPTH + 1 levels (a longer chain is too deep
 * already). Both stores drive it the same way, each with its own statement (`next`, fetch the edges
 * from `from` or to `to`, `add`, until `next` answers null), then ask `problem`.
 */
export class CallGraphLoader {
  private readonly calleesOf = new Map<string, string[]>();
  private readonly callersOf = new Map<string, string[]>();
  private downFrontier: string[];
  private upFrontier: string[];
  private readonly seenDown = new Set<string>();
  private readonly seenUp = new Set<string>();
  private levels = 0;

  constructor(
    private readonly id: string,
    private readonly callees: readonly string[],
  ) {
    this.downFrontier = [...new Set(callees)].filter((c) => c !== id);
    this.upFrontier = [id];
    for (const c of this.downFrontier) this.seenDown.add(c);
    this.seenUp.add(id);
  }

  /** The workflows whose calls (`from`) and callers (`to`) to read next; null once enough is loaded. */
  next(): { from: string[]; to: string[] } | null {
    if (this.levels > MAX_CALL_DEPTH || (this.downFrontier.length === 0 && this.upFrontier.length === 0)) return null;
    this.levels++;
    const ask = { from: this.downFrontier, to: this.upFrontier };
    this.downFrontier = [];
    this.upFrontier = [];
    return ask;
  }

  /** The saved calls read for the last `next`. The saving workflow's own calls are left out: its new ones replace them. */
  add(edges: readonly CallEdge[], asked: { from: readonly string[]; to: readonly string[] }): void {
    const from = new Set(asked.from);
    const to = new Set(asked.to);
    for (const e of edges) {
      if (e.caller_id === this.id) continue;
      if (from.has(e.caller_id)) {
        push(this.calleesOf, e.caller_id, e.callee_id);
        if (!this.seenDown.has(e.callee_id) && e.callee_id !== this.id) {
          this.seenDown.add(e.callee_id);
          this.downFrontier.push(e.callee_id);
        }
      }
      if (to.has(e.callee_id)) {
        push(this.callersOf, e.callee_id, e.caller_id);
        if (!this.seenUp.has(e.caller_id)) {
          this.seenUp.add(e.caller_id);
          this.upFrontier.push(e.caller_id);
        }
      }
    }
  }

  problem(): CallChainProblem | null {
    return callChainProblem(this.id, this.callees, (w) => this.calleesOf.get(w) ?? [], (w) => this.callersOf.get(w) ?? []);
  }
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) {
    if (!list.includes(value)) list.push(value);
  } else {
    map.set(key, [value]);
  }
}
