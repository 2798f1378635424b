import type { JobCondition, NeedsResults } from '../domain/conditions.js';
import type {
  Backoff,
  IncomingLogChunk,
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
  /**
   * A `queued` run's jobs as they will be inserted when a slot frees (README "How a run works"); absent
   * for every other run, whose jobs are rows.
   */
  plan?: NewJob[];
}

export interface RunJobCount extends RunKey {
  status: JobState;
  count: number;
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

/**
 * Reads, against one consistent snapshot. Nothing here changes anything; every change goes through
 * one of the operations of `Store`.
 */
export interface StoreReads {
  getWorkflow(id: string): Promise<WorkflowRecord | null>;
  listWorkflows(q: ListWorkflowsQuery): Promise<WorkflowRecord[]>;
  getRun(workflowId: string, runNumber: number): Promise<RunRecord | null>;
  /** Many runs in one query (a page of the workflow list); unknown keys are left out. */
  getRuns(keys: readonly RunKey[]): Promise<RunRecord[]>;
  getRunJobs(workflowId: string, runNumber: number): Promise<JobRecord[]>;
  /** The jobs of many runs in one query, each run's in row order. */
  getJobsOfRuns(keys: readonly RunKey[]): Promise<JobRecord[]>;
  /** A page of a workflow's runs, newest first (run history). */
  listRuns(workflowId: string, limit: number, offset: number): Promise<RunRecord[]>;
  /** How many jobs of each run are in each state, in one grouped query for all the runs. */
  jobCountsOfRuns(keys: readonly RunKey[]): Promise<RunJobCount[]>;
  getJob(workflowId: string, runNumber: number, jobId: string): Promise<JobRecord | null>;
  getLease(leaseId: string): Promise<LeaseRecord | null>;
  /** Active leases (a worker's view shows what it holds). */
  activeLeases(): Promise<LeaseRecord[]>;
  getLogChunks(q: LogQuery): Promise<LogChunkRecord[]>;
  /** Highest attempt that has log chunks, or null. */
  latestLogAttempt(workflowId: string, runNumber: number, jobId: string): Promise<number | null>;
  listWorkers(): Promise<WorkerRecord[]>;
  getWorker(workerId: string): Promise<WorkerRecord | null>;
  /** Label sets added after `afterSeq` (0 = all), in the order they were added. Small and append-only. */
  labelSetsSince(afterSeq: number): Promise<Array<LabelSet & { seq: number }>>;
  /**
   * How many jobs are queued (backoff-held ones included) and running, per label key; combinations
   * with none are left out. Read through the queue's and the active leases' partial indexes, so its
   * cost follows the jobs in motion, never the jobs that finished (README "Metrics").
   */
  activeJobCounts(): Promise<ActiveJobCount[]>;
  /**
   * Workflows whose next_fire_at_ms is at or before `nowMs`, earliest first, at most `limit`: one range
   * read of the partial index workflows_next_fire, whatever the number of workflows.
   */
  dueSchedules(nowMs: number, limit: number): Promise<WorkflowRecord[]>;
  /** The workflow's running and queued runs, oldest first, through the partial indexes runs_running and runs_queued. */
  activeRuns(workflowId: string): Promise<RunRecord[]>;
  /** Ids of workflows that have a queued run, at most `limit`, through runs_queued. */
  queuedWorkflows(limit: number): Promise<string[]>;
}

export interface ActiveJobCount {
  status: 'queued' | 'running';
  label_key: string;
  count: number;
}

// ------------------------------------------------------------------------------- operation outcomes

/**
 * Why a lease call could not proceed. `expired` and `timed_out` mean this very call found the lease
 * out of time and applied the failure (re-queue or fail, by the retry plan) before answering.
 */
export type LeaseRefusal =
  | { kind: 'not_found' }
  | { kind: 'settled'; state: 'completed' | 'failed' | 'expired' | 'timed_out' | 'released' }
  /** `job`: the job after the failure, or null when it no longer ran under this lease (nothing else changed). */
  | { kind: 'expired'; lease: LeaseRecord; job: JobRecord | null; changes: JobChange[] }
  | { kind: 'timed_out'; lease: LeaseRecord; job: JobRecord; changes: JobChange[] };

export type HeartbeatOutcome =
  | { kind: 'renewed'; lease: LeaseRecord }
  | { kind: 'cancelled'; lease: LeaseRecord }
  | LeaseRefusal;

export type CompleteOutcome =
  /** `enqueued`: dependents whose last need this was, now queued with their upstream outputs. */
  | { kind: 'completed'; job: JobRecord; enqueued: string[]; changes: JobChange[] }
  /** The job was cancelled first; nothing changed. */
  | { kind: 'cancelled'; job: JobRecord }
  | LeaseRefusal;

export type FailOutcome =
  /**
   * The job after the failure: queued again (attempt + 1, maybe delayed) or failed (dependents skipped).
   * `started_at_ms`: when the failed attempt started, which a re-queued job no longer carries.
   */
  | { kind: 'failed'; job: JobRecord; started_at_ms: number; changes: JobChange[] }
  | { kind: 'cancelled'; job: JobRecord }
  | LeaseRefusal;

export type PushLogsOutcome =
  /** Also when the job was cancelled: its last words are still kept. */
  | { kind: 'stored'; lease: LeaseRecord; accepted: number }
  /** A chunk names another workflow or job than the lease's; nothing was stored. */
  | { kind: 'mismatch'; lease: LeaseRecord; index: number; field: 'workflow_id' | 'job_id'; value: string }
  | LeaseRefusal;

export type StartRunOutcome =
  | { kind: 'started'; run: RunRecord; changes: JobChange[] }
  /** Every slot of the workflow's `concurrency` is taken and it says `queue`: the run waits for one. */
  | { kind: 'queued'; run: RunRecord }
  | { kind: 'not_found' }
  /** Every slot is taken (by default: a run is running) and `when_full` is `reject`. */
  | { kind: 'active'; run_number: number; run_numbers: number[] }
  /** The definition changed since the caller read it (its hash differs): read again and retry. */
  | { kind: 'stale' };

export type CancelRunOutcome =
  /** `run_number`: the newest run cancelled; `runs`: every run cancelled, oldest first; `jobs`: their jobs cancelled. */
  | { kind: 'cancelled'; run_number: number; runs: number[]; jobs: string[]; changes: JobChange[] }
  /** No such run, or no active run: nothing changed. */
  | { kind: 'idle' }
  | { kind: 'not_found' };

/** What a reaper sweep settled. */
export interface ReapOutcome {
  changes: JobChange[];
  /** Each attempt the sweep ended, as its job is afterwards: queued again for a retry, or failed. */
  ended: JobRecord[];
}

/**
 * What retention deletes (README "Retention"): finished runs that are not their workflow's latest and
 * that are beyond the newest `retain_runs` of their workflow, or finished before `finished_before_ms`
 * (either rule is enough). A run that is running or queued is never a candidate.
 */
export interface PruneRequest {
  /** Keep this many newest runs of each workflow (>= 1); null: no count rule. */
  retain_runs: number | null;
  /** Delete runs finished before this time (epoch ms); null: no age rule. */
  finished_before_ms: number | null;
  /** At most this many runs per call (the oldest finished first). */
  max_runs: number;
  /**
   * At most this many log chunks deleted per call: a run whose chunks do not fit has that many of them
   * deleted and is itself left for a later call (`partial`). Not used by a dry run.
   */
  max_log_chunks: number;
  /** Only report what would be deleted. */
  dry_run: boolean;
}

/** One run deleted by retention (or, in a dry run, that would be). */
export interface PrunedRun {
  workflow_id: string;
  run_number: number;
  status: RunState;
  finished_at_ms: number;
  /** Jobs of the run. */
  jobs: number;
  /** Log chunks of the run deleted with it (in a dry run: that it holds). */
  log_chunks: number;
}

export interface PruneOutcome {
  /** In the order they were (or would be) deleted: oldest finished first. */
  runs: PrunedRun[];
  /**
   * A run whose log chunks outnumbered what was left of `max_log_chunks`: this many of its chunks were
   * deleted, and the run follows in a later call (with the chunks left then).
   */
  partial: { workflow_id: string; run_number: number; log_chunks: number } | null;
  /** More runs are due than this call deleted (or, in a dry run, listed): call again. */
  more: boolean;
}

/** How much one call of `deleteWorkflow` may delete before answering `more`. */
export interface DeleteLimits {
  max_runs: number;
  max_log_chunks: number;
}

/**
 * `deleted`: the workflow and everything of it are gone. `more`: part of its runs were deleted within
 * the limits; call again. `active`: its latest run is running; nothing was deleted.
 */
export type DeleteWorkflowOutcome = 'deleted' | 'more' | 'not_found' | 'active';

/**
 * One scheduled time of a workflow handled (docs/architecture.md "Schedules"): next_fire_at_ms moves
 * from `fire_at_ms` to `next_fire_at_ms` and, with `start`, the run starts, in one transaction.
 */
export interface FireScheduleRequest extends StartRunRequest {
  /** The workflow's next_fire_at_ms as the caller read it: unless it is still that, nothing happens. */
  fire_at_ms: number;
  /** What next_fire_at_ms becomes: a time after `now_ms`, or null when no schedule fires again. */
  next_fire_at_ms: number | null;
  /** False: only move next_fire_at_ms on (due times dropped by `catch_up: none`). */
  start: boolean;
}

export type FireScheduleOutcome =
  | { kind: 'started'; run: RunRecord; changes: JobChange[] }
  /** Every slot was taken and `when_full` is `queue`: the run waits for one. */
  | { kind: 'queued'; run: RunRecord }
  /** A run was active: next_fire_at_ms moved on, no run started (the fire is skipped, not retried). */
  | { kind: 'skipped'; run_number: number }
  /** `start` was false: next_fire_at_ms moved on. */
  | { kind: 'advanced' }
  /** next_fire_at_ms is no longer `fire_at_ms`: another scheduler handled that time, or the schedules changed. */
  | { kind: 'taken' }
  | { kind: 'not_found' }
  /** The definition changed since the caller read it (schedules unchanged): read again and retry. */
  | { kind: 'stale' };

/** Queued runs a `startQueuedRuns` started, and their jobs (to announce). */
export interface StartedRuns {
  started: RunRecord[];
  changes: JobChange[];
}

export interface StartRunRequest {
  workflow_id: string;
  /** The definition's hash the jobs were built from; `stale` when it changed since. */
  expected_hash: string;
  jobs: readonly NewJob[];
  label_sets: readonly LabelSet[];
  now_ms: number;
  /** Stored on the run as they are; absent: none. */
  inputs?: Readonly<Record<string, string>>;
  /** A re-run: the run it was made from. Its jobs may then start as `success`, but at least one must not. */
  rerun_of?: number | null;
}

export interface ClaimRequest {
  worker_id: string;
  /** The worker's labels (normalized), recorded on the worker row. */
  worker_labels: readonly string[];
  /** Label keys the worker fits (decided by the domain rule); only jobs with these keys are taken. */
  label_keys: readonly string[];
  ttl_secs: number;
  /** Up to this many jobs, oldest claimable first (ready_at_ms, then row_id). */
  max: number;
  /** One fresh id per job that may be handed out; `lease_ids.length >= max`. */
  lease_ids: readonly string[];
  now_ms: number;
}

export interface Claimed {
  job: JobRecord;
  lease: LeaseRecord;
}

// ------------------------------------------------------------------------------------------- store

/**
 * The storage seam (docs/architecture.md "Store"). Every change is one operation: atomic, guarded by
 * who holds the lease (`WHERE lease_id = … AND state = 'active' AND expires_at_ms >= now`), correct
 * with any number of concurrent callers and server processes without a global lock, and answering an
 * outcome instead of throwing for the expected refusals. When an operation's promise resolves, its
 * effect is durable. The engine never sees SQL or a transaction; domain rules (retry plans, label
 * subsets, run state) come from src/domain, which the stores call.
 *
 * Both SQLite and PostgreSQL implement it; one conformance suite (test/store) runs against both.
 */
export interface Store {
  /** Human-readable kind, for logs: "sqlite" or "postgres". */
  readonly kind: string;

  /** Runs `fn` against one consistent snapshot for reading. */
  read<T>(fn: (reads: StoreReads) => Promise<T>): Promise<T>;

  // workflows
  /** Inserts a new workflow; `exists` when the id is taken (nothing changes). */
  createWorkflow(rec: WorkflowRecord): Promise<'created' | 'exists'>;
  /**
   * Creates the workflow, or replaces its definition in place (run history stays) when its hash or
   * source differs. `rec.created_at_ms` is used only on creation; `rec.updated_at_ms` on any write.
   */
  saveWorkflow(rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged'>;

  // runs
  /**
   * Starts run latest_run + 1 with the given jobs (roots `queued`, the rest `pending` with
   * `pending_needs` = their number of needs not yet `success`; a re-run's kept jobs start as `success`),
   * unless the latest run is still running. Run numbers are
   * unique and gapless per workflow. `expected_hash` guards against a definition that changed after
   * the jobs were built from it. The label sets of the jobs are recorded too.
   */
  startRun(req: StartRunRequest): Promise<StartRunOutcome>;
  /**
   * Handles one due time of a workflow's schedules, exactly once however many schedulers call it with
   * the same `fire_at_ms`: the first call that finds next_fire_at_ms equal to it moves it on (and starts
   * the run, unless one is active), every other call answers `taken`.
   */
  fireSchedule(req: FireScheduleRequest): Promise<FireScheduleOutcome>;
  /**
   * Cancels run `runNumber` (absent: every active run of the workflow): a queued run just becomes
   * `cancelled`; of a running one every pending, queued and running job is cancelled and their leases
   * voided, except jobs with `always()`/`cancelled()` that no cancel has spared before: those are marked
   * `run_cancelled` and run once their needs have ended (the run stays running until they end).
   */
  cancelRun(workflowId: string, nowMs: number, runNumber?: number): Promise<CancelRunOutcome>;
  /**
   * Starts the workflow's queued runs, oldest first, while fewer than its `concurrency.max_runs` run
   * (docs/architecture.md "Concurrent runs"): inserts each one's planned jobs (roots claimable from
   * `nowMs`) and marks it running. Each queued run starts exactly once, however many callers race.
   */
  startQueuedRuns(workflowId: string, nowMs: number): Promise<StartedRuns>;

  // the worker protocol
  /** Hands out up to `max` claimable jobs that fit, each exactly once, with a lease each; [] if none. */
  claim(req: ClaimRequest): Promise<Claimed[]>;
  /**
   * Hands leases back unused: each job whose lease is still active goes back to `queued` with the same
   * attempt and place in the queue (its ready_at_ms is unchanged), and the lease becomes `released`.
   * For a claim whose client went away before the answer reached it.
   */
  releaseLeases(leaseIds: readonly string[], nowMs: number): Promise<JobChange[]>;
  /** Renews the lease by its own ttl from now. */
  heartbeat(leaseId: string, nowMs: number): Promise<HeartbeatOutcome>;
  /**
   * Marks the lease's job a success with its outputs, decrements the pending-needs counter of each
   * direct dependent, and queues those that reach zero with the outputs of their direct needs (or
   * skips them, and so on down, when their `if:` says so: docs/architecture.md "Conditions"); settles
   * the run when it was the last unfinished job. All one atomic step.
   */
  complete(leaseId: string, outputs: Outputs, nowMs: number): Promise<CompleteOutcome>;
  /**
   * Applies a failure by the domain's retry plan (planFailure): re-queued for attempt + 1 after its
   * backoff, or failed with the jobs downstream skipped, or counted down and queued when their `if:`
   * lets them run after it, and the run settled if it is over.
   */
  fail(leaseId: string, error: string, retryable: boolean, nowMs: number): Promise<FailOutcome>;
  /** Stores chunks of the lease's attempt; a (run, job, attempt, sequence) already stored is ignored. */
  pushLogs(leaseId: string, chunks: readonly IncomingChunk[], nowMs: number): Promise<PushLogsOutcome>;

  // the reaper
  /** Settles up to `limit` active leases that ran out (retryable failure `lease expired`). */
  expireLeases(nowMs: number, limit: number): Promise<ReapOutcome>;
  /** Settles up to `limit` running jobs past their deadline (retryable failure `timed out after Ns`). */
  timeOutJobs(nowMs: number, limit: number): Promise<ReapOutcome>;
  /**
   * Settles up to `limit` running runs none of whose jobs can move any more; answers how many. A store
   * that settles a run apart from the transaction that finished its last job (PostgreSQL,
   * docs/architecture.md "Run settlement") leaves such a run behind when it crashes in between.
   */
  settleStrandedRuns(nowMs: number, limit: number): Promise<number>;

  // retention (README "Retention")
  /**
   * Deletes finished runs by `req` with their jobs, leases, outputs and log chunks, within the call's
   * limits; never a running run nor a workflow's latest run. A dry run changes nothing.
   */
  pruneRuns(req: PruneRequest): Promise<PruneOutcome>;
  /**
   * Deletes the workflow with all its runs, jobs, leases and log chunks, oldest runs first and at most
   * `limits` per call (`more` until the last call deletes the latest run with the workflow itself).
   * Refuses (`active`) while it has a running or queued run. Its id can be created again afterwards.
   */
  deleteWorkflow(id: string, limits: DeleteLimits): Promise<DeleteWorkflowOutcome>;

  // events between processes sharing the database (docs/architecture.md "Events between servers")
  /**
   * Delivers every message another process publishes to `onMessage`. `onResync` runs each time
   * listening starts again after it was cut off, when messages may have been missed; `onError` hears
   * of each failed try to listen again. Resolves once
   * listening, with a function that stops it. Absent where no other live process shares the store
   * (SQLite, whose other processes are found by periodic looks).
   */
  listen?(onMessage: (payload: string) => void, onResync: () => void, onError?: (err: Error) => void): Promise<() => Promise<void>>;
  /** Sends a short message (under 8,000 bytes) to every listening process, this one included. */
  publish?(payload: string): Promise<void>;

  // workers
  /** Creates or updates the worker, setting its labels and last-seen time. */
  registerWorker(workerId: string, labels: readonly string[], nowMs: number): Promise<WorkerRecord>;

  /**
   * Hears how long each durable write took, in seconds (README "Metrics"): on SQLite each group commit
   * (one transaction holding a batch of operations), on PostgreSQL each write transaction or
   * statement. One observer; a later call replaces it.
   */
  onCommit(observer: (seconds: number) => void): void;

  close(): Promise<void>;
}

/** A log chunk as pushed, before the lease fills in what it leaves out. */
export type IncomingChunk = IncomingLogChunk;
