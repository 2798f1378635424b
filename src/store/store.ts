import type { IncomingLogChunk, Outputs, WorkflowDefinition } from '../domain/model.js';
import type { TriggerKind } from '../domain/triggers.js';
import type {
  ActiveJobCount,
  JobGroupHolder,
  JobChange,
  JobRecord,
  JobViewRecord,
  LabelSet,
  LeaseRecord,
  ListWorkflowsQuery,
  LogChunkRecord,
  LogQuery,
  RunJobCount,
  RunKey,
  RunRecord,
  WorkerRecord,
  WorkflowRecord,
} from './records.js';
import type {
  CancelRunOutcome,
  DecideApprovalOutcome,
  DecideApprovalRequest,
  StoreClaim,
  Claimed,
  CompleteOutcome,
  DeleteLimits,
  DeleteWorkflowOutcome,
  FailOutcome,
  FireScheduleOutcome,
  FireScheduleRequest,
  HeartbeatOutcome,
  PruneOutcome,
  PruneRequest,
  PushLogsOutcome,
  ReapOutcome,
  JobGroupsOutcome,
  StartRunOutcome,
  StartRunRequest,
  StartedRuns,
} from './operations.js';

import type { ArtifactReads, ArtifactWrites } from './artifact-types.js';
import type { SecretReads, SecretWrites } from './secret-types.js';
import type { NotificationReads, NotificationWrites } from './notification-types.js';
import type { RunEndReads, RunEndWrites } from './run-end-types.js';
import type { CallChainRefusal, CallReads, CallWrites } from './call-types.js';

export type * from './records.js';
export type * from './artifact-types.js';
export type * from './secret-types.js';
export type * from './notification-types.js';
export type * from './run-end-types.js';
export type * from './call-types.js';
export type * from './operations.js';

/**
 * The storage seam. The engine speaks only to these interfaces; SQLite and PostgreSQL implement them
 * and one conformance suite (test/store) runs against both. All methods are async so that a networked
 * database fits the same shape as the embedded one.
 */

/**
 * Reads, against one consistent snapshot. Nothing here changes anything; every change goes through
 * one of the operations of `Store`.
 */
export interface StoreReads extends ArtifactReads, SecretReads, CallReads, NotificationReads {
  getWorkflow(id: string): Promise<WorkflowRecord | null>;
  listWorkflows(q: ListWorkflowsQuery): Promise<WorkflowRecord[]>;
  getRun(workflowId: string, runNumber: number): Promise<RunRecord | null>;
  /** The definition a run of the workflow used, by its `definition_hash` (README "Dashboard"); null: not kept. */
  getRunDefinition(workflowId: string, hash: string): Promise<WorkflowDefinition | null>;
  /** Many runs in one query (a page of the workflow list); unknown keys are left out. */
  getRuns(keys: readonly RunKey[]): Promise<RunRecord[]>;
  /** The run's jobs in row order. */
  getRunJobs(workflowId: string, runNumber: number): Promise<JobRecord[]>;
  /**
   * The run's jobs in row order as a status document shows them (JobViewRecord); with `page`, only
   * those after row `afterRowId`, at most `limit` of them (a large run read a page at a time,
   * docs/api.md "GET /api/workflows").
   */
  getRunJobViews(workflowId: string, runNumber: number, page?: { afterRowId: number; limit: number }): Promise<JobViewRecord[]>;
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
  /** Workers by id; every one without `page` (SPEC 4.3), else one page of them. */
  listWorkers(page?: { limit: number; offset: number }): Promise<WorkerRecord[]>;
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
   * The running job of each of these concurrency groups of jobs that has one (README "Concurrency
   * groups"), through the partial index jobs_job_group: what a queued job of the group waits for.
   */
  jobGroupHolders(groups: readonly string[]): Promise<JobGroupHolder[]>;
  /**
   * Workflows whose next_fire_at_ms is at or before `nowMs`, earliest first, at most `limit`: one range
   * read of the partial index workflows_next_fire, whatever the number of workflows.
   */
  dueSchedules(nowMs: number, limit: number): Promise<WorkflowRecord[]>;
  /** The workflow's running and queued runs, oldest first, through the partial indexes runs_running and runs_queued. */
  activeRuns(workflowId: string): Promise<RunRecord[]>;
  /** Ids of workflows that have a queued run, at most `limit`, through runs_queued. */
  queuedWorkflows(limit: number): Promise<string[]>;
  /** The payload (JSON text) of the event run n was started with; null: none (README "Triggers and notifications"). */
  getRunEvent(workflowId: string, runNumber: number): Promise<string | null>;
  /**
   * The ids of the workflows listening for a named event (`event`, key: its name) or following a
   * workflow's runs (`workflow_run`, key: its id), sorted: one primary-key range of workflow_triggers.
   */
  listeners(kind: TriggerKind, key: string): Promise<string[]>;
}

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
export interface Store extends ArtifactWrites, SecretWrites, RunEndReads, RunEndWrites, CallWrites, NotificationWrites {
  /** Human-readable kind, for logs: "sqlite" or "postgres". */
  readonly kind: string;
  /**
   * Whether writes handed over in the same turn of the event loop share one transaction, each seeing
   * the ones before it (SQLite's writer thread, sqlite/writer.ts). A report-batch then hands its claim
   * over together with its reports; otherwise (PostgreSQL: a statement per kind of write, in flight at
   * once) the claim goes after the reports, so that it sees the jobs they enqueue.
   */
  readonly writesShareCommits: boolean;

  /** Runs `fn` against one consistent snapshot for reading. */
  read<T>(fn: (reads: StoreReads) => Promise<T>): Promise<T>;

  // workflows
  /**
   * Inserts a new workflow; `exists` when the id is taken (nothing changes). With it, the listener
   * rows of its definition (domain/triggers.ts triggerRows), as saveWorkflow keeps them in step. A
   * definition whose `uses:` would close a cycle of calls or nest them deeper than MAX_CALL_DEPTH is
   * refused (`call_chain`), checked under a lock against every saved call (README "Workflows calling
   * workflows").
   */
  createWorkflow(rec: WorkflowRecord): Promise<'created' | 'exists' | CallChainRefusal>;
  /**
   * Creates the workflow, or replaces its definition in place (run history stays) when its hash or
   * source differs. `rec.created_at_ms` is used only on creation; `rec.updated_at_ms` on any write.
   */
  saveWorkflow(rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged' | CallChainRefusal>;

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
  claim(req: StoreClaim): Promise<Claimed[]>;
  /**
   * Hands leases back unused: each job whose lease is still active goes back to `queued` with the same
   * attempt and place in the queue (its ready_at_ms is unchanged), and the lease becomes `released`.
   * For a claim whose client went away before the answer reached it.
   */
  releaseLeases(leaseIds: readonly string[]): Promise<JobChange[]>;
  /*
   * Every lease call takes `holder`, the name of the token the call came with: a lease claimed with
   * another token answers `not_yours` and nothing changes (domain/lease.ts leaseUsableBy). Absent or
   * null: no token (authentication off), no check.
   */
  /** Renews the lease by its own ttl from now. */
  heartbeat(leaseId: string, nowMs: number, holder?: string | null): Promise<HeartbeatOutcome>;
  /**
   * Marks the lease's job a success with its outputs, decrements the pending-needs counter of each
   * direct dependent, and queues those that reach zero with the outputs of their direct needs (or
   * skips them, and so on down, when their `if:` says so: docs/architecture.md "Conditions"); settles
   * the run when it was the last unfinished job. All one atomic step.
   */
  complete(leaseId: string, outputs: Outputs, nowMs: number, holder?: string | null): Promise<CompleteOutcome>;
  /**
   * Applies a failure by the domain's retry plan (planFailure): re-queued for attempt + 1 after its
   * backoff, or failed with the jobs downstream skipped, or counted down and queued when their `if:`
   * lets them run after it, and the run settled if it is over.
   */
  fail(leaseId: string, error: string, retryable: boolean, nowMs: number, holder?: string | null): Promise<FailOutcome>;
  /**
   * Stores chunks of the lease's attempt; a (run, job, attempt, sequence) already stored is ignored.
   * The attempt logs at most `maxBytes` (default 64 MiB) of chunk data: the chunk that would pass it is
   * stored as the truncation marker and the rest, then and later, dropped (src/domain/log-budget.ts).
   */
  pushLogs(leaseId: string, chunks: readonly IncomingChunk[], nowMs: number, holder?: string | null, maxBytes?: number): Promise<PushLogsOutcome>;

  // approvals (README "Approvals")
  /**
   * Decides a job awaiting approval, exactly once however many callers race (guarded by its state):
   * approved, a job with a command is queued (claimable from now); an approval alone ends `success`
   * and its dependents are decided as after a completion; rejected, it ends `failed` (never retried),
   * with what is below decided as after a permanent failure. The run is settled if that was its end.
   */
  decideApproval(req: DecideApprovalRequest): Promise<DecideApprovalOutcome>;
  /**
   * Fails up to `limit` jobs whose wait for approval outlived `approval.timeout_secs` (decision
   * `timed_out`, never retried), as a reject would.
   */
  timeOutApprovals(nowMs: number, limit: number): Promise<ReapOutcome>;

  // concurrency groups of jobs (README "Concurrency groups")
  /**
   * Settles the jobs that arrived in up to `limit` concurrency groups since the last call, under each
   * group's lock (domain/job-groups.ts): the group's waiting jobs they replace are cancelled, and with
   * cancel_in_progress its running one too (lease voided). Idempotent; safe from any server at once.
   */
  settleJobGroups(nowMs: number, limit: number): Promise<JobGroupsOutcome>;

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
   * Deletes up to `limit` workers last seen before `seenBeforeMs` that hold no active lease, oldest
   * first; answers how many (README "WORKER_RETAIN_SECS"). A worker that calls again is created anew.
   */
  pruneWorkers(seenBeforeMs: number, limit: number): Promise<number>;

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
