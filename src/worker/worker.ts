/**
 * The embeddable worker: registers, claims jobs, runs a handler per job and speaks the rest of the
 * worker protocol for it (SPEC.md 4.2, CONTRACT.md "Claiming, leases, retries" and "The standalone
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
import { WorkflowApiError, WorkflowClient } from '../client/client.js';
import type { ClaimResult, ClaimedJob, IncomingLogChunk, LeaseView } from '../engine/engine.js';
import type { LogStream, Outputs, UpstreamOutputs } from '../domain/types.js';
import { sleep } from '../util/sleep.js';

/** SPEC.md 4.2 rule 7: error text sent by workers is truncated to this many characters. */
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
   * Ships `text` as one log chunk (a trailing newline is added when missing) on `stream` (default
   * stdout). Chunks go out in call order, batched, at most ~250 ms late, numbered from 0 per attempt.
   * A stdout line `::set-output key=value` also sets an output.
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
  /** Default `${hostname}-${6 hex}`. */
  workerId?: string;
  labels?: string[];
  /** Integer 1..86400; default 30. */
  leaseTtlSecs?: number;
  /** Must be shorter than the lease; default leaseTtlSecs / 3. */
  heartbeatSecs?: number;
  /** Wait after a claim found nothing; default 2. */
  pollSecs?: number;
  /** Jobs run at once; default 1. */
  concurrency?: number;
  /** How often a running job's cancelled flag is checked; default 2. */
  cancelPollSecs?: number;
  /** Upper bound of the backoff between retries of a failing server call; default 15. */
  maxBackoffSecs?: number;
  /** How late a log chunk may be shipped; default 250 ms. */
  logFlushMs?: number;
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
  /** Every claim loop has ended after `stop()`. */
  stopped: [];
}

export interface WorkerStats {
  claimed: number;
  succeeded: number;
  failed: number;
  abandoned: number;
  running: number;
}

const MAX_CHUNK_CHARS = 32 * 1024;
const MAX_BATCH_CHUNKS = 1000;
const MAX_BATCH_CHARS = 128 * 1024;
const MAX_BUFFERED_LOG_CHARS = 8 * 1024 * 1024;

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

/** Network failures, timeouts, 5xx, 408 and 429 are worth retrying; other answers are not. */
export function isTransient(err: unknown): boolean {
  if (err instanceof WorkflowApiError) return err.status >= 500 || err.status === 408 || err.status === 429;
  return true;
}

function is409(err: unknown): err is WorkflowApiError {
  return err instanceof WorkflowApiError && err.status === 409;
}

function describe(err: unknown): string {
  if (err instanceof WorkflowApiError) return `${err.status} ${err.error}: ${err.serverMessage}`;
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


/** Capped exponential backoff with ±20 % jitter; `n` counts failures from 0. */
function backoffMs(n: number, capMs: number, baseMs = 250): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(n, 30));
  return Math.min(capMs, raw * (0.8 + Math.random() * 0.4));
}

// ------------------------------------------------------------------------------------------ one job

/** Batches a job attempt's chunks and pushes them in order, one request at a time. */
class LogShipper {
  private sequence = 0;
  private pending: IncomingLogChunk[] = [];
  private pendingChars = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<'ok' | 'retry' | 'gone'> | null = null;
  private failures = 0;
  private closed = false;

  constructor(private readonly run: JobRun) {}

  push(data: string, stream: LogStream): void {
    if (this.closed) return;
    if (this.pendingChars > MAX_BUFFERED_LOG_CHARS) {
      this.dropped++;
      return;
    }
    if (this.dropped > 0) {
      const n = this.dropped;
      this.dropped = 0;
      this.add(`[weft worker: ${n} log chunk(s) dropped while the server was not taking them]\n`, 'stderr');
    }
    for (let i = 0; i < data.length || i === 0; i += MAX_CHUNK_CHARS) this.add(data.slice(i, i + MAX_CHUNK_CHARS), stream);
    this.schedule(this.run.worker.logFlushMs);
  }

  private add(data: string, stream: LogStream): void {
    this.pending.push({ sequence: this.sequence++, data, stream, timestamp_ms: Date.now() });
    this.pendingChars += data.length;
  }

  get size(): number {
    return this.pending.length;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.closed || this.pending.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sendOne().then((r) => {
        if (r === 'ok') this.schedule(0);
        else if (r === 'retry') this.schedule(backoffMs(this.failures - 1, this.run.worker.maxBackoffMs, 500));
      });
    }, delayMs);
  }

  /** Sends the oldest batch. Only one request is in flight at a time, so chunks arrive in order. */
  private async sendOne(): Promise<'ok' | 'retry' | 'gone'> {
    while (this.sending) await this.sending;
    if (this.closed) return 'gone';
    if (this.pending.length === 0) return 'ok';
    let n = 0;
    let chars = 0;
    while (n < this.pending.length && n < MAX_BATCH_CHUNKS && (n === 0 || chars + this.pending[n]!.data.length <= MAX_BATCH_CHARS)) {
      chars += this.pending[n]!.data.length;
      n++;
    }
    const batch = this.pending.slice(0, n);
    const p = (async (): Promise<'ok' | 'retry' | 'gone'> => {
      try {
        await this.run.worker.client.pushLogs(this.run.lease.lease_id, batch);
        this.failures = 0;
        this.consume(n, chars);
        return 'ok';
      } catch (err) {
        if (is409(err)) {
          this.run.lost(err);
          return 'gone';
        }
        if (isTransient(err)) {
          this.failures++;
          this.run.log.warn({ err: describe(err), chunks: n }, 'log push failed; will retry');
          return 'retry';
        }
        // The server refused these chunks for good (400, 413): retrying cannot help.
        this.run.log.error({ err: describe(err), chunks: n }, 'log chunks rejected by the server; dropping them');
        this.consume(n, chars);
        return 'ok';
      }
    })();
    this.sending = p;
    try {
      return await p;
    } finally {
      this.sending = null;
    }
  }

  private consume(n: number, chars: number): void {
    this.pending.splice(0, n);
    this.pendingChars -= chars;
  }

  /** Sends everything buffered; retries until it is out or the lease is gone. True when all went out. */
  async drain(): Promise<boolean> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    for (;;) {
      if (this.closed) return false;
      if (this.pending.length === 0 && !this.sending) return true;
      const r = await this.sendOne();
      if (r === 'gone') return false;
      if (r === 'retry') {
        if (this.run.leaseExpired()) return false;
        await sleep(backoffMs(this.failures - 1, this.run.worker.maxBackoffMs, 500));
      }
    }
  }

  /** One best-effort push of what is buffered (a cancelled job's last words), then closes. */
  async lastWords(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.closed || this.pending.length === 0) return this.close();
    await this.sendOne().catch(() => undefined);
    this.close();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
    this.pendingChars = 0;
  }
}

/** The life of one claimed attempt. */
class JobRun {
  readonly job: ClaimedJob;
  readonly lease: LeaseView;
  readonly log: Logger;
  readonly controller = new AbortController();
  readonly shipper: LogShipper;
  readonly outputs: Outputs = {};
  readonly startedAt = now();
  /** Local (monotonic) estimate of when the lease expires; never later than the server's. */
  private expiresAt: number;
  private readonly ttlMs: number;
  abandoned: { reason: AbortReason; detail: string } | null = null;
  /** `reporting` once the handler has settled. */
  phase: 'running' | 'reporting' = 'running';
  /** Set once the result has been reported (or given up): heartbeats and polls stop. */
  private finished = new AbortController();

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
    this.shipper = new LogShipper(this);
  }

  leaseExpired(): boolean {
    return now() > this.expiresAt;
  }

  /** Aborts the handler and stops all reporting for this lease. */
  abandon(reason: AbortReason, detail: string): void {
    if (this.abandoned) return;
    // A finished handler has nothing left to abort: its result is still worth reporting.
    if (reason === 'shutdown' && this.phase === 'reporting') return;
    this.abandoned = { reason, detail };
    this.log.warn({ reason, detail }, 'job aborted');
    if (reason === 'lease_lost') this.shipper.close();
    this.controller.abort(new JobAbortedError(reason, detail));
  }

  /** A 409 from the server: the lease is gone (expired, settled, or its job cancelled). */
  lost(err: WorkflowApiError): void {
    this.abandon(err.error === 'job_cancelled' ? 'cancelled' : 'lease_lost', err.serverMessage);
  }

  startLoops(): void {
    void this.heartbeatLoop();
    void this.cancelLoop();
  }

  /** Ends heartbeats and polls. A request still in flight is not waited for; its answer is ignored. */
  stopLoops(): void {
    this.finished.abort();
  }

  private get over(): boolean {
    return this.finished.signal.aborted || this.abandoned !== null;
  }

  private async heartbeatLoop(): Promise<void> {
    const every = this.worker.heartbeatMs;
    let failures = 0;
    while (!this.over) {
      await sleep(failures === 0 ? every : Math.min(every, backoffMs(failures - 1, every, 250)), this.finished.signal);
      if (this.over) return;
      const sentAt = now();
      try {
        await this.worker.client.heartbeat(this.lease.lease_id);
        this.expiresAt = sentAt + this.ttlMs;
        failures = 0;
      } catch (err) {
        if (this.over) return;
        if (is409(err)) return this.lost(err);
        failures++;
        if (this.leaseExpired()) {
          return this.abandon('lease_lost', `no heartbeat got through before the lease expired (last error: ${describe(err)})`);
        }
        this.log.warn({ err: describe(err) }, 'heartbeat failed; will retry');
      }
    }
  }

  private async cancelLoop(): Promise<void> {
    const every = this.worker.cancelPollMs;
    while (!this.over) {
      await sleep(every, this.finished.signal);
      if (this.over) return;
      try {
        if (await this.worker.client.isCancelled(this.job.workflow_id, this.job.job_id)) {
          if (!this.over) this.abandon('cancelled', 'the job was cancelled');
          return;
        }
      } catch (err) {
        this.log.debug({ err: describe(err) }, 'cancellation check failed');
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
        run.shipper.push(data.endsWith('\n') ? data : `${data}\n`, s);
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
  /** @internal */ readonly cancelPollMs: number;
  /** @internal */ readonly maxBackoffMs: number;
  /** @internal */ readonly logFlushMs: number;
  private readonly abortGraceMs: number;
  private readonly handler: JobHandler;

  private readonly counters = { claimed: 0, succeeded: 0, failed: 0, abandoned: 0 };
  private readonly running = new Set<JobRun>();
  private readonly stopController = new AbortController();
  private started = false;
  private aborting = false;
  private loops: Promise<void> | null = null;
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
    this.cancelPollMs = positive('cancelPollSecs', opts.cancelPollSecs ?? 2) * 1000;
    this.maxBackoffMs = positive('maxBackoffSecs', opts.maxBackoffSecs ?? 15) * 1000;
    this.logFlushMs = Math.max(0, opts.logFlushMs ?? 250);
    this.abortGraceMs = Math.max(0, opts.abortGraceMs ?? 10_000);
    this.concurrency = concurrency;
    this.client =
      opts.client ??
      new WorkflowClient({
        baseUrl: opts.serverUrl ?? 'http://localhost:3000',
        // A request must not outlive the lease it is trying to keep.
        timeoutMs: Math.min(30_000, Math.max(1_000, (ttl * 1000) / 2)),
      });
    this.workerId = opts.workerId ?? `${os.hostname()}-${randomBytes(3).toString('hex')}`;
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
   * Registers (retrying while the server is unreachable or answers 5xx) and starts `concurrency` claim
   * loops. Resolves once the loops run; rejects when the server refuses the registration (4xx).
   */
  start(): Promise<void> {
    if (this.started) return this.startPromise!;
    this.started = true;
    this.startPromise = this.registerAndRun();
    return this.startPromise;
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
      this.loops = Promise.resolve();
      return;
    }
    this.emit('registered', { workerId: this.workerId, labels: this.labels });
    this.logger.debug({ labels: this.labels }, 'registered');
    const loops: Promise<void>[] = [];
    for (let i = 0; i < this.concurrency; i++) loops.push(this.claimLoop(i));
    this.loops = Promise.all(loops).then(() => {
      this.emit('stopped');
    });
  }

  /**
   * Stops claiming and resolves once every running job has finished and reported. With
   * `abort: true`, running jobs are aborted first (`ctx.signal`, reason `shutdown`) and told to the
   * server as retryable failures; the promise then resolves at the latest `abortGraceMs` later.
   * May be called again (e.g. with `abort: true` during a graceful drain).
   */
  async stop(opts: { abort?: boolean } = {}): Promise<void> {
    this.stopController.abort();
    if (opts.abort) {
      this.aborting = true;
      for (const run of this.running) run.abandon('shutdown', 'the worker is shutting down');
    }
    // A start() still registering notices the stop and settles without starting loops.
    if (this.startPromise) await this.startPromise.catch(() => undefined);
    const idle = this.loops ?? Promise.resolve();
    if (!opts.abort) return idle;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (this.running.size > 0) this.logger.warn({ jobs: this.running.size }, 'handlers ignored their abort signal; giving up on them');
        resolve();
      }, this.abortGraceMs);
    });
    await Promise.race([idle, grace]);
    clearTimeout(timer);
  }

  private async claimLoop(slot: number): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let claim: ClaimResult | null;
      const sentAt = now();
      try {
        claim = await this.client.claim(this.workerId, this.labels, this.leaseTtlSecs);
        if (failures > 0) this.logger.info({ slot }, 'server reachable again');
        failures = 0;
      } catch (err) {
        const wait = backoffMs(failures++, this.maxBackoffMs, 500);
        this.emit('claim:error', { error: err, retryInMs: wait });
        this.logger.warn({ slot, err: describe(err), retry_in_ms: Math.round(wait) }, 'claim failed; retrying');
        await sleep(wait, this.stopController.signal);
        continue;
      }
      if (!claim) {
        await sleep(this.pollMs, this.stopController.signal);
        continue;
      }
      // A job claimed while stopping is run all the same: its lease is ours (graceful drain).
      await this.runJob(claim, sentAt);
    }
  }

  private async runJob(claim: ClaimResult, claimSentAt: number): Promise<void> {
    const run = new JobRun(this, claim, claimSentAt);
    const { job, lease } = run;
    this.running.add(run);
    this.counters.claimed++;
    run.log.info({ command: job.command.length > 200 ? `${job.command.slice(0, 200)}…` : job.command }, 'job started');
    this.emit('job:start', { job, lease });
    run.startLoops();
    try {
      let outcome: { ok: true; outputs: Outputs } | { ok: false; error: string; retryable: boolean };
      // A stop({ abort: true }) that raced the claim reaches this job too: it never starts.
      if (this.aborting) run.abandon('shutdown', 'the worker is shutting down');
      try {
        if (run.abandoned) throw run.controller.signal.reason;
        const returned = await this.handler(job, run.context());
        outcome = { ok: true, outputs: { ...run.outputs, ...normalizeOutputs(returned) } };
      } catch (err) {
        outcome = { ok: false, error: truncateError(errorText(err)), retryable: isRetryable(err) };
      }
      run.phase = 'reporting';
      if (run.abandoned) await this.afterAbort(run);
      else await this.report(run, outcome);
    } catch (err) {
      // Nothing above should throw; if it does, the lease runs out and the job is retried elsewhere.
      run.log.error({ err }, 'unexpected worker error while running a job');
    } finally {
      run.stopLoops();
      run.shipper.close();
      this.running.delete(run);
    }
  }

  /** After an abort nothing is reported, except a cancelled job's last log lines and a shutdown's failure. */
  private async afterAbort(run: JobRun): Promise<void> {
    const { reason, detail } = run.abandoned!;
    if (reason === 'cancelled') await run.shipper.lastWords();
    if (reason === 'shutdown') {
      // Best effort, once: the job is retried at once instead of after its lease runs out.
      await run.shipper.lastWords();
      await this.client.fail(run.lease.lease_id, 'aborted: the worker was shut down', true).catch(() => undefined);
    }
    this.abandonedEvent(run, reason, detail);
  }

  private abandonedEvent(run: JobRun, reason: AbortReason, detail: string): void {
    this.counters.abandoned++;
    this.emit('job:abandoned', { job: run.job, lease: run.lease, reason, detail, durationMs: now() - run.startedAt });
  }

  /** Flushes logs, then complete/fail, retried with capped backoff until it lands or the lease is gone. */
  private async report(
    run: JobRun,
    outcome: { ok: true; outputs: Outputs } | { ok: false; error: string; retryable: boolean },
  ): Promise<void> {
    await run.shipper.drain();
    for (let failures = 0; ; failures++) {
      if (run.abandoned) return this.abandonedEvent(run, run.abandoned.reason, run.abandoned.detail);
      try {
        if (outcome.ok) {
          const res = await this.client.complete(run.lease.lease_id, outcome.outputs);
          this.counters.succeeded++;
          run.log.info({ outputs: Object.keys(outcome.outputs), status: res.status }, 'job succeeded');
          this.emit('job:done', {
            job: run.job,
            lease: run.lease,
            outputs: outcome.outputs,
            status: res.status,
            durationMs: now() - run.startedAt,
          });
        } else {
          const res = await this.client.fail(run.lease.lease_id, outcome.error, outcome.retryable);
          this.counters.failed++;
          run.log.info({ error: outcome.error.slice(0, 300), retryable: outcome.retryable, status: res.status }, 'job failed');
          this.emit('job:failed', {
            job: run.job,
            lease: run.lease,
            error: outcome.error,
            retryable: outcome.retryable,
            status: res.status,
            durationMs: now() - run.startedAt,
          });
        }
        return;
      } catch (err) {
        if (is409(err)) {
          run.lost(err);
          continue;
        }
        if (!isTransient(err)) {
          if (outcome.ok) {
            // The server will never take these outputs (too large, say): fail the job instead.
            run.log.error({ err: describe(err) }, 'the server refused the result; reporting a failure instead');
            outcome = { ok: false, error: truncateError(`the server refused the job's result: ${describe(err)}`), retryable: false };
            continue;
          }
          run.log.error({ err: describe(err) }, 'the server refused the failure report; giving up on it');
          return this.abandonedEvent(run, 'lease_lost', `failure report refused: ${describe(err)}`);
        }
        if (run.leaseExpired()) {
          run.abandon('lease_lost', `the result could not be reported before the lease expired (last error: ${describe(err)})`);
          continue;
        }
        const wait = backoffMs(failures, this.maxBackoffMs, 250);
        run.log.warn({ err: describe(err), retry_in_ms: Math.round(wait) }, 'could not report the result; retrying');
        await sleep(wait);
      }
    }
  }
}
