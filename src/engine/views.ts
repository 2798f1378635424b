import { backoffToWire } from '../domain/backoff.js';
import type { JobState, WireBackoff, WorkflowState } from '../domain/types.js';
import type { JobRecord, LeaseRecord, LogChunkRecord, RunRecord, WorkerRecord, WorkflowRecord } from '../store/store.js';

/**
 * The documents the API returns, built from store records. The status document is a superset of the
 * shape older clients read (CONTRACT.md "Runs and job states"); everything else is additive.
 */

export interface JobView {
  id: string;
  name: string;
  status: JobState;
  command: string;
  depends_on: string[];
  required_labels: string[];
  attempt: number;
  max_retries: number;
  backoff: WireBackoff;
  timeout_secs: number | null;
  enqueued_at_ms: number | null;
  delayed_until_ms: number;
  started_at: string | null;
  finished_at: string | null;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  duration_secs: number | null;
  outputs: Record<string, string>;
  error: string | null;
  /** The last error text, under the name older clients read. */
  output: string | null;
  worker_id: string | null;
}

export interface RunView {
  number: number;
  status: WorkflowState;
  created_at: string;
  finished_at: string | null;
}

export interface StatusDocument {
  id: string;
  name: string;
  trigger: string | null;
  status: WorkflowState;
  run_number: number | null;
  run: RunView | null;
  source: 'file' | 'api';
  created_at: string;
  updated_at: string;
  jobs: JobView[];
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function statusDocument(wf: WorkflowRecord, run: RunRecord | null, jobs: JobRecord[] | null): StatusDocument {
  const jobViews: JobView[] = run && jobs ? jobs.map(jobView) : idleJobs(wf);
  return {
    id: wf.id,
    name: wf.name,
    trigger: wf.trigger,
    status: run ? run.status : 'idle',
    run_number: run ? run.run_number : null,
    run: run
      ? {
          number: run.run_number,
          status: run.status,
          created_at: iso(run.created_at_ms)!,
          finished_at: iso(run.finished_at_ms),
        }
      : null,
    source: wf.source,
    created_at: iso(wf.created_at_ms)!,
    updated_at: iso(wf.updated_at_ms)!,
    jobs: jobViews,
  };
}

function jobView(j: JobRecord): JobView {
  const duration =
    j.started_at_ms !== null && j.finished_at_ms !== null ? (j.finished_at_ms - j.started_at_ms) / 1000 : null;
  return {
    id: j.job_id,
    name: j.name,
    status: j.status,
    command: j.command,
    depends_on: j.needs,
    required_labels: j.labels,
    attempt: j.attempt,
    max_retries: j.max_retries,
    backoff: backoffToWire(j.backoff),
    timeout_secs: j.timeout_secs,
    enqueued_at_ms: j.enqueued_at_ms === 0 ? null : j.enqueued_at_ms,
    delayed_until_ms: j.delayed_until_ms,
    started_at: iso(j.started_at_ms),
    finished_at: iso(j.finished_at_ms),
    started_at_ms: j.started_at_ms,
    finished_at_ms: j.finished_at_ms,
    duration_secs: duration,
    outputs: j.outputs ?? {},
    error: j.error,
    output: j.error,
    worker_id: j.worker_id,
  };
}

/** A workflow that never ran shows its definition's jobs, all pending. */
function idleJobs(wf: WorkflowRecord): JobView[] {
  return wf.definition.jobs.map((spec) => ({
    id: spec.id,
    name: spec.name,
    status: 'pending',
    command: spec.command,
    depends_on: spec.needs,
    required_labels: spec.labels,
    attempt: 0,
    max_retries: spec.max_retries,
    backoff: backoffToWire(spec.backoff),
    timeout_secs: spec.timeout_secs,
    enqueued_at_ms: null,
    delayed_until_ms: 0,
    started_at: null,
    finished_at: null,
    started_at_ms: null,
    finished_at_ms: null,
    duration_secs: null,
    outputs: {},
    error: null,
    output: null,
    worker_id: null,
  }));
}

export interface WorkflowSummary {
  id: string;
  name: string;
  trigger: string | null;
  source: 'file' | 'api';
  job_count: number;
  latest_run: number | null;
  created_at: string;
  updated_at: string;
}

export function workflowSummary(wf: WorkflowRecord): WorkflowSummary {
  return {
    id: wf.id,
    name: wf.name,
    trigger: wf.trigger,
    source: wf.source,
    job_count: wf.definition.jobs.length,
    latest_run: wf.latest_run === 0 ? null : wf.latest_run,
    created_at: iso(wf.created_at_ms)!,
    updated_at: iso(wf.updated_at_ms)!,
  };
}

export interface WorkerView {
  worker_id: string;
  labels: string[];
  registered_at_ms: number;
  last_seen_ms: number;
  status: 'idle' | 'busy' | 'offline';
  current_job: CurrentJob | null;
  /** Every job the worker holds (a worker with CONCURRENCY > 1 may hold several). */
  current_jobs: CurrentJob[];
}

export interface CurrentJob {
  workflow_id: string;
  job_id: string;
  run_number: number;
  attempt: number;
  lease_id: string;
}

export function workerViews(
  workers: WorkerRecord[],
  leases: LeaseRecord[],
  nowMs: number,
  offlineAfterMs: number,
): WorkerView[] {
  const held = new Map<string, CurrentJob[]>();
  for (const l of leases) {
    if (nowMs > l.expires_at_ms) continue;
    const cj = { workflow_id: l.workflow_id, job_id: l.job_id, run_number: l.run_number, attempt: l.attempt, lease_id: l.lease_id };
    const list = held.get(l.worker_id);
    if (list) list.push(cj);
    else held.set(l.worker_id, [cj]);
  }
  return workers.map((w) => {
    const jobs = held.get(w.worker_id) ?? [];
    const status = jobs.length > 0 ? 'busy' : nowMs - w.last_seen_ms > offlineAfterMs ? 'offline' : 'idle';
    return { ...w, status, current_job: jobs[0] ?? null, current_jobs: jobs };
  });
}

export interface LogChunkView {
  workflow_id: string;
  job_id: string;
  run_number: number;
  attempt: number;
  sequence: number;
  stream: string;
  data: string;
  timestamp_ms: number;
}

export function logChunkView(c: LogChunkRecord): LogChunkView {
  return {
    workflow_id: c.workflow_id,
    job_id: c.job_id,
    run_number: c.run_number,
    attempt: c.attempt,
    sequence: c.sequence,
    stream: c.stream,
    data: c.data,
    timestamp_ms: c.timestamp_ms,
  };
}
