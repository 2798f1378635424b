import { beginWait, beginWaits, newApproval, readyState } from '../domain/approval.js';
import { conditionHolds, endedJob, propagate, type WaitingJob } from '../domain/conditions.js';
import { dependentsOf } from '../domain/dag.js';
import { escapeExpressions } from '../domain/expressions.js';
import { inputEnvName } from '../domain/inputs.js';
import { jobPriority } from '../domain/priority.js';
import { own } from '../domain/keyed.js';
import { labelKey, normalizeLabels } from '../domain/labels.js';
import type { UpstreamOutputs, WorkflowDefinition } from '../domain/model.js';
import type { JobRecord, LabelSet, NewJob } from '../store/store.js';
import { expandJobs } from './expand.js';
import { EVENT_NAME_ENV, type RunEvent } from '../domain/triggers.js';
import { CALL_LABEL_KEY } from '../domain/calls.js';
import { expandFanOut, rewireBelow } from '../store/fan-out.js';

export interface PlanOptions {
  /** The run's inputs, each given to every job as `WEFT_INPUT_<NAME>`. */
  inputs?: Readonly<Record<string, string>>;
  /**
   * A re-run (README "Re-running a run"): these jobs of an earlier run start as `success` with that
   * run's outputs and times, and count as satisfied needs for the rest.
   */
  kept?: ReadonlyMap<string, JobRecord>;
  /** The run's priority (README "Priorities"): every job of the run is queued with it; absent: each job's own. */
  priority?: number;
  /**
   * The event the run was started with (README "Triggers and notifications"): `${{ event.* }}` is filled
   * in, and every job gets its name in `WEFT_EVENT_NAME`, which also tells a claim to carry the payload.
   */
  event?: RunEvent | null;
}

/**
 * The rows a new run of `def` starts with: roots queued at once, every other job pending with one
 * pending need per entry of `needs` (README "How a run works"). A kept job is no pending need, so a job
 * whose needs are all kept is queued at once with their outputs. A job ready at the start whose
 * condition is false there (`failure()`, `cancelled()`) is skipped right away, and so is what that
 * decides below it.
 */
export function planRun(def: WorkflowDefinition, nowMs: number, opts: PlanOptions = {}): { jobs: NewJob[]; labelSets: LabelSet[] } {
  const { specs } = expandJobs(def, opts.inputs ?? {}, opts.event);
  const dependents = dependentsOf(specs.map((s) => ({ job_id: s.id, needs: s.needs })));
  // Env values are read for expressions again when a job is leased: an input's is text to that pass.
  const inputEnv = Object.fromEntries(Object.entries(opts.inputs ?? {}).map(([name, value]) => [inputEnvName(name), escapeExpressions(value)]));
  if (opts.event) inputEnv[EVENT_NAME_ENV] = escapeExpressions(opts.event.name);
  const kept = opts.kept ?? new Map<string, JobRecord>();
  const labelSets = new Map<string, LabelSet>();
  // A for_each job is expanded by the general way of a need's end (propagate), as conditions are; a
  // job with an approval gate is made to wait there too (README "Approvals"), never queued at once.
  const conditional = new Set(
    specs.filter((s) => (s.condition ?? 'success') !== 'success' || s.for_each !== null || s.approval !== undefined).map((s) => s.id),
  );
  const jobs = specs.map((spec): NewJob => {
    const labels = normalizeLabels(spec.labels);
    // A job that calls a workflow is started by the engine, never claimed (README "Workflows calling
    // workflows"): its key is one no label set has, and it is not recorded as one.
    const key = spec.call ? CALL_LABEL_KEY : labelKey(labels);
    if (!spec.call && !labelSets.has(key)) labelSets.set(key, { key, labels });
    const was = kept.get(spec.id);
    const keptNeeds = spec.needs.filter((n) => kept.has(n));
    const upstream: UpstreamOutputs = Object.fromEntries(keptNeeds.map((n) => [n, kept.get(n)!.outputs ?? {}]));
    const ready = was === undefined && keptNeeds.length === spec.needs.length;
    // A re-run's kept job shows the decision of the run it is kept from; every other gated job waits again.
    const approval = was !== undefined ? (was.approval ?? null) : spec.approval ? newApproval(spec.approval) : null;
    const readyAs = readyState({ approval });
    return {
      workflow_id: def.id,
      job_id: spec.id,
      name: spec.name,
      command: spec.command,
      // Inputs (and the event's name) last: they are the run's own values, whatever the definition's env says.
      env: { ...def.env, ...spec.env, ...inputEnv },
      labels,
      label_key: key,
      needs: spec.needs,
      dependents: dependents.get(spec.id) ?? [],
      pending_needs: spec.needs.length - keptNeeds.length,
      condition: spec.condition ?? 'success',
      needs_results: {},
      failed_upstream: false,
      run_cancelled: false,
      conditional_dependents: (dependents.get(spec.id) ?? []).some((d) => conditional.has(d)),
      max_retries: spec.max_retries,
      backoff: spec.backoff,
      timeout_secs: spec.timeout_secs,
      status: was !== undefined ? 'success' : ready ? readyAs : 'pending',
      attempt: was?.attempt ?? 0,
      enqueued_at_ms: was?.enqueued_at_ms ?? (ready && readyAs === 'queued' ? nowMs : 0),
      delayed_until_ms: 0,
      ready_at_ms: was?.ready_at_ms ?? (ready && readyAs === 'queued' ? nowMs : 0),
      priority: jobPriority(opts.priority, spec.priority, def.priority),
      started_at_ms: was?.started_at_ms ?? null,
      finished_at_ms: was?.finished_at_ms ?? null,
      deadline_ms: null,
      error: null,
      outputs: was !== undefined ? (was.outputs ?? {}) : null,
      upstream_outputs: upstream,
      artifact_spec: spec.artifacts || spec.download ? { paths: spec.artifacts ?? [], download: spec.download ?? [] } : null,
      worker_id: was?.worker_id ?? null,
      lease_id: null,
      group_id: spec.group_id,
      matrix: spec.matrix,
      max_parallel: spec.max_parallel,
      fail_fast: spec.fail_fast,
      for_each: spec.for_each,
      item: null,
      item_index: null,
      concurrency_group: spec.concurrency_group,
      cancel_in_progress: spec.cancel_in_progress,
      approval: was === undefined && ready && approval ? beginWait(approval, nowMs) : approval,
      // A kept call keeps the child run it ended with.
      ...(spec.call ? { call: spec.call, child_run: was?.child_run ?? null } : {}),
    };
  });
  decideReady(jobs, nowMs);
  return { jobs: expandReadyFanOuts(jobs, nowMs), labelSets: [...labelSets.values()] };
}

/** Skips the jobs ready at the start whose condition is false, and what that decides below them. */
function decideReady(jobs: NewJob[], nowMs: number): void {
  const byId = new Map<string, NewJob>(jobs.map((j) => [j.job_id, j]));
  const skipped = jobs.filter((j) => (j.status === 'queued' || j.status === 'awaiting_approval') && !conditionHolds(j));
  if (skipped.length === 0) return;
  for (const j of skipped) {
    Object.assign(j, { status: 'skipped', enqueued_at_ms: 0, ready_at_ms: 0, finished_at_ms: nowMs, error: `if: ${j.condition}() is false at the start of the run` });
    // A gate that never opened asked nobody.
    if (j.approval) j.approval = newApproval(j.approval);
  }
  const changed = propagate(skipped.map(endedJob), (id) => byId.get(id) as WaitingJob | undefined) as unknown as NewJob[];
  beginWaits(changed, nowMs);
  for (const j of changed) {
    if (j.status === 'skipped') j.finished_at_ms = nowMs;
    if (j.status === 'awaiting_approval') j.upstream_outputs = Object.fromEntries(j.needs.map((n) => [n, own(j.upstream_outputs, n) ?? {}]));
    if (j.status === 'queued') {
      j.enqueued_at_ms = nowMs;
      j.ready_at_ms = nowMs;
      // Needs skipped here have no outputs; kept ones keep theirs. Each is listed, as a completion lists them.
      j.upstream_outputs = Object.fromEntries(j.needs.map((n) => [n, own(j.upstream_outputs, n) ?? {}]));
    }
  }
}

export type RerunScope = { only: 'failed' | 'all' } | { from: string };

/**
 * Which jobs of run `n` a re-run keeps (README "Re-running a run"): jobs that succeeded in run n and
 * still exist in the current definition, minus those the scope runs again. `only: failed` runs again
 * every job that did not succeed; `only: all` keeps nothing; `from: X` runs X and everything downstream
 * of it, and also every job that did not succeed (it has no outputs to keep). A job one of whose needs
 * runs again runs again too, whatever the scope, so a kept job's outputs always come from kept inputs.
 */
export function keptJobs(def: WorkflowDefinition, previous: readonly JobRecord[], scope: RerunScope): Map<string, JobRecord> {
  const kept = new Map<string, JobRecord>();
  if ('only' in scope && scope.only === 'all') return kept;
  const { specs, groups } = expandJobs(def, {});
  const succeeded = new Map(previous.filter((j) => j.status === 'success').map((j) => [j.job_id, j]));
  const rerun = new Set<string>();
  // `from` a matrix job runs every one of its instances again.
  if ('from' in scope) for (const id of groups.get(scope.from) ?? [scope.from]) rerun.add(id);
  // Definition order is not topological; go round until nothing changes (a DAG settles in depth passes).
  for (let changed = true; changed; ) {
    changed = false;
    for (const spec of specs) {
      if (kept.has(spec.id) || rerun.has(spec.id)) continue;
      const was = succeeded.get(spec.id);
      if (was === undefined || spec.needs.some((n) => rerun.has(n))) {
        rerun.add(spec.id);
        changed = true;
      } else if (spec.needs.every((n) => kept.has(n))) {
        kept.set(spec.id, was);
        changed = true;
      }
    }
  }
  return kept;
}

/**
 * A for_each job ready at the start (its need kept by a re-run) is expanded right away, as a
 * completion would expand it in the store (store/fan-out.ts); the others wait for their need.
 */
function expandReadyFanOuts(jobs: NewJob[], nowMs: number): NewJob[] {
  const ready = jobs.filter((j) => j.for_each !== null && j.status === 'queued');
  if (ready.length === 0) return jobs;
  let out = jobs;
  for (const p of ready) {
    const fan = expandFanOut({ ...p, row_id: 0, run_number: 0 }, nowMs);
    if (fan.kind === 'instances') {
      const ids = fan.jobs.map((j) => j.job_id);
      out = out.flatMap((j) => (j === p ? fan.jobs : [j.needs.includes(p.job_id) ? { ...j, ...rewireBelow(j, p.job_id, ids) } : j]));
    } else {
      Object.assign(p, fan.kind === 'empty'
        ? { status: 'success', for_each: null, outputs: {}, finished_at_ms: nowMs }
        : { status: 'failed', for_each: null, error: fan.error, finished_at_ms: nowMs });
      // What is below a fan-out that ended at the start is decided as a completion would.
      const byId = new Map(out.map((j) => [j.job_id, j]));
      for (const j of propagate([endedJob(p)], (id) => byId.get(id) as WaitingJob | undefined) as unknown as NewJob[]) {
        if (j.status === 'skipped') j.finished_at_ms = nowMs;
        if (j.status === 'queued') {
          j.enqueued_at_ms = nowMs;
          j.ready_at_ms = nowMs;
          j.upstream_outputs = Object.fromEntries(j.needs.map((n) => [n, byId.get(n)?.outputs ?? {}]));
        }
      }
    }
  }
  return out;
}
