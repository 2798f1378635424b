import { conditionHolds, endedJob, propagate, type WaitingJob } from '../domain/conditions.js';
import { dependentsOf } from '../domain/dag.js';
import { labelKey, normalizeLabels } from '../domain/labels.js';
import type { WorkflowDefinition } from '../domain/types.js';
import type { LabelSet, NewJob } from '../store/store.js';

/**
 * The rows a new run of `def` starts with: roots queued at once, every other job pending with one
 * pending need per entry of `needs` (README "How a run works"). A root whose condition is false at the
 * start (`failure()`, `cancelled()`) is skipped right away, and so is what that decides below it.
 */
export function planRun(def: WorkflowDefinition, nowMs: number): { jobs: NewJob[]; labelSets: LabelSet[] } {
  const dependents = dependentsOf(def.jobs.map((s) => ({ job_id: s.id, needs: s.needs })));
  const labelSets = new Map<string, LabelSet>();
  const conditional = new Set(def.jobs.filter((s) => (s.condition ?? 'success') !== 'success').map((s) => s.id));
  const jobs = def.jobs.map((spec): NewJob => {
    const labels = normalizeLabels(spec.labels);
    const key = labelKey(labels);
    if (!labelSets.has(key)) labelSets.set(key, { key, labels });
    const root = spec.needs.length === 0;
    return {
      workflow_id: def.id,
      job_id: spec.id,
      name: spec.name,
      command: spec.command,
      env: { ...def.env, ...spec.env },
      labels,
      label_key: key,
      needs: spec.needs,
      dependents: dependents.get(spec.id) ?? [],
      pending_needs: spec.needs.length,
      condition: spec.condition ?? 'success',
      needs_results: {},
      failed_upstream: false,
      run_cancelled: false,
      conditional_dependents: (dependents.get(spec.id) ?? []).some((d) => conditional.has(d)),
      max_retries: spec.max_retries,
      backoff: spec.backoff,
      timeout_secs: spec.timeout_secs,
      status: root ? 'queued' : 'pending',
      attempt: 0,
      enqueued_at_ms: root ? nowMs : 0,
      delayed_until_ms: 0,
      ready_at_ms: root ? nowMs : 0,
      started_at_ms: null,
      finished_at_ms: null,
      deadline_ms: null,
      error: null,
      outputs: null,
      upstream_outputs: {},
      worker_id: null,
      lease_id: null,
    };
  });
  decideRoots(jobs, nowMs);
  return { jobs, labelSets: [...labelSets.values()] };
}

function decideRoots(jobs: NewJob[], nowMs: number): void {
  const byId = new Map<string, NewJob>(jobs.map((j) => [j.job_id, j]));
  const skipped = jobs.filter((j) => j.needs.length === 0 && !conditionHolds(j));
  if (skipped.length === 0) return;
  for (const j of skipped) {
    Object.assign(j, { status: 'skipped', enqueued_at_ms: 0, ready_at_ms: 0, finished_at_ms: nowMs, error: `if: ${j.condition}() is false at the start of the run` });
  }
  const changed = propagate(skipped.map(endedJob), (id) => byId.get(id) as WaitingJob | undefined);
  for (const j of changed as unknown as NewJob[]) {
    if (j.status === 'skipped') j.finished_at_ms = nowMs;
    if (j.status === 'queued') {
      j.enqueued_at_ms = nowMs;
      j.ready_at_ms = nowMs;
      // Its needs were all skipped here, so none has outputs; each is listed, as a completion lists them.
      j.upstream_outputs = Object.fromEntries(j.needs.map((n) => [n, {}]));
    }
  }
}
