import type { PersonDecision } from '../domain/approval.js';
import type { RunState, RunTrigger } from '../domain/model.js';
import type { JobChange, JobRecord, LabelSet, LeaseRecord, NewJob, RunKey, RunRecord } from './records.js';

/** What the operations of the store (src/store/store.ts) take and answer. */

/**
 * Why a lease call could not proceed. `expired` and `timed_out` mean this very call found the lease
 * out of time and applied the failure (re-queue or fail, by the retry plan) before answering.
 */
export type LeaseRefusal =
  | { kind: 'not_found' }
  | { kind: 'settled'; state: 'completed' | 'failed' | 'expired' | 'timed_out' | 'released' }
  /**
   * `job`: the job after the failure, or null when it no longer ran under this lease (nothing else changed).
   * `ran`: the job as the attempt ran, before the failure (null with `job`); see FailOutcome.
   */
  | { kind: 'expired'; lease: LeaseRecord; job: JobRecord | null; ran: JobRecord | null; changes: JobChange[] }
  | { kind: 'timed_out'; lease: LeaseRecord; job: JobRecord; ran: JobRecord; changes: JobChange[] }
  /** The call came with another token than the lease's claim (leaseUsableBy); nothing changed. */
  | { kind: 'not_yours'; token_name: string };

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
   * `ran`: the job as the failed attempt ran, just before the failure: a re-queued job no longer
   * carries the attempt's ready time, claim or worker, which its trace span shows (README "Traces
   * (OpenTelemetry)").
   */
  | { kind: 'failed'; job: JobRecord; started_at_ms: number; ran: JobRecord; changes: JobChange[] }
  | { kind: 'cancelled'; job: JobRecord }
  | LeaseRefusal;

export type PushLogsOutcome =
  /** Also when the job was cancelled: its last words are still kept. */
  | {
      kind: 'stored';
      lease: LeaseRecord;
      /** Chunks kept (a re-sent one counts): those before the attempt's log budget ran out. */
      accepted: number;
      /** The attempt's log reached its budget, now or before: the marker is stored and the rest dropped. */
      truncated: boolean;
    }
  /** A chunk names another workflow or job than the lease's; nothing was stored. */
  | { kind: 'mismatch'; lease: LeaseRecord; index: number; field: 'workflow_id' | 'job_id'; value: string }
  | LeaseRefusal;

export type StartRunOutcome =
  | { kind: 'started'; run: RunRecord; changes: JobChange[] }
  /**
   * Every slot of the workflow's `concurrency` is taken and it says `queue`, or its concurrency group
   * has a running run: the run waits. `replaced`: the group's waiting runs it cancelled;
   * `supersede`: with cancel_in_progress, the group's running runs the caller is to cancel.
   */
  | { kind: 'queued'; run: RunRecord; replaced?: RunKey[]; supersede?: RunKey[] }
  | { kind: 'not_found' }
  /** Every slot is taken (by default: a run is running) and `when_full` is `reject`. */
  | { kind: 'active'; run_number: number; run_numbers: number[] }
  /** The definition changed since the caller read it (its hash differs): read again and retry. */
  | { kind: 'stale' }
  /** `delivery_key` was seen before for the workflow: the run it started; nothing changed. */
  | { kind: 'duplicate'; run: RunRecord };

export type CancelRunOutcome =
  /** `run_number`: the newest run cancelled; `runs`: every run cancelled, oldest first; `jobs`: their jobs cancelled. */
  | { kind: 'cancelled'; run_number: number; runs: number[]; jobs: string[]; changes: JobChange[] }
  /** No such run, or no active run: nothing changed. */
  | { kind: 'idle' }
  | { kind: 'not_found' };

/** What a reaper sweep settled. */
/** What settling the arrivals in concurrency groups of jobs did (README "Concurrency groups"). */
export interface JobGroupsOutcome {
  /** The jobs cancelled and what that decided below them. */
  changes: JobChange[];
  /** The workflows of the jobs whose arrival was settled: workflows that put jobs in groups. */
  workflows: string[];
  /** How many groups were settled (the call's limit: there may be more). */
  groups: number;
}

export interface ReapOutcome {
  changes: JobChange[];
  /** Each attempt the sweep ended, as its job is afterwards: queued again for a retry, or failed. */
  ended: JobRecord[];
  /**
   * expireLeases and timeOutJobs: the job of each attempt in `ended`, in the same order, as it ran just
   * before the sweep ended it (see FailOutcome's `ran`). Absent where no attempt ran (approvals).
   */
  ran?: JobRecord[];
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
  /**
   * The blob ids of the deleted runs' artifacts that no row names any more (absent in a dry run):
   * bytes kept outside the store (ARTIFACTS_DIR) under these ids can go. The store's own chunks of
   * them are deleted already.
   */
  unnamed_blobs?: string[];
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
  /** Every slot was taken and `when_full` is `queue`, or the group is busy: the run waits (as for startRun). */
  | { kind: 'queued'; run: RunRecord; replaced?: RunKey[]; supersede?: RunKey[] }
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
  /** The run's concurrency group, evaluated (README "Concurrency groups"); absent: none. */
  group?: { name: string; cancel_in_progress: boolean } | null;
  /** What started the run, recorded on it; absent: not said. */
  trigger?: RunTrigger;
  /**
   * The event the run is started with (README "Triggers and notifications"): its name on the run row,
   * its payload (JSON text) kept beside it; absent: none.
   */
  event?: { name: string; payload: string } | null;
  /**
   * A delivery key (domain/triggers.ts deliveryKey): recorded with the run in the same transaction; a
   * key the workflow has seen before answers `duplicate` with its run, and nothing starts.
   */
  delivery_key?: string | null;
}

/**
 * What the engine has the store claim, all decided already: which label keys fit the worker, the
 * lease ids to hand out, and the clock.
 */
export interface StoreClaim {
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
  /** The name of the token the claim came with, recorded on each lease; absent or null: none. */
  token_name?: string | null;
  /**
   * Absent or false: the claim is the worker's own call, which counts as seen (CONTRACT "Workers")
   * whether it takes a job or not. True: a waiting long-poll claim tried again on a wake-up; the
   * worker is recorded only when it takes a job, so that a try that finds nothing writes nothing
   * (no commit, no fsync: docs/performance.md "Third round").
   */
  retry?: boolean;
  /**
   * The claim must see what the completes handed to the store before it enqueue: a report-batch's
   * claim, handed over right after its reports (docs/api.md "Batches"). SQLite's writer applies
   * writes in the order they are handed over, so there this asks nothing more; on PostgreSQL the
   * claim goes right behind those completes (postgres/leases.ts claimAfterCompletes).
   */
  after_completes?: boolean;
}

export interface Claimed {
  job: JobRecord;
  lease: LeaseRecord;
}

/** A person's approve or reject of a job awaiting approval (README "Approvals"). */
export interface DecideApprovalRequest {
  workflow_id: string;
  run_number: number;
  job_id: string;
  decision: PersonDecision;
  /** The name of the token the decision came with; null when tokens are off. */
  decided_by: string | null;
  comment: string | null;
  now_ms: number;
}

export type DecideApprovalOutcome =
  /**
   * `job`: the job after the decision: `queued` (approved, with a command), `success` (approved, an
   * approval alone) or `failed` (rejected). `changes`: it and the jobs below it that this decided.
   */
  | { kind: 'decided'; job: JobRecord; changes: JobChange[] }
  /** The job is not awaiting approval (not yet, or decided, cancelled, …); nothing changed. */
  | { kind: 'not_waiting'; job: JobRecord }
  /** The run has no such job. */
  | { kind: 'not_found' };
