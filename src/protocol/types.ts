/**
 * The wire: what every endpoint takes and answers (docs/api.md). The worker protocol's
 * shapes and the shapes workflow-graph clients read are fixed (docs/protocol.md). Fields beyond
 * those are weft's additions, and may be added to but never renamed or re-typed.
 */
import type { IncomingLogChunk, JobState, Outputs, UpstreamOutputs, WireBackoff, WireRetryPolicy, WorkflowState } from '../domain/types.js';
import type { ErrorBody } from './errors.js';
import type { CompatJobStatus } from './states.js';

// ------------------------------------------------------------------ worker protocol (docs/api.md "Worker protocol")

export interface RegisterRequest {
  worker_id: string;
  labels?: string[];
}

export interface ClaimRequest {
  worker_id: string;
  labels?: string[];
  /** 1..86400, default 30. */
  lease_ttl_secs?: number;
  /** Long poll: when nothing fits, wait up to this many seconds (0..60, default 0) for a job. */
  wait_secs?: number;
}

/** A job as delivered by a claim (docs/api.md "POST /api/jobs/claim"), plus additive fields the standalone worker uses. */
export interface ClaimedJob {
  job_id: string;
  workflow_id: string;
  command: string;
  required_labels: string[];
  retry_policy: WireRetryPolicy;
  attempt: number;
  upstream_outputs: UpstreamOutputs;
  enqueued_at_ms: number;
  delayed_until_ms: number;
  run_number: number;
  name: string;
  env: Record<string, string>;
  timeout_secs: number | null;
  /** `artifacts:` of the job's definition (README "Artifacts"); absent when it has neither key. */
  artifacts?: string[];
  /** What `download:` fetches before the command runs; absent when it has neither key. */
  downloads?: ArtifactDownload[];
}

/** One artifact a claimed job's `download:` puts into its working directory. */
export interface ArtifactDownload {
  job_id: string;
  name: string;
  size: number;
  sha256: string;
  /** Where to GET it: `/api/workflows/{id}/runs/{n}/artifacts/{job_id}/{name}`, each segment URL-encoded. */
  path: string;
}

/** The lease of a claim (docs/api.md "POST /api/jobs/claim"), with when it runs out. */
export interface LeaseView {
  lease_id: string;
  job_id: string;
  workflow_id: string;
  worker_id: string;
  ttl_secs: number;
  granted_at_ms: number;
  expires_at_ms: number;
}

/** The claim answer when a job fits; the JSON value `null` otherwise. */
export interface ClaimResult {
  job: ClaimedJob;
  lease: LeaseView;
}

export type HeartbeatResponse = LeaseView & { cancelled: false };

export interface CompleteRequest {
  outputs?: Outputs;
}

export interface CompleteResponse {
  ok: true;
  /** weft's state of the job afterwards (`cancelled` when a cancel came first and the report was ignored). */
  status: JobState;
  /** Jobs this completion made claimable. */
  enqueued: string[];
}

export interface FailRequest {
  error: string;
  /** Omitted means false: a permanent failure (docs/api.md "Lease calls"). */
  retryable?: boolean;
}

export interface FailResponse {
  ok: true;
  /** `queued` when re-queued for a retry, `failed` when the budget is spent. */
  status: JobState;
  attempt: number;
  delayed_until_ms: number;
}

/** One chunk as a worker pushes it (docs/api.md "Logs"). */
export type { IncomingLogChunk };

export interface PushLogsRequest {
  chunks: IncomingLogChunk[];
}

export interface PushLogsResponse {
  ok: true;
  accepted: number;
  /**
   * Present (true) once the attempt's log reached MAX_LOG_BYTES_PER_ATTEMPT: the server kept a marker
   * line and drops whatever else is sent for the attempt, so the worker may stop sending it.
   */
  truncated?: true;
}

// ------------------------------------------------------------------ batches (docs/api.md "Batches")

export interface BatchClaimRequest extends ClaimRequest {
  /** 1..1000, default 1. */
  max_jobs?: number;
}

export interface BatchClaimResponse {
  claims: ClaimResult[];
}

export type Report =
  | { lease_id: string; outcome: 'complete'; outputs?: Outputs; error?: undefined; retryable?: undefined }
  | { lease_id: string; outcome: 'fail'; error: string; retryable?: boolean; outputs?: undefined };

export interface ReportBatchRequest {
  reports: Report[];
  /** Claims more jobs in the same round trip, after the reports (complete-and-claim-next). */
  claim?: BatchClaimRequest;
}

/** One report's answer: the status and body its one-job call would have had. */
export type ReportResult =
  | { lease_id: string; status: 200; result: CompleteResponse | FailResponse }
  | { lease_id: string; status: number; error: ErrorBody };

export interface ReportBatchResponse {
  results: ReportResult[];
  claims: ClaimResult[];
}

export interface HeartbeatBatchRequest {
  lease_ids: string[];
}

export type HeartbeatResult =
  | { lease_id: string; status: 200; lease: HeartbeatResponse }
  | { lease_id: string; status: number; error: ErrorBody };

export interface HeartbeatBatchResponse {
  results: HeartbeatResult[];
}

// ------------------------------------------------------------------ workflows

/**
 * One job of the status document. The first block is workflow-graph's Job, exactly as its viewer
 * deserializes it; the rest is weft's.
 */
export interface JobView {
  id: string;
  name: string;
  /** The compatible vocabulary; weft's own state is `state`. */
  status: CompatJobStatus;
  command: string;
  /** Whole seconds of the finished attempt (truncated); null until it finishes. */
  duration_secs: number | null;
  /** Epoch ms the current attempt started; null when not started. */
  started_at: number | null;
  depends_on: string[];
  /** The last error text, if any. */
  output: string | null;
  required_labels: string[];
  max_retries: number;
  attempt: number;
  /** Free JSON for custom renderers, as given in the array form; {} otherwise. */
  metadata: Record<string, unknown>;
  ports: unknown[];
  children: unknown[] | null;
  collapsed: boolean;

  state: JobState;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  duration_ms: number | null;
  backoff: WireBackoff;
  timeout_secs: number | null;
  /** When the job last became queued; null while it never was. */
  enqueued_at_ms: number | null;
  delayed_until_ms: number;
  outputs: Outputs;
  error: string | null;
  worker_id: string | null;
  /** `if:` as written: `success()` (the default), `failure()`, `always()` or `cancelled()`. */
  condition: string;
  /** Needs that ended other than `success`, with how (`failure`, `skipped`, `cancelled`), once they ended. */
  needs_results: Record<string, string>;
}

export interface RunView {
  number: number;
  status: WorkflowState;
  created_at: string;
  finished_at: string | null;
  created_at_ms: number;
  finished_at_ms: number | null;
  /** The run's input values (README "Run inputs"); {} when it has none. */
  inputs: Record<string, string>;
  /** The run this one re-runs (README "Re-running a run"); null for a run started afresh. */
  rerun_of: number | null;
}

/**
 * `GET /api/workflows/{id}/status`, the 201 of POST, and every item of `GET /api/workflows`.
 * `id, name, trigger, jobs` are workflow-graph's Workflow.
 */
export interface StatusDocument {
  id: string;
  name: string;
  /** "" when the definition has none. */
  trigger: string;
  jobs: JobView[];

  /** Derived from the latest run; `idle` when never run. */
  status: WorkflowState;
  run_number: number | null;
  run: RunView | null;
  source: 'file' | 'api';
  created_at: string;
  updated_at: string;
  /** When its schedules next start a run (epoch ms); null when it has none (docs/api.md "Schedules"). */
  next_fire_at_ms: number | null;
}

/**
 * A workflow without its jobs: the items of `GET /api/workflows?jobs=false` and the data of the list
 * stream's `workflow` events (docs/api.md). Its size does not grow with the number of jobs, so a
 * dashboard list of large workflows stays cheap to send and to keep.
 */
export interface WorkflowSummary extends Omit<StatusDocument, 'jobs' | 'run'> {
  /** The latest run as in the status document, without its inputs (which may be large). */
  run: Omit<RunView, 'inputs'> | null;
  /** Jobs of the latest run in each state (of the definition, all `pending`, when it never ran); states no job is in are left out. */
  job_counts: Partial<Record<JobState, number>>;
}

/** An item of `GET /api/workflows/{id}/runs` (run history), newest first. */
export interface RunSummary {
  run_number: number;
  status: WorkflowState;
  created_at_ms: number;
  finished_at_ms: number | null;
  /** Jobs of the run in each state; states no job is in are left out. */
  job_counts: Partial<Record<JobState, number>>;
  /** As in the status document's `run`. */
  inputs: Record<string, string>;
  rerun_of: number | null;
}

export interface CancelResponse extends StatusDocument {
  cancelled_jobs: string[];
  /** Numbers of the runs the cancel ended or is ending, oldest first. */
  cancelled_runs: number[];
}

/**
 * `PUT /api/workflows/{id}`: the status document and what the PUT did. `unchanged` (answered 200,
 * as `updated` is) means the definition was the one already stored. Older servers leave `outcome` out.
 */
export interface PutWorkflowResponse extends StatusDocument {
  outcome?: 'created' | 'updated' | 'unchanged';
}

export interface ListWorkflowsQuery {
  limit?: number;
  offset?: number;
  status?: JobState | 'active' | 'failure';
  /** Only workflows whose id or name contains this text (ASCII case ignored). */
  q?: string;
}

// ------------------------------------------------------------------ workers

/** The job and run a worker holds. */
export interface CurrentJob {
  workflow_id: string;
  job_id: string;
  run_number: number;
  attempt: number;
}

/** The job, run and lease a worker holds. */
export interface CurrentLease extends CurrentJob {
  lease_id: string;
}

/** `GET /api/workers` items. The first block is workflow-graph's WorkerInfo. */
export interface WorkerView {
  worker_id: string;
  labels: string[];
  registered_at_ms: number;
  /** When any call of the worker was last seen (the same as `last_seen_ms`). */
  last_heartbeat_ms: number;
  /** The id of the job it holds (the oldest, if several); null when idle. */
  current_job: string | null;
  status: 'idle' | 'busy' | 'offline';

  last_seen_ms: number;
  /**
   * When tokens are on, only the leases the caller may see: every one for an admin token, those it
   * claimed itself for a worker token, none for a read token (README "Access tokens").
   */
  current_lease: CurrentLease | null;
  /** Every lease it holds (a worker with CONCURRENCY > 1 may hold several), as far as the caller may see them. */
  current_leases: CurrentLease[];
  /** Every job it holds, without lease ids, for every caller. */
  current_jobs: CurrentJob[];
}

// ------------------------------------------------------------------ logs

/** A stored chunk (docs/api.md "Logs") with the run and attempt it belongs to. */
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

export interface LogsQuery {
  run?: number;
  attempt?: number;
  /** Paging (docs/api.md "Logs"): only chunks with a sequence above this one. */
  after?: number;
  /** Paging: at most this many chunks (1..1000); the `x-weft-next-after` header names the next page. */
  limit?: number;
}

/** Data of the `end` event of a log stream. */
export interface LogEndEvent {
  status: JobState;
  run_number: number | null;
}

/** The optional body of `POST /api/workflows/{id}/run`. */
export interface RunRequest {
  /** Values of the workflow's declared inputs, by name. */
  inputs?: Record<string, string>;
}

/** The optional body of `POST /api/workflows/{id}/runs/{n}/rerun`: `only` or `from`, not both. */
export interface RerunRequest {
  /** `failed` (default): jobs that did not succeed run again; `all`: every job does. */
  only?: 'failed' | 'all';
  /** Run this job and everything downstream of it again. */
  from?: string;
}
