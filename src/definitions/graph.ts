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
  const ids = new Set(jobs.map((j) => j.id));
  const edges = new Map<string, string[]>();
  for (const job of jobs) {
    const valid: string[] = [];
    for (const dep of job.needs) {
      if (dep === job.id) {
        issues.add(job.id, needsField, `job depends on itself ('${dep}')`);
      } else if (!ids.has(dep)) {
        const others = jobs.map((j) => j.id).filter((id) => id !== job.id);
        const hint = closestKey(dep, others);
        const list = others.length > 0 ? `jobs are: ${listNames(others)}` : 'there are no other jobs';
        issues.add(job.id, needsField, `unknown job '${dep}'${hint !== null ? ` (did you mean '${hint}'?)` : ''} (${list})`);
      } else {
        valid.push(dep);
      }
    }
    edges.set(job.id, valid);
  }
  for (const cycle of findCycles(jobs.map((j) => j.id), edges)) {
    issues.add(cycle[0]!, needsField, `cycle: ${cycle.join(' -> ')} (each job needs the next)`);
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
        cycles.push(rotateToFirst(path, order));
      }
    }
  };

  for (const id of order) if (!state.has(id)) visit(id);
  return cycles;
}

function rotateToFirst(path: string[], order: readonly string[]): string[] {
  let start = 0;
  path.forEach((n, i) => {
    if (order.indexOf(n) < order.indexOf(path[start]!)) start = i;
  });
  const rotated = [...path.slice(start), ...path.slice(0, start)];
  return [...rotated, rotated[0]!];
}

// A workflow with hundreds of jobs would otherwise bury the message under the list.
function listNames(names: readonly string[], max = 20): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')}, … (${names.length - max} more)`;
}
