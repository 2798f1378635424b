/**
 * `${{ needs.<job>.outputs.<key> }}` and `${{ needs.<job>.result }}` (and `${{ secrets.<NAME> }}`) in a
 * job's env values, filled in when the job is leased from the upstream outputs and need results its row carries (README "Matrix,
 * fan-out and artifacts"). A need that is a matrix group answers for all its instances: its output is a
 * JSON array of the instances' values in index order (null where one has none), its result `failure`
 * when any instance failed, else `cancelled` when any was cancelled, else `skipped` when any was
 * skipped, else `success`.
 */
import { substitute } from '../domain/expressions.js';
import { own } from '../domain/keyed.js';
import { groupOfInstance } from '../domain/matrix.js';
import type { JobRecord } from '../store/store.js';

/** A job's needs by the definition job they come from (a group's instances in index order). */
export function needsByGroup(needs: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const n of needs) {
    const g = groupOfInstance(n) ?? n;
    out.set(g, [...(out.get(g) ?? []), n]);
  }
  return out;
}

const RESULT_ORDER = ['failure', 'cancelled', 'skipped'] as const;

/** The result of definition job `group` as `job` sees it. */
export function needResultOf(job: Pick<JobRecord, 'needs' | 'needs_results'>, group: string): string {
  const ids = needsByGroup(job.needs).get(group) ?? [];
  const results = ids.map((id) => own(job.needs_results, id) ?? 'success');
  return RESULT_ORDER.find((r) => results.includes(r)) ?? 'success';
}

function outputOf(job: JobRecord, group: string, key: string): string {
  const ids = needsByGroup(job.needs).get(group) ?? [];
  const isGroup = ids.length !== 1 || ids[0] !== group;
  if (!isGroup) return own(own(job.upstream_outputs, group) ?? {}, key) ?? '';
  return JSON.stringify(ids.map((id) => own(own(job.upstream_outputs, id) ?? {}, key) ?? null));
}

/**
 * The job's env as its worker gets it: needs values, secrets (`secrets`, opened for this claim) and
 * literals filled in, in one pass over each value, so that nothing filled in is read as an expression
 * again (an upstream output that holds `${{ secrets.X }}` stays that text).
 */
export function resolveEnv(job: JobRecord, secrets: ReadonlyMap<string, string> = new Map()): Record<string, string> {
  if (!Object.values(job.env).some((v) => v.includes('${{'))) return job.env;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(job.env)) {
    out[k] = substitute(v, (ref) => {
      if (ref.kind === 'needs_output') return outputOf(job, ref.job, ref.key);
      if (ref.kind === 'needs_result') return needResultOf(job, ref.job);
      if (ref.kind === 'secrets') return secrets.get(ref.name);
      return undefined;
    });
  }
  return out;
}
