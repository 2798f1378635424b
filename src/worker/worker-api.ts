/**
 * The embeddable worker's public types: its options, what a handler gets and returns, its events and
 * the errors a handler throws or sees.
 */
import type { Logger } from 'pino';
import type { WorkflowClient } from '../client/client.js';
import type { ArtifactView } from '../domain/artifacts.js';
import type { ClaimedJob, LeaseView } from '../protocol/wire.js';
import type { LogStream, Outputs, UpstreamOutputs } from '../domain/model.js';

/** Throw this (or any error with `retryable === false`) from a handler to fail the job without retries. */
export class PermanentError extends Error {
  override name = 'PermanentError';
  readonly retryable = false as const;
}

/** Why a job's signal was aborted. */
export type AbortReason = 'cancelled' | 'lease_lost' | 'shutdown' | 'timeout';

/** The `reason` of an aborted `ctx.signal`. */
export class JobAbortedError extends Error {
  override name = 'JobAbortedError';
  constructor(
    readonly reason: AbortReason,
    message: string,
  ) {
    super(message);
  }
}

/** What a handler gets besides the job. */
export interface JobContext {
  /** The claimed job (same object as the handler's first argument). */
  readonly job: ClaimedJob;
  readonly lease: LeaseView;
  /** `job.attempt`: 0 for the first attempt. */
  readonly attempt: number;
  /** `job.upstream_outputs`: upstream job id → its outputs. */
  readonly upstream: UpstreamOutputs;
  /**
   * Aborted when the job is cancelled, its lease is lost (409, or expired while the server was out of
   * reach) or the worker is stopped with `abort: true`. `signal.reason` is a {@link JobAbortedError}.
   * Nothing is reported for an aborted job, whatever the handler returns afterwards.
   */
  readonly signal: AbortSignal;
  readonly workerId: string;
  /** A child of the worker's logger, bound to the job. */
  readonly logger: Logger;
  /**
   * Appends `text` to the job's log on `stream` (default stdout); a trailing newline is added when
   * missing. Text goes out in call order, batched, at most ~250 ms late. Consecutive calls on the same
   * stream are merged into one chunk per push (chunks are numbered from 0 per attempt). A stdout line
   * `::set-output key=value` also sets an output.
   */
  log(text: string, stream?: LogStream): void;
  /** Sets one output; the handler's returned outputs win over these. */
  setOutput(key: string, value: string): void;
  /** Outputs set so far through `setOutput` or `::set-output` lines. */
  readonly outputs: Readonly<Outputs>;
  /**
   * The attempt's own fresh directory under the worker's `workDir`, removed after it: the shell
   * handler's working directory, where `download:` has put the needs' artifacts and where
   * `artifacts:` patterns are matched (README "Artifacts").
   */
  readonly workDir: string;
  /**
   * Uploads a file (a path, relative to `workDir` or absolute) or a stream as artifact `name` of this
   * attempt, streamed with its SHA-256. It is kept only if the attempt succeeds. Rejects when the
   * server refuses it (lease gone, MAX_ARTIFACT_BYTES, a bad name).
   */
  uploadArtifact(name: string, source: string | AsyncIterable<Uint8Array>): Promise<ArtifactView>;
}

/**
 * Outputs a handler returns. Values are strings; `undefined` entries are left out (so handlers that
 * return different keys on different paths type-check without casts).
 */
export type HandlerOutputs = Record<string, string | undefined>;

export type JobHandler = (job: ClaimedJob, ctx: JobContext) => Promise<HandlerOutputs | void> | HandlerOutputs | void;

/**
 * A handler may carry a `prepare()`, called once when the Worker starts (the shell handler starts its
 * process launcher there, so that the first job does not wait for it; see ./launcher.ts).
 */
export function prepareHandler(handler: JobHandler): void {
  const prepare = (handler as { prepare?: unknown }).prepare;
  if (typeof prepare === 'function') (prepare as () => void)();
}

export interface WorkerOptions {
  /** Server base URL; ignored when `client` is given. Default http://localhost:3000. */
  serverUrl?: string;
  /** Bearer token with the `worker` role, when the server requires tokens; ignored when `client` is given. */
  token?: string;
  client?: WorkflowClient;
  /** Default {@link defaultWorkerId}(). */
  workerId?: string;
  labels?: string[];
  /** Integer 1..86400; default 30. */
  leaseTtlSecs?: number;
  /** Must be shorter than the lease; default leaseTtlSecs / 3. */
  heartbeatSecs?: number;
  /** Wait after a claim found nothing, against a server without long-poll claims; default 2. */
  pollSecs?: number;
  /**
   * How long one claim may wait on the server for a job (a long poll, 0..60); default 20. 0 turns it
   * off: claims then answer at once and the worker waits `pollSecs` between empty ones.
   */
  longPollSecs?: number;
  /**
   * Jobs run at once; default 1. Above 1, claims, reports and lease renewals go through the batch
   * endpoints (one request for many jobs) unless the server has none.
   */
  concurrency?: number;
  /**
   * How often a running job's cancellation is looked for; default 2. With batches, the one lease
   * renewal for all jobs runs at least this often, since its answer carries the cancellation.
   */
  cancelPollSecs?: number;
  /** Upper bound of the backoff between retries of a failing server call; default 15. */
  maxBackoffSecs?: number;
  /** How late a log chunk may be shipped; default 250 ms. */
  logFlushMs?: number;
  /**
   * How long a finished job's result waits for its buffered log chunks to go out before it is
   * reported anyway (chunks still buffered then are lost); default 10.
   */
  logDrainSecs?: number;
  /** `stop({ abort: true })` resolves after this long even if a handler ignores its signal; default 10 s. */
  abortGraceMs?: number;
  logger?: Logger;
  /**
   * WORK_DIR: each attempt runs in a fresh directory under it, removed afterwards (README
   * "Artifacts"). Default: `weft` under the OS temp directory.
   */
  workDir?: string;
  /** Who owns each attempt's directory (JOB_USER's ids); default the worker's own user. */
  workDirOwner?: { uid: number; gid: number };
  handler: JobHandler;
}

export interface JobStartEvent {
  job: ClaimedJob;
  lease: LeaseView;
}
export interface JobDoneEvent extends JobStartEvent {
  outputs: Outputs;
  /** The job state the server answered with (`success`, or `cancelled` if it was cancelled meanwhile). */
  status: string;
  durationMs: number;
}
export interface JobFailedEvent extends JobStartEvent {
  error: string;
  retryable: boolean;
  /** `queued` (re-queued for a retry) or `failed`. */
  status: string;
  durationMs: number;
}
export interface JobAbandonedEvent extends JobStartEvent {
  reason: AbortReason;
  detail: string;
  durationMs: number;
}

export interface WorkerEvents {
  registered: [{ workerId: string; labels: string[] }];
  'job:start': [JobStartEvent];
  'job:done': [JobDoneEvent];
  'job:failed': [JobFailedEvent];
  'job:abandoned': [JobAbandonedEvent];
  /** A claim call failed; the loop backs off and tries again. */
  'claim:error': [{ error: unknown; retryInMs: number }];
  /** The claim loop has ended after `stop()` and every running job has settled. */
  stopped: [];
}

export interface WorkerStats {
  claimed: number;
  succeeded: number;
  failed: number;
  abandoned: number;
  running: number;
}
