import type {
  Backoff,
  JobState,
  LogStream,
  Outputs,
  RunState,
  UpstreamOutputs,
  WorkflowDefinition,
} from '../domain/types.js';

/**
 * The storage seam. The engine speaks only to these interfaces; SQLite and PostgreSQL implement them
 * and one conformance suite (test/store) runs against both. All methods are async so that a networked
 * database fits the same shape as the embedded one.
 */

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
}

export interface RunRecord {
  workflow_id: string;
  run_number: number;
  status: RunState;
  created_at_ms: number;
  finished_at_ms: number | null;
}

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
  max_retries: number;
  backoff: Backoff;
  timeout_secs: number | null;
  status: JobState;
  attempt: number;
  /** 0 until first queued. */
  enqueued_at_ms: number;
  delayed_until_ms: number;
  /** max(enqueued_at_ms, delayed_until_ms): when the job became claimable. The claim order. */
  ready_at_ms: number;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  /** started_at_ms + timeout_secs while running with a timeout; found by the reaper. */
  deadline_ms: number | null;
  error: string | null;
  outputs: Outputs | null;
  upstream_outputs: UpstreamOutputs;
  worker_id: string | null;
  lease_id: string | null;
}

/** Fields a new job row needs; the rest start at their defaults. */
export type NewJob = Omit<JobRecord, 'row_id'>;

/** Fields the engine may change on a job. */
export type JobPatch = Partial<
  Pick<
    JobRecord,
    | 'status'
    | 'attempt'
    | 'enqueued_at_ms'
    | 'delayed_until_ms'
    | 'ready_at_ms'
    | 'started_at_ms'
    | 'finished_at_ms'
    | 'deadline_ms'
    | 'error'
    | 'outputs'
    | 'upstream_outputs'
    | 'worker_id'
    | 'lease_id'
  >
>;

/** `failed` is a failure the worker reported; `timed_out` is one the server decided (timeout_secs). */
export type LeaseState = 'active' | 'completed' | 'failed' | 'expired' | 'timed_out' | 'cancelled';

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
}

export type LeasePatch = Partial<Pick<LeaseRecord, 'renewed_at_ms' | 'expires_at_ms' | 'state'>>;

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

/** Everything the engine can do to storage. Inside `tx` all of it is one atomic unit. */
export interface StoreOps {
  // workflows
  getWorkflow(id: string): Promise<WorkflowRecord | null>;
  insertWorkflow(rec: WorkflowRecord): Promise<void>;
  updateWorkflowDefinition(
    id: string,
    def: WorkflowDefinition,
    hash: string,
    source: 'file' | 'api',
    nowMs: number,
  ): Promise<void>;
  setLatestRun(id: string, runNumber: number): Promise<void>;
  listWorkflows(q: ListWorkflowsQuery): Promise<WorkflowRecord[]>;

  // runs
  insertRun(run: RunRecord): Promise<void>;
  getRun(workflowId: string, runNumber: number): Promise<RunRecord | null>;
  updateRun(workflowId: string, runNumber: number, status: RunState, finishedAtMs: number | null): Promise<void>;
  /** Many runs in one query (a page of the workflow list); unknown keys are left out. */
  getRuns(keys: readonly RunKey[]): Promise<RunRecord[]>;

  // jobs
  insertJobs(jobs: NewJob[]): Promise<void>;
  getRunJobs(workflowId: string, runNumber: number): Promise<JobRecord[]>;
  /** The jobs of many runs in one query, each run's in row order. */
  getJobsOfRuns(keys: readonly RunKey[]): Promise<JobRecord[]>;
  getJob(workflowId: string, runNumber: number, jobId: string): Promise<JobRecord | null>;
  getJobByRowId(rowId: number): Promise<JobRecord | null>;
  /** The named jobs of a run (missing ids are left out). */
  getJobs(workflowId: string, runNumber: number, jobIds: readonly string[]): Promise<JobRecord[]>;
  /** Which job states occur in the run: one index seek per state, whatever the run's size. */
  presentStates(workflowId: string, runNumber: number): Promise<Set<JobState>>;
  updateJob(rowId: number, patch: JobPatch): Promise<void>;
  /**
   * The oldest claimable job (queued, ready_at_ms <= now) among the given label keys, locked for the
   * rest of the transaction so that concurrent claimers never get the same job.
   */
  nextClaimable(labelKeys: readonly string[], nowMs: number): Promise<JobRecord | null>;
  /** Running jobs whose deadline has passed. */
  timedOutJobs(nowMs: number, limit: number): Promise<JobRecord[]>;

  // label sets (small, append-only)
  ensureLabelSet(set: LabelSet): Promise<void>;
  listLabelSets(): Promise<LabelSet[]>;

  // leases
  insertLease(lease: LeaseRecord): Promise<void>;
  getLease(leaseId: string): Promise<LeaseRecord | null>;
  updateLease(leaseId: string, patch: LeasePatch): Promise<void>;
  /** Active leases whose expiry is before now. */
  expiredLeases(nowMs: number, limit: number): Promise<LeaseRecord[]>;
  activeLeases(): Promise<LeaseRecord[]>;

  // logs
  /** Inserts chunks; a chunk whose (run, job, attempt, sequence) exists already is ignored. */
  insertLogChunks(chunks: readonly LogChunkRecord[]): Promise<void>;
  getLogChunks(q: LogQuery): Promise<LogChunkRecord[]>;
  /** Highest attempt that has log chunks, or null. */
  latestLogAttempt(workflowId: string, runNumber: number, jobId: string): Promise<number | null>;

  // workers
  upsertWorker(rec: WorkerRecord): Promise<void>;
  /** Records that the worker was seen; creates it (with no labels) when unknown. */
  touchWorker(workerId: string, nowMs: number, labels?: readonly string[]): Promise<void>;
  listWorkers(): Promise<WorkerRecord[]>;
}

/**
 * A store hands out its operations only inside `tx` or `read`, so that no caller can interleave its
 * statements with another caller's open transaction on a shared connection.
 */
export interface Store {
  /** Human-readable kind, for logs: "sqlite" or "postgres". */
  readonly kind: string;
  /** Runs `fn` as one serializable write transaction; rolls back if it throws. */
  tx<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T>;
  /** Runs `fn` against a consistent snapshot for reading. */
  read<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
