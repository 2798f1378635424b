/**
 * Dependency checks across jobs: every `needs` entry must exist, and the graph must be acyclic
 * (otherwise a run could never finish). Runs after per-job checks so it sees every job id.
 */
import type { Issues } from './issues.js';
import { closestKey } from './suggest.js';

export interface GraphJob {
  id: string;
  needs: string[];
}

export function checkGraph(jobs: readonly GraphJob[], needsField: string, issues: Issues): void {
  const order = jobs.map((j) => j.id);
  const ids = new Set(order);
  const edges = new Map<string, string[]>();
  for (const job of jobs) {
    const valid: string[] = [];
    for (const dep of job.needs) {
      if (dep === job.id) {
        issues.add(job.id, needsField, `job depends on itself ('${dep}')`);
      } else if (!ids.has(dep)) {
        // Bounded work per entry, so a huge request body full of bad entries stays cheap to reject.
        const hint = order.length <= 200 ? closestKey(dep, order.filter((id) => id !== job.id)) : null;
        const list = order.length > 1 ? `jobs are: ${listNames(order, job.id)}` : 'there are no other jobs';
        issues.add(job.id, needsField, `unknown job '${dep}' (${list})${hint !== null ? `; did you mean '${hint}'?` : ''}`);
      } else {
        valid.push(dep);
      }
    }
    edges.set(job.id, valid);
  }
  for (const cycle of findCycles(order, edges)) {
    issues.add(cycle[0]!, needsField, `cycle: ${cyclePath(cycle)} (each job needs the next)`);
  }
}

/**
 * One reported cycle per strongly connected group is enough to fix the file; listing every
 * elementary cycle could be exponential. Each path starts and ends at its first job in definition order.
 */
function findCycles(order: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const onCycle = new Set<string>();
  const position = new Map(order.map((id, i) => [id, i]));

  // Iterative, so a long chain of jobs in a request body cannot overflow the call stack.
  const visit = (root: string): void => {
    const frames: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    state.set(root, 'open');
    stack.push(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const deps = edges.get(frame.node) ?? [];
      if (frame.next >= deps.length) {
        frames.pop();
        stack.pop();
        state.set(frame.node, 'done');
        continue;
      }
      const dep = deps[frame.next++]!;
      const s = state.get(dep);
      if (s === undefined) {
        state.set(dep, 'open');
        stack.push(dep);
        frames.push({ node: dep, next: 0 });
      } else if (s === 'open' && !onCycle.has(dep)) {
        const path = stack.slice(stack.indexOf(dep));
        path.forEach((n) => onCycle.add(n));
        cycles.push(rotateToFirst(path, position));
      }
    }
  };

  for (const id of order) if (!state.has(id)) visit(id);
  return cycles;
}

function rotateToFirst(path: string[], position: ReadonlyMap<string, number>): string[] {
  let start = 0;
  path.forEach((n, i) => {
    if (position.get(n)! < position.get(path[start]!)!) start = i;
  });
  const rotated = [...path.slice(start), ...path.slice(0, start)];
  return [...rotated, rotated[0]!];
}

// A workflow with hundreds of jobs would otherwise bury the message under the list.
function listNames(order: readonly string[], except: string, max = 20): string {
  const shown: string[] = [];
  for (const id of order) {
    if (id === except) continue;
    if (shown.length === max) return `${shown.join(', ')}, … (${order.length - 1 - max} more)`;
    shown.push(id);
  }
  return shown.join(', ');
}

function cyclePath(cycle: readonly string[], max = 20): string {
  if (cycle.length <= max + 1) return cycle.join(' -> ');
  const hidden = cycle.length - 1 - max;
  return `${cycle.slice(0, max).join(' -> ')} -> … (${hidden} more) -> ${cycle[0]!}`;
}
