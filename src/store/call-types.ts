/**
 * Workflows calling workflows (README "Workflows calling workflows"; docs/architecture.md "Workflows
 * calling workflows"): what the store's call operations take and answer.
 */
import type { CallChainProblem } from '../domain/calls.js';
import type { Outputs } from '../domain/model.js';
import type { StartRunRequest } from './operations.js';
import type { JobChange, JobRecord, RunKey, RunRecord } from './records.js';

/** A save that would close a cycle of calls or nest them too deep; nothing was saved. */
export interface CallChainRefusal {
  kind: 'call_chain';
  problem: CallChainProblem;
}

/** The start of a called workflow's run for one attempt of the job that calls it. */
export interface StartChildRunRequest extends StartRunRequest {
  /** The calling job and the attempt the run is for: unless the job is still `queued` at that attempt, nothing starts. */
  parent: { workflow_id: string; run_number: number; job_id: string; attempt: number };
}

export type StartChildRunOutcome =
  /** The run started, or waits (as startRun's); `parent`: the calling job, now `running` with `child_run` set. */
  | { kind: 'started'; run: RunRecord; changes: JobChange[]; parent: JobRecord }
  | { kind: 'queued'; run: RunRecord; replaced?: RunKey[]; supersede?: RunKey[]; parent: JobRecord }
  /** As startRun's; the calling job is unchanged (still queued). */
  | { kind: 'not_found' }
  | { kind: 'active'; run_number: number; run_numbers: number[] }
  | { kind: 'stale' }
  /** The calling job is no longer queued at that attempt (started by another server, cancelled, …): nothing changed. */
  | { kind: 'moved' };

/** How the calling job's attempt ends: with the child's outputs, or failed (by the job's retry plan when retryable). */
export type CallResult = { kind: 'success'; outputs: Outputs } | { kind: 'failed'; error: string; retryable: boolean };

export interface SettleCallRequest {
  workflow_id: string;
  run_number: number;
  job_id: string;
  /**
   * The state the job must be in, else nothing changes (a second delivery of a child's end, a job a
   * cancel ended): running on child run `child_run`, or, for a child that could not be started,
   * queued at `attempt` (then only a failure).
   */
  expect: { child_run: number } | { attempt: number };
  result: CallResult;
  now_ms: number;
}

export type SettleCallOutcome =
  /** `job` afterwards: success, queued again for its next attempt, or failed; `changes`: it and what it decided below. */
  | { kind: 'settled'; job: JobRecord; changes: JobChange[] }
  /** The job was not in the expected state: nothing changed. */
  | { kind: 'moved' };

export interface CallReads {
  /**
   * Jobs that call a workflow, queued and ready by `nowMs` (a retry's backoff over), oldest first, at most
   * `limit`: one range read of the claim index for CALL_LABEL_KEY.
   */
  queuedCalls(nowMs: number, limit: number): Promise<JobRecord[]>;
  /**
   * Child runs still running or queued whose calling job no longer runs on them (it was cancelled, or
   * its run is gone), at most `limit`, through the partial index runs_children: what must be cancelled.
   */
  orphanedChildRuns(limit: number): Promise<RunRecord[]>;
  /** The workflows whose definition calls another, at most `limit` (from workflow_calls). */
  callingWorkflows(limit: number): Promise<string[]>;
}

export interface CallWrites {
  /**
   * Starts a run of the called workflow as startRun does (its concurrency, groups and definition guard
   * apply) and, in the same transaction, moves the calling job from `queued` at `parent.attempt` to
   * `running` with `child_run` set and records the run's parent: exactly once per attempt however many
   * callers race.
   */
  startChildRun(req: StartChildRunRequest): Promise<StartChildRunOutcome>;
  /**
   * Ends the calling job's attempt, guarded by `expect`: a success with the child's outputs (what is below
   * is decided as after a completion), or a failure by its retry plan (as after a worker's failure).
   */
  settleCall(req: SettleCallRequest): Promise<SettleCallOutcome>;
}
