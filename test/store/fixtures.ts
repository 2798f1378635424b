/**
 * Builders shared by the store conformance suite: workflows, the jobs of a run as the engine builds
 * them, and short forms of the operations the cases repeat. Everything goes through the public
 * `Store` methods; times are explicit so no case depends on the wall clock.
 */
import { randomUUID } from 'node:crypto';
import type { JobCondition } from '../../src/domain/conditions.js';
import type { Backoff, Outputs } from '../../src/domain/model.js';
import { labelKey, normalizeLabels } from '../../src/domain/labels.js';
import type { Claimed, JobRecord, LabelSet, LeaseRecord, NewJob, Store, StoreReads, WorkflowRecord } from '../../src/store/store.js';

export const HASH = 'h1';

export function wfRecord(id: string, now = 1000, over: Partial<WorkflowRecord> = {}): WorkflowRecord {
  return {
    id,
    name: id.toUpperCase(),
    trigger: 'push',
    definition: { id, name: id.toUpperCase(), trigger: 'push', env: {}, jobs: [] },
    source: 'api',
    hash: HASH,
    created_at_ms: now,
    updated_at_ms: now,
    latest_run: 0,
    next_fire_at_ms: null,
    ...over,
  };
}

export interface Spec {
  needs?: string[];
  labels?: string[];
  max_retries?: number;
  backoff?: Backoff;
  timeout_secs?: number | null;
  /** `if:`; default success. Roots must be success or always (the engine decides the others at start). */
  condition?: JobCondition;
  /** -100..100; default 0. */
  priority?: number;
  /** A concurrency group (README "Concurrency groups"), as evaluated at the run's start; default none. */
  group?: string;
  cancel_in_progress?: boolean;
}

/**
 * The jobs of a run as the engine builds them at `now`, in the order of `specs` (string keys keep
 * insertion order, which is the row order the store must follow): roots queued, the rest pending.
 */
export function buildJobs(wf: string, now: number, specs: Record<string, Spec>): NewJob[] {
  const ids = Object.keys(specs);
  return ids.map((job_id) => {
    const s = specs[job_id]!;
    const needs = s.needs ?? [];
    const labels = normalizeLabels(s.labels ?? []);
    const root = needs.length === 0;
    return {
      workflow_id: wf,
      job_id,
      name: `Job ${job_id}`,
      command: `echo ${job_id}`,
      env: { JOB: job_id },
      labels,
      label_key: labelKey(labels),
      needs,
      dependents: ids.filter((other) => (specs[other]!.needs ?? []).includes(job_id)),
      pending_needs: needs.length,
      condition: s.condition ?? 'success',
      needs_results: {},
      failed_upstream: false,
      run_cancelled: false,
      conditional_dependents: ids.some((other) => (specs[other]!.needs ?? []).includes(job_id) && (specs[other]!.condition ?? 'success') !== 'success'),
      max_retries: s.max_retries ?? 0,
      backoff: s.backoff ?? { kind: 'none' },
      timeout_secs: s.timeout_secs ?? null,
      status: root ? 'queued' : 'pending',
      attempt: 0,
      enqueued_at_ms: root ? now : 0,
      delayed_until_ms: 0,
      ready_at_ms: root ? now : 0,
      priority: s.priority ?? 0,
      started_at_ms: null,
      finished_at_ms: null,
      deadline_ms: null,
      error: null,
      outputs: null,
      upstream_outputs: {},
      worker_id: null,
      lease_id: null,
      group_id: null,
      matrix: null,
      max_parallel: null,
      fail_fast: false,
      for_each: null,
      item: null,
      item_index: null,
      concurrency_group: s.group ?? null,
      cancel_in_progress: s.cancel_in_progress ?? false,
    };
  });
}

export function labelSetsOf(jobs: readonly NewJob[]): LabelSet[] {
  const sets = new Map<string, LabelSet>();
  for (const j of jobs) if (!sets.has(j.label_key)) sets.set(j.label_key, { key: j.label_key, labels: j.labels });
  return [...sets.values()];
}

/** Creates the workflow if needed and starts its next run; fails the case unless it started. */
export async function start(store: Store, wf: string, now: number, specs: Record<string, Spec>): Promise<number> {
  await store.saveWorkflow(wfRecord(wf, now));
  const jobs = buildJobs(wf, now, specs);
  const out = await store.startRun({ workflow_id: wf, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now });
  if (out.kind !== 'started') throw new Error(`startRun(${wf}) answered ${JSON.stringify(out)}`);
  return out.run.run_number;
}

export interface ClaimOpts {
  worker?: string;
  labels?: string[];
  keys?: string[];
  max?: number;
  ttl?: number;
  /** The token the claim comes with (recorded on its leases). */
  token?: string;
  /** A waiting claim tried again (StoreClaim.retry). */
  retry?: boolean;
}

export function claimRequest(now: number, o: ClaimOpts = {}) {
  const max = o.max ?? 1;
  const labels = normalizeLabels(o.labels ?? []);
  return {
    worker_id: o.worker ?? 'wk',
    worker_labels: labels,
    label_keys: o.keys ?? [''],
    ttl_secs: o.ttl ?? 30,
    max,
    lease_ids: Array.from({ length: max }, () => randomUUID()),
    now_ms: now,
    ...(o.token !== undefined ? { token_name: o.token } : {}),
    ...(o.retry !== undefined ? { retry: o.retry } : {}),
  };
}

export function claim(store: Store, now: number, o: ClaimOpts = {}): Promise<Claimed[]> {
  return store.claim(claimRequest(now, o));
}

/** Claims exactly one job and checks it is the expected one. */
export async function claimOne(store: Store, now: number, jobId: string, o: ClaimOpts = {}): Promise<Claimed> {
  const got = await claim(store, now, { ...o, max: 1 });
  if (got.length !== 1 || got[0]!.job.job_id !== jobId) {
    throw new Error(`expected to claim "${jobId}", got [${got.map((c) => c.job.job_id).join(', ')}]`);
  }
  return got[0]!;
}

export const read = <T>(store: Store, fn: (r: StoreReads) => Promise<T>): Promise<T> => store.read(fn);

export async function job(store: Store, wf: string, jobId: string, run = 1): Promise<JobRecord> {
  const j = await store.read((r) => r.getJob(wf, run, jobId));
  if (!j) throw new Error(`no job ${wf}#${run}/${jobId}`);
  return j;
}

export async function lease(store: Store, leaseId: string): Promise<LeaseRecord> {
  const l = await store.read((r) => r.getLease(leaseId));
  if (!l) throw new Error(`no lease ${leaseId}`);
  return l;
}

export async function runStatus(store: Store, wf: string, run = 1) {
  const r = await store.read((rd) => rd.getRun(wf, run));
  if (!r) throw new Error(`no run ${wf}#${run}`);
  return { status: r.status, finished_at_ms: r.finished_at_ms };
}

export async function complete(store: Store, leaseId: string, outputs: Outputs, now: number) {
  const out = await store.complete(leaseId, outputs, now);
  if (out.kind !== 'completed') throw new Error(`complete answered ${JSON.stringify(out)}`);
  return out;
}

export const change = (wf: string, jobId: string, run = 1) => ({ workflow_id: wf, run_number: run, job_id: jobId });

/** Job changes compared as a set: the order of `changes` is not part of the contract. */
export function sortedChanges(cs: ReadonlyArray<{ workflow_id: string; run_number: number; job_id: string }>) {
  return [...cs]
    .map((c) => ({ workflow_id: c.workflow_id, run_number: c.run_number, job_id: c.job_id }))
    .sort((a, b) => `${a.workflow_id}/${a.run_number}/${a.job_id}`.localeCompare(`${b.workflow_id}/${b.run_number}/${b.job_id}`));
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** After an upgrade: the label set stored before (the empty one) is listed, and a new one comes after it. */
export async function labelSetsCarryOn(store: Store): Promise<void> {
  const before = await store.read((r) => r.labelSetsSince(0));
  if (before.length !== 1 || before[0]!.key !== '') throw new Error(`label sets after the upgrade: ${JSON.stringify(before)}`);
  await start(store, 'later', 9000, { g: { labels: ['gpu'] } });
  const added = await store.read((r) => r.labelSetsSince(before[0]!.seq));
  if (added.length !== 1 || added[0]!.key !== labelKey(['gpu'])) throw new Error(`label sets added later: ${JSON.stringify(added)}`);
}
