import type { JobApproval } from '../domain/approval.js';
import type { ArtifactSpec } from '../domain/artifacts.js';
import type { JobCall } from '../domain/calls.js';
import type { JobCondition, NeedsResults } from '../domain/conditions.js';
import type { Backoff, JobState, LogStream, Outputs, RunState, RunTrigger, UpstreamOutputs, WorkflowDefinition } from '../domain/model.js';

/** The rows of the store (src/store/store.ts), as both backends read and write them. */

export interface WorkflowRecord {
  id: string;
  name: string;
  trigger: string | null;
  definition: WorkflowDefinition;
  /** Where the definition came from: a file in WORKFLOWS_DIR or the API. */
  source: 'file' | 'api';
  hash: string;
  created_at_ms: number;
  updated_at_ms: number;
  /** Number of the latest run; 0 when never run. */
  latest_run: number;
  /**
   * The earliest fire time of its schedules not yet handled (docs/architecture.md "Schedules"); null
   * when it has none. On a save it is taken only when the schedules changed (or on creation); absent
   * there means null. Records the store answers always carry it.
   */
  next_fire_at_ms?: number | null;
}

export interface RunRecord {
  workflow_id: string;
  run_number: number;
  status: RunState;
  created_at_ms: number;
  finished_at_ms: number | null;
  /** The run's input values ({} when it has none). */
  inputs: Record<string, string>;
  /** The run a re-run was made from; null for a run started afresh. */
  rerun_of: number | null;
  /** Its concurrency group, as evaluated when it started (README "Concurrency groups"); null: none. */
  concurrency_group: string | null;
  /** What started it (README "Dashboard"); null for a run from before runs recorded it. */
  trigger: RunTrigger | null;
  /** The hash of the definition it was planned from (StoreReads.getRunDefinition); null for a run from before. */
  definition_hash: string | null;
  /**
   * The name of the event it was started with (README "Triggers and notifications": `push`, `deployed`,
   * `workflow_run`, …); null: none. Its payload is read apart (StoreReads.getRunEvent).
   */
  event_name: string | null;
  /**
   * A `queued` run's jobs as they will be inserted when a slot frees (README "How a run works"); absent
   * for every other run, whose jobs are rows.
   */
  plan?: NewJob[];
  /**
   * A run a job of another run started (README "Workflows calling workflows"): that job. Absent for
   * every other run.
   */
  parent?: RunParent | null;
}

/** The job whose call started a run. */
export interface RunParent {
  workflow_id: string;
  run_number: number;
  job_id: string;
}

/** The running job of a concurrency group of jobs. */
export interface JobGroupHolder {
  concurrency_group: string;
  workflow_id: string;
  run_number: number;
  job_id: string;
}

export interface RunJobCount extends RunKey {
  status: JobState;
  count: number;
}

/**
 * What a job's entry in a status document shows (engine/views.ts jobView): a status read takes these
 * columns, about half of a job row, and leaves the rest (env, upstream outputs, the lease, the claim's
 * bookkeeping) unread; for a run of 10,000 jobs that was most of the document's cost
 * (docs/performance.md "Third round").
 */
export type JobViewRecord = Pick<
  JobRecord,
  | 'row_id' | 'workflow_id' | 'run_number' | 'job_id' | 'name' | 'command' | 'labels' | 'needs' | 'condition'
  | 'needs_results' | 'max_retries' | 'backoff' | 'timeout_secs' | 'status' | 'attempt' | 'enqueued_at_ms'
  | 'delayed_until_ms' | 'priority' | 'started_at_ms' | 'finished_at_ms' | 'error' | 'outputs' | 'worker_id'
  | 'group_id' | 'matrix' | 'for_each' | 'item' | 'item_index' | 'concurrency_group' | 'approval' | 'call' | 'child_run'
>;

export interface JobRecord {
  /** Surrogate key, also the stable tie-break of the claim order. */
  row_id: number;
  workflow_id: string;
  run_number: number;
  job_id: string;
  name: string;
  command: string;
  /** Workflow env merged with job env. */
  env: Record<string, string>;
  labels: string[];
  label_key: string;
  needs: string[];
  /** Direct downstream jobs (the inverse of needs), so unblocking and skipping touch only them. */
  dependents: string[];
  /**
   * Needs not yet ended (for a `success()` job: not yet `success`, since any other end skips it). The
   * end that brings it to zero queues the job (or skips it, when its condition is false), whichever
   * sibling finishes last, without re-reading the others.
   */
  pending_needs: number;
  /** `if:` (docs/architecture.md "Conditions"). */
  condition: JobCondition;
  /** Needs that ended other than `success`, with how; recorded as they end. */
  needs_results: NeedsResults;
  /** A need failed, or ended below a failure (what `failure()` asks). */
  failed_upstream: boolean;
  /** Spared by a cancel of its run (`always()`/`cancelled()`): `cancelled()` holds, and a second cancel stops it. */
  run_cancelled: boolean;
  /**
   * Some direct dependent has a condition other than `success()`: this job's end goes the general way
   * (conditions.ts propagate) instead of the one-statement completion.
   */
  conditional_dependents: boolean;
  max_retries: number;
  backoff: Backoff;
  timeout_secs: number | null;
  status: JobState;
  attempt: number;
  /** 0 until first queued. */
  enqueued_at_ms: number;
  delayed_until_ms: number;
  /** max(enqueued_at_ms, delayed_until_ms): when the job became claimable. The claim order within a priority. */
  ready_at_ms: number;
  /** -100..100 (domain/priority.ts): a claim takes higher ones first. */
  priority: number;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  /** started_at_ms + timeout_secs while running with a timeout; found by the reaper. */
  deadline_ms: number | null;
  error: string | null;
  outputs: Outputs | null;
  upstream_outputs: UpstreamOutputs;
  /** `artifacts:` and `download:` of the job's definition (README "Artifacts"); null or absent: neither. */
  artifact_spec?: ArtifactSpec | null;
  worker_id: string | null;
  lease_id: string | null;
  /**
   * The definition job an instance of a matrix was made from (README "Matrix, fan-out and
   * artifacts"); null for a plain job. Instances of one group share fail_fast and max_parallel.
   */
  group_id: string | null;
  /** The instance's matrix values; null for a plain job. */
  matrix: Record<string, unknown> | null;
  /** At most this many instances of the group running at once (enforced by the claim); null: no cap. */
  max_parallel: number | null;
  /** An instance failing for good cancels its unfinished siblings. */
  fail_fast: boolean;
  /**
   * A `for_each` job not yet expanded: the need and output its items come from. Null on every other
   * job, instances included.
   */
  for_each: { job: string; key: string } | null;
  /** A fan-out instance's item (a string or an object); null otherwise. */
  item: unknown;
  /** A fan-out instance's index in its list; null otherwise. */
  item_index: number | null;
  /**
   * The job's concurrency group (README "Concurrency groups"), as evaluated when its run started: the
   * claim takes no job of a group while another of it runs; null: none.
   */
  concurrency_group: string | null;
  /** A job arriving in its group cancels the group's running job (and replaces a waiting one in any case). */
  cancel_in_progress: boolean;
  /**
   * The job's approval gate, its wait and decision (README "Approvals"); null or absent: no gate.
   * Records the store answers carry it only on gated jobs.
   */
  approval?: JobApproval | null;
  /**
   * `uses:` and `with:` of a job that calls a workflow (README "Workflows calling workflows"): no
   * worker claims it (its label key is CALL_LABEL_KEY); the engine starts a run of that workflow for it.
   * Null or absent on every other job; records the store answers carry it only on such jobs.
   */
  call?: JobCall | null;
  /** The number of the run of `call.uses` its latest attempt started; null until one started. Only with `call`. */
  child_run?: number | null;
}

/** A job row as the engine builds it when a run starts; the store assigns row_id and run_number. */
export type NewJob = Omit<JobRecord, 'row_id' | 'run_number'>;

export type LeaseState = 'active' | 'completed' | 'failed' | 'expired' | 'timed_out' | 'cancelled' | 'released';

export interface LeaseRecord {
  lease_id: string;
  job_row_id: number;
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  worker_id: string;
  ttl_secs: number;
  granted_at_ms: number;
  /** Last renewal (grant or heartbeat). */
  renewed_at_ms: number;
  expires_at_ms: number;
  state: LeaseState;
  /**
   * The name of the token the claim came with; only that token may use the lease (leaseUsableBy).
   * Null: claimed without a token (authentication off).
   */
  token_name: string | null;
}


export interface LogChunkRecord {
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  sequence: number;
  stream: LogStream;
  data: string;
  timestamp_ms: number;
}

export interface WorkerRecord {
  worker_id: string;
  labels: string[];
  registered_at_ms: number;
  last_seen_ms: number;
}

/** Names one run. */
export interface RunKey {
  workflow_id: string;
  run_number: number;
}

export interface LabelSet {
  key: string;
  labels: string[];
}

export interface ListWorkflowsQuery {
  limit: number;
  offset: number;
  /** Keep workflows whose latest run has a job in this state (idle workflows count as all-pending). */
  jobStatus?: JobState;
  /** Keep workflows whose id or name contains this text, ignoring (ASCII) case. */
  search?: string;
}

export interface LogQuery {
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  /** Only chunks with sequence > afterSequence. */
  afterSequence?: number;
  limit?: number;
}

/** A job whose state an operation changed: announced as an event once the change is durable. */
export interface JobChange {
  workflow_id: string;
  run_number: number;
  job_id: string;
}

export interface ActiveJobCount {
  status: 'queued' | 'running' | 'awaiting_approval';
  label_key: string;
  count: number;
}
