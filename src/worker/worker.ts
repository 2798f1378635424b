/**
 * The embeddable worker: registers, claims jobs, runs a handler per job and speaks the rest of the
 * worker protocol for it (docs/api.md "Worker protocol", README "How a run works" and "The
 * worker"): heartbeats, batched log chunks, cancellation polling, and a result report that is retried
 * until it lands or the lease is known to be gone.
 *
 * `weft worker` is this class with the shell handler of ./shell.ts.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { pino, type Logger } from 'pino';
import { WorkflowApiError, WorkflowClient, WorkflowNetworkError } from '../client/client.js';
import { classifyAnswer, landedReportCode, type LeaseCallOutcome } from '../protocol/errors.js';
import type { ClaimResult, ClaimedJob, IncomingLogChunk, LeaseView } from '../protocol/types.js';
import type { LogStream, Outputs, UpstreamOutputs } from '../domain/types.js';
import { sleep } from '../util/sleep.js';

/** The interface's rule: error text sent by workers is truncated to this many characters. */
export const MAX_ERROR_CHARS = 4096;

/** Throw this (or any error with `retryable === false`) from a handler to fail the job without retries. */
export class PermanentError extends Error {
  override name = 'PermanentError';
  readonly retryable = false as const;
}

/** Why a job's signal was aborted. */
export type AbortReason = 'cancelled' | 'lease_lost' | 'shutdown';

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
}

/**
 * Outputs a handler returns. Values are strings; `undefined` entries are left out (so handlers that
 * return different keys on different paths type-check without casts).
 */
export type HandlerOutputs = Record<string, string | undefined>;

export type JobHandler = (job: ClaimedJob, ctx: JobContext) => Promise<HandlerOutputs | void> | HandlerOutputs | void;

export interface WorkerOptions {
  /** Server base URL; ignored when `client` is given. Default http://localhost:3000. */
  serverUrl?: string;
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
  /** Jobs run at once; default 1. */
  concurrency?: number;
  /** How often a running job's cancelled flag is checked; default 2. */
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

/** A chunk never holds more than this; longer text is split. */
const MAX_CHUNK_CHARS = 32 * 1024;
const MAX_BATCH_CHUNKS = 1000;
const MAX_BATCH_CHARS = 128 * 1024;
/**
 * Buffer bounds while the server is not taking logs. Both are needed: characters bound the text, the
 * chunk count bounds the per-chunk overhead when the streams alternate line by line.
 */
const MAX_BUFFERED_LOG_CHARS = 8 * 1024 * 1024;
const MAX_BUFFERED_CHUNKS = 10_000;
/** How long an aborted job's last log lines may take to go out. */
const LAST_WORDS_MS = 2000;

/** `${hostname}-${6 hex}`: the worker id used when none is given. */
export function defaultWorkerId(): string {
  return `${os.hostname()}-${randomBytes(3).toString('hex')}`;
}

/** A `::set-output key=value` line (a trailing CR is ignored), or null. */
export function parseSetOutput(line: string): [string, string] | null {
  const m = /^::set-output ([^=]+)=(.*?)\r?$/s.exec(line);
  if (!m) return null;
  const key = m[1]!.trim();
  return key === '' ? null : [key, m[2]!];
}

/** Cuts `text` to at most `max` characters (UTF-16 units), marking the cut, never splitting a pair. */
export function truncateError(text: string, max = MAX_ERROR_CHARS): string {
  if (text.length <= max) return text;
  const marker = '… [truncated]';
  let head = text.slice(0, Math.max(0, max - marker.length));
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  return head + marker;
}

/** A server from before long polls refuses the unknown `wait_secs` field of a claim. */
function refusesLongPoll(err: unknown): boolean {
  return err instanceof WorkflowApiError && err.status === 400 && /wait_secs/.test(err.serverMessage);
}

/** What an error of a server call means for the worker, by the catalogue in docs/protocol.md. */
function outcomeOf(err: unknown): LeaseCallOutcome {
  return err instanceof WorkflowApiError ? classifyAnswer(err.status, err.error) : classifyAnswer(null, null);
}

/** Network failures, timeouts, 5xx, 408 and 429 are worth retrying; other answers are not. */
export function isTransient(err: unknown): boolean {
  return outcomeOf(err) === 'transient';
}

/** The server says this lease is over: its job was cancelled, or the lease expired or was settled. */
function isLeaseOver(err: unknown): err is WorkflowApiError {
  const o = outcomeOf(err);
  return o === 'lease_lost' || o === 'cancelled';
}

function describe(err: unknown): string {
  if (err instanceof WorkflowApiError) return `${err.status} ${err.error}: ${err.serverMessage}`;
  // Its message already names the call and the cause.
  if (err instanceof WorkflowNetworkError) return err.message;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** The text to report for a thrown value. */
function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name || 'handler failed';
  if (typeof err === 'string') return err || 'handler failed';
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

function isRetryable(err: unknown): boolean {
  if (err instanceof PermanentError) return false;
  if (err !== null && typeof err === 'object' && (err as { retryable?: unknown }).retryable === false) return false;
  return true;
}

/** Handler results are declared as strings; anything else a JS caller returns is stringified. */
function normalizeOutputs(value: unknown): Outputs {
  const out: Outputs = {};
  if (value === null || typeof value !== 'object') return out;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return out;
}

const now = () => performance.now();

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Capped exponential backoff with ±20 % jitter; `n` counts failures from 0. */
function backoffMs(n: number, capMs: number, baseMs = 250): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(n, 30));
  return Math.min(capMs, raw * (0.8 + Math.random() * 0.4));
}

/** Resolves when `signal` aborts (at once if it already has). Holds no timer, so keeps nothing alive. */
function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** A resettable wake-up: `wait()` resolves at the next `poke()` (or after `ms`). */
class Wakeup {
  private controller = new AbortController();
  poke(): void {
    this.controller.abort();
    this.controller = new AbortController();
  }
  wait(ms?: number): Promise<void> {
    return ms === undefined ? whenAborted(this.controller.signal) : sleep(ms, this.controller.signal);
  }
}

type Outcome = { ok: true; outputs: Outputs } | { ok: false; error: string; retryable: boolean };

// ------------------------------------------------------------------------------------------ one job

/**
 * Buffers a job attempt's log text and pushes it in order from a single sending loop, one request at
 * a time. Consecutive text of one stream is merged into the open chunk until it is sent (or full);
 * a chunk that has been sent once never changes, so a re-send after a lost answer is deduplicated by
 * its sequence on the server.
 */
class LogSender {
  /** Sealed chunks; those from `head` on are not delivered yet. */
  private queue: IncomingLogChunk[] = [];
  private head = 0;
  /** The chunk still taking text: not numbered and not sent yet. */
  private open: { stream: LogStream; parts: string[]; chars: number; timestamp: number } | null = null;
  private sequence = 0;
  /** Characters buffered (sealed undelivered chunks and the open one). */
  private chars = 0;
  private dropped = 0;
  /** When the oldest undelivered text was pushed; it must go out by then + logFlushMs. */
  private oldestAt = 0;
  private failures = 0;
  /** After a failed push nothing is sent before this, however much output keeps coming. */
  private nextAttemptAt = 0;
  private flushDeadline: number | null = null;
  private closed = false;
  private looping = false;
  /** True while the loop waits for text to arrive (not for a due time): only then does a push wake it. */
  private idle = false;
  private readonly wakeup = new Wakeup();
  /** Poked after every push attempt and on close, for flush(). */
  private readonly progress = new Wakeup();
  private readonly closer = new AbortController();

  constructor(private readonly run: JobRun) {}

  push(data: string, stream: LogStream): void {
    if (this.closed) return;
    if (!this.hasRoom()) {
      this.dropped++;
      return;
    }
    if (!this.pending) this.oldestAt = now();
    this.noteDropped();
    for (let i = 0; i < data.length || i === 0; i += MAX_CHUNK_CHARS) this.append(data.slice(i, i + MAX_CHUNK_CHARS), stream);
    this.start();
  }

  /** Chunks not delivered yet (counting the open one). */
  get undelivered(): number {
    return this.queue.length - this.head + (this.open ? 1 : 0);
  }

  private get pending(): boolean {
    return this.open !== null || this.head < this.queue.length;
  }

  private hasRoom(): boolean {
    return this.undelivered < MAX_BUFFERED_CHUNKS && this.chars < MAX_BUFFERED_LOG_CHARS;
  }

  /** Puts the count of pushes dropped for lack of room into the log, where they would have been. */
  private noteDropped(): void {
    if (this.dropped === 0 || !this.hasRoom()) return;
    const n = this.dropped;
    this.dropped = 0;
    this.append(`[weft worker: ${n} log chunk(s) dropped while the server was not taking them]\n`, 'stderr');
  }

  private append(text: string, stream: LogStream): void {
    const open = this.open;
    if (open && open.stream === stream && open.chars + text.length <= MAX_CHUNK_CHARS) {
      open.parts.push(text);
      open.chars += text.length;
    } else {
      this.seal();
      this.open = { stream, parts: [text], chars: text.length, timestamp: Date.now() };
    }
    this.chars += text.length;
  }

  private seal(): void {
    const open = this.open;
    if (!open) return;
    this.open = null;
    this.queue.push({ sequence: this.sequence++, data: open.parts.join(''), stream: open.stream, timestamp_ms: open.timestamp });
  }

  private start(): void {
    if (!this.looping) {
      this.looping = true;
      void this.loop();
    } else if (this.idle) {
      // Only when idle: a wake-up per line would cost more than the line.
      this.idle = false;
      this.wakeup.poke();
    }
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      if (!this.pending) {
        this.idle = true;
        await this.wakeup.wait();
        this.idle = false;
        continue;
      }
      const dueAt = Math.max(this.flushDeadline !== null ? 0 : this.oldestAt + this.run.worker.logFlushMs, this.nextAttemptAt);
      const wait = dueAt - now();
      if (wait > 0) {
        await this.wakeup.wait(wait);
        continue;
      }
      await this.sendBatch();
      this.progress.poke();
    }
    this.progress.poke();
  }

  private async sendBatch(): Promise<void> {
    this.seal();
    let n = 0;
    let chars = 0;
    while (this.head + n < this.queue.length && n < MAX_BATCH_CHUNKS) {
      const size = this.queue[this.head + n]!.data.length;
      if (n > 0 && chars + size > MAX_BATCH_CHARS) break;
      chars += size;
      n++;
    }
    const batch = this.queue.slice(this.head, this.head + n);
    const deadline = this.flushDeadline;
    try {
      await this.run.worker.client.pushLogs(this.run.lease.lease_id, batch, {
        signal: this.closer.signal,
        // A flush must not wait on one request longer than it has.
        timeoutMs: deadline === null ? undefined : Math.max(1, deadline - now()),
      });
    } catch (err) {
      if (this.closed) return;
      if (isLeaseOver(err)) {
        this.run.lost(err);
        // Whatever the 409 says, this lease takes no more logs.
        this.close();
        return;
      }
      if (isTransient(err)) {
        this.failures++;
        this.nextAttemptAt = now() + backoffMs(this.failures - 1, this.run.worker.maxBackoffMs, 500);
        if (this.failures === 1) {
          this.run.log.warn({ err: describe(err), chunks: this.undelivered }, 'log push failed; retrying with backoff (logged again once it recovers)');
        }
        return;
      }
      // The server refused these chunks for good (400, 413): retrying cannot help.
      this.run.log.error({ err: describe(err), chunks: n }, 'log chunks rejected by the server; dropping them');
      this.failures = 0;
    }
    if (this.closed) return;
    if (this.failures > 0) this.run.log.info({ failed_attempts: this.failures }, 'log push got through again');
    this.failures = 0;
    this.nextAttemptAt = 0;
    this.consume(n, chars);
    // Whatever came in meanwhile has waited for this request already.
    this.oldestAt = 0;
    this.noteDropped();
  }

  private consume(n: number, chars: number): void {
    this.head += n;
    this.chars -= chars;
    // Compact now and then rather than shifting the array on every batch.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Sends everything buffered, waiting at most `timeoutMs` (it still never sends before a failure's
   * backoff has passed). Resolves with the number of chunks that did not go out.
   */
  async flush(timeoutMs: number): Promise<number> {
    if (this.closed) return 0;
    const deadline = now() + Math.max(0, timeoutMs);
    this.flushDeadline = deadline;
    this.noteDropped();
    // The loop may be waiting out the batching delay, which a flush does not.
    if (this.pending) this.start();
    if (this.looping) this.wakeup.poke();
    while (!this.closed && this.pending && now() < deadline) await this.progress.wait(deadline - now());
    return this.closed ? 0 : this.undelivered;
  }

  /** Stops sending and forgets what is buffered; a request in flight is aborted. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closer.abort();
    this.queue = [];
    this.head = 0;
    this.open = null;
    this.chars = 0;
    this.wakeup.poke();
    this.progress.poke();
  }
}

/** How a report (complete or fail) ended. */
type Delivery =
  /** The server answered 2xx with this job state. */
  | { kind: 'landed'; status: string }
  /** A retry got 409 saying the lease was already settled the way we asked: an earlier try landed. */
  | { kind: 'settled'; status: string }
  /** The lease is gone (or the run was abandoned): nothing more will be accepted. */
  | { kind: 'lost'; detail: string }
  /** A 4xx other than 409: retrying cannot help. */
  | { kind: 'refused'; err: unknown }
  /** Still failing transiently when the deadline passed. */
  | { kind: 'timeout'; detail: string };

/** The life of one claimed attempt. */
class JobRun {
  readonly job: ClaimedJob;
  readonly lease: LeaseView;
  readonly log: Logger;
  readonly controller = new AbortController();
  readonly sender: LogSender;
  readonly outputs: Outputs = {};
  readonly startedAt = now();
  /** Local (monotonic) estimate of when the lease expires; never later than the server's. */
  private expiresAt: number;
  private expiryTimer: NodeJS.Timeout | undefined;
  private readonly ttlMs: number;
  abandoned: { reason: AbortReason; detail: string } | null = null;
  /** Why the lease is known to be gone (a 409, or its local expiry passed): nothing is sent for it any more. */
  gone: string | null = null;
  /** The handler's result, once it has settled. */
  outcome: Outcome | null = null;
  /** Aborted once the result has been reported (or given up): heartbeats and polls stop. */
  private readonly finished = new AbortController();
  /** Aborted when the lease is known to be gone. */
  private readonly goneController = new AbortController();

  constructor(
    readonly worker: Worker,
    claim: ClaimResult,
    claimSentAt: number,
  ) {
    this.job = claim.job;
    this.lease = claim.lease;
    this.ttlMs = claim.lease.ttl_secs * 1000;
    this.expiresAt = claimSentAt + this.ttlMs;
    this.log = worker.logger.child({
      workflow_id: claim.job.workflow_id,
      job_id: claim.job.job_id,
      run: claim.job.run_number,
      attempt: claim.job.attempt,
      lease_id: claim.lease.lease_id,
    });
    this.sender = new LogSender(this);
  }

  leaseExpired(): boolean {
    return now() > this.expiresAt;
  }

  /** Aborts the handler (reason `cancelled` or `shutdown`; `lease_lost` goes through loseLease). */
  abandon(reason: AbortReason, detail: string): void {
    if (this.abandoned || this.gone) return;
    // A finished handler has nothing left to abort: its result is still worth reporting.
    if (reason === 'shutdown' && this.outcome) return;
    this.abandoned = { reason, detail };
    this.log.warn({ reason, detail }, `aborting the job: ${detail}`);
    // A cancelled lease stays open for the last log lines whatever its expiry; nothing else needs it.
    if (reason === 'cancelled') clearTimeout(this.expiryTimer);
    this.controller.abort(new JobAbortedError(reason, detail));
  }

  /** The lease is no longer ours: stop everything for it, and abort the handler. */
  loseLease(detail: string): void {
    if (this.gone) return;
    if (this.finished.signal.aborted) return;
    clearTimeout(this.expiryTimer);
    this.sender.close();
    if (!this.abandoned) this.abandon('lease_lost', detail);
    this.gone = detail;
    this.goneController.abort();
  }

  get goneSignal(): AbortSignal {
    return this.goneController.signal;
  }

  /** A 409 from the server: the lease is gone (expired, settled, or its job cancelled). */
  lost(err: WorkflowApiError): void {
    if (outcomeOf(err) === 'cancelled') this.abandon('cancelled', err.serverMessage);
    else this.loseLease(err.serverMessage);
  }

  startLoops(): void {
    this.armExpiry();
    void this.heartbeatLoop();
    void this.cancelLoop();
  }

  /** Ends heartbeats, polls and the expiry timer. A request in flight is aborted; its answer is ignored. */
  finish(): void {
    clearTimeout(this.expiryTimer);
    this.finished.abort();
    this.sender.close();
  }

  /**
   * Without this, a hung server would only be noticed when a heartbeat request times out, and the job
   * could run on after the server has handed it to another worker.
   */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => this.loseLease(`the lease expired: no heartbeat got through within its ${this.ttlMs / 1000} s ttl`),
      Math.max(0, this.expiresAt - now()),
    );
  }

  /** Heartbeats run until the report is done, also while a shutdown's failure report is being sent. */
  private get heartbeating(): boolean {
    return !this.finished.signal.aborted && this.gone === null && (this.abandoned === null || this.abandoned.reason === 'shutdown');
  }

  private async heartbeatLoop(): Promise<void> {
    const every = this.worker.heartbeatMs;
    let failures = 0;
    while (this.heartbeating) {
      await sleep(failures === 0 ? every : Math.min(every, backoffMs(failures - 1, every, 250)), this.finished.signal);
      if (!this.heartbeating) return;
      const sentAt = now();
      try {
        // An answer arriving after the lease ran out, or after the next heartbeat was due, is no use.
        const timeoutMs = Math.max(1, Math.min(every, this.expiresAt - sentAt));
        await this.worker.client.heartbeat(this.lease.lease_id, { timeoutMs, signal: this.finished.signal });
        if (!this.heartbeating) return;
        this.expiresAt = sentAt + this.ttlMs;
        this.armExpiry();
        if (failures > 0) this.log.info({ failed_attempts: failures }, 'heartbeat got through again');
        failures = 0;
      } catch (err) {
        if (!this.heartbeating) return;
        if (isLeaseOver(err)) return this.lost(err);
        failures++;
        this.log.warn(
          { err: describe(err), lease_left_ms: Math.max(0, Math.round(this.expiresAt - now())) },
          'heartbeat failed; will retry',
        );
      }
    }
  }

  private async cancelLoop(): Promise<void> {
    const every = this.worker.cancelPollMs;
    const over = () => this.finished.signal.aborted || this.abandoned !== null;
    while (!over()) {
      await sleep(every, this.finished.signal);
      if (over()) return;
      try {
        if (await this.worker.client.isCancelled(this.job.workflow_id, this.job.job_id, { signal: this.finished.signal })) {
          this.abandon('cancelled', 'the job was cancelled');
          return;
        }
      } catch (err) {
        if (!over()) this.log.debug({ err: describe(err) }, 'cancellation check failed');
      }
    }
  }

  context(): JobContext {
    const run = this;
    return {
      job: this.job,
      lease: this.lease,
      attempt: this.job.attempt,
      upstream: this.job.upstream_outputs ?? {},
      signal: this.controller.signal,
      workerId: this.worker.workerId,
      logger: this.log,
      outputs: this.outputs,
      log(text: string, stream: LogStream = 'stdout') {
        const s: LogStream = stream === 'stderr' ? 'stderr' : 'stdout';
        const data = String(text);
        if (s === 'stdout') {
          for (const line of data.split('\n')) {
            const kv = parseSetOutput(line);
            if (kv) run.outputs[kv[0]] = kv[1];
          }
        }
        run.sender.push(data.endsWith('\n') ? data : `${data}\n`, s);
      },
      setOutput(key: string, value: string) {
        run.outputs[String(key)] = String(value);
      },
    };
  }
}

// ------------------------------------------------------------------------------------------ worker

/** Pulls jobs from a weft server and runs `handler` for each. See {@link WorkerOptions}. */
export class Worker extends EventEmitter<WorkerEvents> {
  readonly client: WorkflowClient;
  readonly workerId: string;
  readonly labels: string[];
  readonly leaseTtlSecs: number;
  readonly concurrency: number;
  readonly logger: Logger;
  /** @internal */ readonly heartbeatMs: number;
  /** @internal */ readonly pollMs: number;
  /** 0 once the server turned long polls down (it predates them). */
  private longPollSecs: number;
  /** @internal */ readonly cancelPollMs: number;
  /** @internal */ readonly maxBackoffMs: number;
  /** @internal */ readonly logFlushMs: number;
  private readonly logDrainMs: number;
  private readonly abortGraceMs: number;
  private readonly handler: JobHandler;

  private readonly counters = { claimed: 0, succeeded: 0, failed: 0, abandoned: 0 };
  private readonly running = new Set<JobRun>();
  private readonly stopController = new AbortController();
  /** Poked when a slot frees up or stop() is called: the claim loop looks again at once. */
  private readonly wakeup = new Wakeup();
  private started = false;
  private aborting = false;
  private loop: Promise<void> | null = null;
  private startPromise: Promise<void> | null = null;

  constructor(opts: WorkerOptions) {
    super();
    if (typeof opts.handler !== 'function') throw new TypeError('Worker: `handler` must be a function');
    const ttl = opts.leaseTtlSecs ?? 30;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 86_400) throw new RangeError(`Worker: leaseTtlSecs must be an integer 1..86400, got ${ttl}`);
    const hb = opts.heartbeatSecs ?? ttl / 3;
    if (!(hb > 0 && hb < ttl)) throw new RangeError(`Worker: heartbeatSecs must be above 0 and below leaseTtlSecs (${ttl}), got ${hb}`);
    const positive = (name: string, v: number) => {
      if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`Worker: ${name} must be a positive number, got ${v}`);
      return v;
    };
    const concurrency = opts.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`Worker: concurrency must be a positive integer, got ${concurrency}`);
    this.leaseTtlSecs = ttl;
    this.heartbeatMs = hb * 1000;
    this.pollMs = positive('pollSecs', opts.pollSecs ?? 2) * 1000;
    const longPoll = opts.longPollSecs ?? 20;
    if (!(Number.isFinite(longPoll) && longPoll >= 0 && longPoll <= 60)) throw new RangeError(`Worker: longPollSecs must be 0..60, got ${longPoll}`);
    this.longPollSecs = longPoll;
    this.cancelPollMs = positive('cancelPollSecs', opts.cancelPollSecs ?? 2) * 1000;
    this.maxBackoffMs = positive('maxBackoffSecs', opts.maxBackoffSecs ?? 15) * 1000;
    this.logFlushMs = Math.max(0, opts.logFlushMs ?? 250);
    this.logDrainMs = Math.max(0, opts.logDrainSecs ?? 10) * 1000;
    this.abortGraceMs = Math.max(0, opts.abortGraceMs ?? 10_000);
    this.concurrency = concurrency;
    this.client =
      opts.client ??
      new WorkflowClient({
        baseUrl: opts.serverUrl ?? 'http://localhost:3000',
        // A request must not outlive the lease it is trying to keep.
        timeoutMs: Math.min(30_000, Math.max(1_000, (ttl * 1000) / 2)),
      });
    this.workerId = opts.workerId ?? defaultWorkerId();
    this.labels = [...(opts.labels ?? [])];
    this.logger = (opts.logger ?? pino({ name: 'weft-worker', level: 'info' })).child({ worker_id: this.workerId });
    this.handler = opts.handler;
  }

  get stats(): WorkerStats {
    return { ...this.counters, running: this.running.size };
  }

  /** True after `stop()` was called. */
  get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /**
   * Registers (retrying while the server is unreachable or answers 5xx) and starts the claim loop.
   * Resolves once it runs; rejects when the server refuses the registration (4xx).
   */
  start(): Promise<void> {
    if (this.started) return this.startPromise!;
    this.started = true;
    this.startPromise = this.registerAndRun();
    return this.startPromise;
  }

  /** Emits an event; a listener that throws is logged and must not break the worker. */
  private notify<K extends keyof WorkerEvents>(event: K, ...args: WorkerEvents[K]): void {
    try {
      (this.emit as (event: K, ...args: WorkerEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.logger.error({ err, event }, `a '${event}' event listener threw; ignored`);
    }
  }

  private async registerAndRun(): Promise<void> {
    for (let failures = 0; !this.stopping; failures++) {
      try {
        await this.client.registerWorker(this.workerId, this.labels);
        break;
      } catch (err) {
        if (!isTransient(err)) throw err;
        const wait = backoffMs(failures, this.maxBackoffMs, 500);
        this.logger.warn({ err: describe(err), retry_in_ms: Math.round(wait) }, 'could not register with the server; retrying');
        await sleep(wait, this.stopController.signal);
      }
    }
    if (this.stopping) {
      this.loop = Promise.resolve();
      return;
    }
    this.notify('registered', { workerId: this.workerId, labels: this.labels });
    this.logger.debug({ labels: this.labels }, 'registered');
    this.loop = this.claimLoop().then(() => this.notify('stopped'));
  }

  /**
   * Stops claiming and resolves once every running job has finished and reported. With
   * `abort: true`, running jobs are aborted first (`ctx.signal`, reason `shutdown`) and told to the
   * server as retryable failures; the promise then resolves at the latest `abortGraceMs` later.
   * May be called again (e.g. with `abort: true` during a graceful drain).
   */
  async stop(opts: { abort?: boolean } = {}): Promise<void> {
    this.stopController.abort();
    this.wakeup.poke();
    if (opts.abort) {
      this.aborting = true;
      for (const run of this.running) run.abandon('shutdown', 'the worker is shutting down');
    }
    // A start() still registering notices the stop and settles without starting the loop.
    if (this.startPromise) await this.startPromise.catch(() => undefined);
    const idle = this.loop ?? Promise.resolve();
    if (!opts.abort) return idle;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (this.running.size > 0) this.logger.warn({ jobs: this.running.size }, 'running jobs did not settle within the abort grace; giving up on them');
        resolve();
      }, this.abortGraceMs);
    });
    await Promise.race([idle, grace]);
    clearTimeout(timer);
  }

  /**
   * One loop for all slots: it claims while a slot is free and the last claim found a job. An empty
   * claim has already waited on the server (a long poll) and the loop asks again at once; against a
   * server without long polls it waits `pollMs` (plus jitter, so that idle workers spread out). A freed
   * slot wakes it at once, since a finished job often unblocks others.
   */
  private async claimLoop(): Promise<void> {
    const jobs = new Set<Promise<void>>();
    let failures = 0;
    while (!this.stopping) {
      if (this.running.size >= this.concurrency) {
        await this.wakeup.wait();
        continue;
      }
      let claim: ClaimResult | null;
      const sentAt = now();
      const waitSecs = this.longPollSecs;
      try {
        // stop() aborts a waiting claim; the server hands back a lease granted in that instant.
        claim = await this.client.claim(this.workerId, this.labels, this.leaseTtlSecs, { waitSecs, signal: this.stopController.signal });
        if (failures > 0) this.logger.info({ failed_attempts: failures }, 'server reachable again');
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        if (waitSecs > 0 && refusesLongPoll(err)) {
          this.longPollSecs = 0;
          this.logger.info({ poll_secs: this.pollMs / 1000 }, 'the server does not take long-poll claims; polling instead');
          continue;
        }
        const wait = backoffMs(failures++, this.maxBackoffMs, 500);
        this.notify('claim:error', { error: err, retryInMs: wait });
        this.logger.warn({ err: describe(err), retry_in_ms: Math.round(wait) }, 'claim failed; retrying');
        await sleep(wait, this.stopController.signal);
        continue;
      }
      if (!claim) {
        // A server that ignores wait_secs answers at once: fall back to polling rather than spin.
        const waited = now() - sentAt >= (waitSecs * 1000) / 2;
        if (waitSecs === 0 || !waited) await this.wakeup.wait(this.pollMs * (1 + 0.1 * Math.random()));
        continue;
      }
      // A job claimed while stopping is run all the same: its lease is ours (graceful drain).
      const job: Promise<void> = this.runJob(claim, sentAt).finally(() => {
        jobs.delete(job);
        this.wakeup.poke();
      });
      jobs.add(job);
    }
    while (jobs.size > 0) await Promise.all(jobs);
  }

  private async runJob(claim: ClaimResult, claimSentAt: number): Promise<void> {
    const run = new JobRun(this, claim, claimSentAt);
    const { job, lease } = run;
    this.running.add(run);
    this.counters.claimed++;
    run.log.info({ command: job.command.length > 200 ? `${job.command.slice(0, 200)}…` : job.command }, 'job started');
    this.notify('job:start', { job, lease });
    run.startLoops();
    try {
      // A stop({ abort: true }) that raced the claim reaches this job too: it never starts.
      if (this.aborting) run.abandon('shutdown', 'the worker is shutting down');
      run.outcome = await this.runHandler(run);
      if (run.abandoned) await this.afterAbort(run);
      else await this.report(run, run.outcome);
    } catch (err) {
      // Nothing above should throw; if it does, the lease runs out and the job is retried elsewhere.
      run.log.error({ err }, 'unexpected worker error while running a job');
    } finally {
      run.finish();
      this.running.delete(run);
    }
  }

  private async runHandler(run: JobRun): Promise<Outcome> {
    try {
      if (run.abandoned) throw run.controller.signal.reason;
      const returned = await this.handler(run.job, run.context());
      return { ok: true, outputs: { ...run.outputs, ...normalizeOutputs(returned) } };
    } catch (err) {
      return { ok: false, error: truncateError(errorText(err)), retryable: isRetryable(err) };
    }
  }

  /**
   * After an abort nothing is reported, except a shutdown's failure (so that the job is retried at
   * once rather than after its lease runs out). A cancelled or shut-down job's last log lines still go out.
   */
  private async afterAbort(run: JobRun): Promise<void> {
    const { reason, detail } = run.abandoned!;
    let note = 'nothing reported';
    if (reason !== 'lease_lost') {
      const left = await run.sender.flush(LAST_WORDS_MS);
      run.sender.close();
      if (left > 0) note += `; ${left} log chunk(s) not delivered`;
    }
    if (reason === 'shutdown') {
      const error = 'aborted: the worker was shut down';
      const d = await this.deliver(run, { ok: false, error, retryable: true }, () => run.gone, run.goneSignal, now() + this.abortGraceMs);
      note =
        d.kind === 'landed' || d.kind === 'settled'
          ? `failure reported (job ${d.status})`
          : `the failure report did not land: ${d.kind === 'refused' ? describe(d.err) : d.detail}`;
    }
    this.abandonedEvent(run, reason, detail, note);
  }

  private abandonedEvent(run: JobRun, reason: AbortReason, detail: string, note: string): void {
    this.counters.abandoned++;
    const durationMs = now() - run.startedAt;
    const what = reason === 'cancelled' ? 'job cancelled' : reason === 'shutdown' ? 'job aborted by shutdown' : 'job abandoned (lease lost)';
    run.log.warn({ reason, detail, duration_ms: Math.round(durationMs) }, `${what} after ${secs(durationMs)}; handler stopped; ${note}`);
    this.notify('job:abandoned', { job: run.job, lease: run.lease, reason, detail, durationMs });
  }

  /**
   * Sends the handler's logs (waiting at most logDrainMs for them), then complete/fail, retried with
   * capped backoff until it lands or the lease is gone.
   */
  private async report(run: JobRun, outcome: Outcome): Promise<void> {
    const left = await run.sender.flush(this.logDrainMs);
    if (left > 0 && !run.abandoned) {
      run.log.warn({ chunks: left }, `${left} log chunk(s) could not be delivered within ${secs(this.logDrainMs)}; reporting the result without them`);
    }
    run.sender.close();
    for (;;) {
      if (run.abandoned) return this.afterAbort(run);
      // Any abort (the lease lost included) aborts the handler's signal.
      const d = await this.deliver(run, outcome, () => run.gone ?? run.abandoned?.detail ?? null, run.controller.signal);
      if (d.kind === 'refused') {
        if (outcome.ok) {
          // The server will never take these outputs (too large, say): fail the job instead.
          run.log.error({ err: describe(d.err) }, 'the server refused the result; reporting a failure instead');
          outcome = { ok: false, error: truncateError(`the server refused the job's result: ${describe(d.err)}`), retryable: false };
          continue;
        }
        run.log.error({ err: describe(d.err) }, 'the server refused the failure report; giving up on it');
        return this.abandonedEvent(run, 'lease_lost', `failure report refused: ${describe(d.err)}`, 'the failure report was refused');
      }
      if (d.kind === 'lost' || d.kind === 'timeout') {
        if (run.abandoned) return this.afterAbort(run);
        return this.abandonedEvent(run, 'lease_lost', d.detail, 'the result was not reported');
      }
      const durationMs = now() - run.startedAt;
      const landed = d.kind === 'settled' ? ' (an earlier try had landed; its answer was lost)' : '';
      if (outcome.ok) {
        this.counters.succeeded++;
        run.log.info({ outputs: Object.keys(outcome.outputs), status: d.status }, `job succeeded after ${secs(durationMs)}; reported${landed}`);
        this.notify('job:done', { job: run.job, lease: run.lease, outputs: outcome.outputs, status: d.status, durationMs });
      } else {
        this.counters.failed++;
        run.log.info(
          { error: outcome.error.slice(0, 300), retryable: outcome.retryable, status: d.status },
          `job failed after ${secs(durationMs)}; reported${landed}`,
        );
        this.notify('job:failed', {
          job: run.job,
          lease: run.lease,
          error: outcome.error,
          retryable: outcome.retryable,
          status: d.status,
          durationMs,
        });
      }
      return;
    }
  }

  /**
   * One complete/fail report, retried on transient errors until it lands, `stopWhy()` says stop (checked
   * before each try; `interrupt` ends a wait between tries), or `deadline` passes.
   */
  private async deliver(
    run: JobRun,
    outcome: Outcome,
    stopWhy: () => string | null,
    interrupt: AbortSignal,
    deadline = Infinity,
  ): Promise<Delivery> {
    let transientSeen = false;
    for (let failures = 0; ; failures++) {
      const why = stopWhy();
      if (why !== null) return { kind: 'lost', detail: why };
      try {
        const res = outcome.ok
          ? await this.client.complete(run.lease.lease_id, outcome.outputs)
          : await this.client.fail(run.lease.lease_id, outcome.error, outcome.retryable);
        return { kind: 'landed', status: res.status };
      } catch (err) {
        if (isLeaseOver(err)) {
          // An earlier try reached the server but its answer did not reach us.
          if (transientSeen && err.error === landedReportCode(outcome.ok ? 'complete' : 'fail')) {
            return { kind: 'settled', status: outcome.ok ? 'success' : failedStatus(run.job, outcome.retryable) };
          }
          run.lost(err);
          return { kind: 'lost', detail: err.serverMessage };
        }
        if (!isTransient(err)) return { kind: 'refused', err };
        transientSeen = true;
        if (run.leaseExpired()) {
          const detail = `the result could not be reported before the lease expired (last error: ${describe(err)})`;
          run.loseLease(detail);
          return { kind: 'lost', detail };
        }
        const wait = backoffMs(failures, this.maxBackoffMs, 250);
        if (now() + wait > deadline) return { kind: 'timeout', detail: `still failing: ${describe(err)}` };
        run.log.warn({ err: describe(err), retry_in_ms: Math.round(wait) }, `could not report the ${outcome.ok ? 'result' : 'failure'}; retrying`);
        await sleep(wait, interrupt);
      }
    }
  }
}

/** The state a fail report leaves the job in (README "How a run works"), for when its answer was lost. */
function failedStatus(job: ClaimedJob, retryable: boolean): string {
  return retryable && job.attempt < job.retry_policy.max_retries ? 'queued' : 'failed';
}
