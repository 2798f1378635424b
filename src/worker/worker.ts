/**
 * The embeddable worker: registers, claims jobs, runs a handler per job and speaks the rest of the
 * worker protocol for it (docs/api.md "Worker protocol", README "How a run works" and "The
 * worker"): lease renewal, batched log chunks, cancellation, and a result report that is retried
 * until it lands or the lease is known to be gone.
 *
 * With more than one slot it uses the batch endpoints (docs/api.md "Batches"): one claim for all free
 * slots, one lease renewal for all running jobs (./lease-keeper.ts), reports gathered into one
 * request that also claims the next jobs (./report-batcher.ts). A server without them answers 404,
 * and the worker then keeps to the one-job calls for good.
 *
 * Its parts get what they use of it through the narrow views of ./seams.ts (docs/architecture.md
 * "The worker"), built here from its settings and private methods; none of them imports this file.
 *
 * `weft worker` is this class with the shell handler of ./shell.ts.
 */
import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { WorkflowClient } from '../client/client.js';
import type { BatchClaimRequest, ClaimResult } from '../protocol/wire.js';
import { sleep } from '../util/sleep.js';
import { describe, isTransient, refusesLongPoll } from './answers.js';
import { lacksBatches, MAX_BATCH } from './batching.js';
import { deliverOne } from './deliver.js';
import { afterAbort, report, type Settlement } from './job-result.js';
import { defaultWorkRoot } from './artifacts.js';
import { runAttempt } from './attempt.js';
import { JobRun } from './job-run.js';
import { LeaseKeeper } from './lease-keeper.js';
import { checkOptions } from './options.js';
import type { Outcome } from './outcome.js';
import { ReportBatcher } from './report-batcher.js';
import type { ClaimAlong, Deliver, ReportChannel, RunSettings, Settling } from './seams.js';
import { backoffMs, now, Wakeup } from './timing.js';
import { prepareHandler, type JobHandler, type WorkerEvents, type WorkerOptions, type WorkerStats } from './worker-api.js';
import { defaultWorkerId } from './worker-id.js';

/** How long a claim in flight at stop() may still bring its answer (see claimController). */
const CLAIM_ANSWER_GRACE_MS = 250;

/** Pulls jobs from a weft server and runs `handler` for each. See {@link WorkerOptions}. */
export class Worker extends EventEmitter<WorkerEvents> {
  readonly client: WorkflowClient;
  readonly workerId: string;
  readonly labels: string[];
  readonly leaseTtlSecs: number;
  readonly concurrency: number;
  readonly logger: Logger;
  private readonly pollMs: number;
  /** 0 once the server turned long polls down (it predates them). */
  private longPollSecs: number;
  private readonly maxBackoffMs: number;
  private readonly abortGraceMs: number;
  private readonly handler: JobHandler;
  /** WORK_DIR: each attempt's fresh directory is made under it. */
  private readonly workRoot: string;
  private readonly workDirOwner: { uid: number; gid: number } | undefined;
  /** What each job attempt uses of the worker. */
  private readonly runSettings: RunSettings;
  /** What a finished job's report uses of the worker. */
  private readonly settling: Settling;

  private readonly counters = { claimed: 0, succeeded: 0, failed: 0, abandoned: 0 };
  private readonly running = new Set<JobRun>();
  private readonly jobs = new Set<Promise<void>>();
  /** Slots that claims in flight may fill: counted as taken, so that two claims never overfill. */
  private reserved = 0;
  /** False with one slot (nothing to batch), and for good once the server turned batches down. */
  private useBatches: boolean;
  private readonly keeper: LeaseKeeper<JobRun>;
  private readonly reporter: ReportBatcher;
  private readonly stopController = new AbortController();
  /**
   * Ends a claim in flight, a moment after stop(): an answer the server has already sent (its job is
   * leased to us) still arrives and is run; a long poll still waiting is cut, and the server hands
   * back whatever it grants after that (docs/api.md "POST /api/jobs/claim").
   */
  private readonly claimController = new AbortController();
  /** Poked when a slot frees up or stop() is called: the claim loop looks again at once. */
  private readonly wakeup = new Wakeup();
  private started = false;
  private aborting = false;
  private loop: Promise<void> | null = null;
  private startPromise: Promise<void> | null = null;

  constructor(opts: WorkerOptions) {
    super();
    const o = checkOptions(opts);
    this.leaseTtlSecs = o.leaseTtlSecs;
    this.pollMs = o.pollMs;
    this.longPollSecs = o.longPollSecs;
    this.maxBackoffMs = o.maxBackoffMs;
    this.abortGraceMs = o.abortGraceMs;
    this.concurrency = o.concurrency;
    this.useBatches = o.concurrency > 1;
    this.client =
      opts.client ??
      new WorkflowClient({
        baseUrl: opts.serverUrl ?? 'http://localhost:3000',
        token: opts.token,
        // A request must not outlive the lease it is trying to keep.
        timeoutMs: Math.min(30_000, Math.max(1_000, (o.leaseTtlSecs * 1000) / 2)),
      });
    this.workerId = opts.workerId ?? defaultWorkerId();
    this.labels = [...(opts.labels ?? [])];
    this.logger = (opts.logger ?? pino({ name: 'weft-worker', level: 'info' })).child({ worker_id: this.workerId });
    this.handler = opts.handler;
    this.workRoot = opts.workDir ?? defaultWorkRoot();
    this.workDirOwner = opts.workDirOwner;
    const { client, workerId, logger, maxBackoffMs } = this;
    const { heartbeatMs, cancelPollMs } = o;
    this.runSettings = { client, workerId, logger, heartbeatMs, cancelPollMs, logFlushMs: o.logFlushMs, maxBackoffMs };
    // A report goes through report-batch while batching, else (and for good once the server turned
    // batches down) through the one-job endpoint.
    const channel: ReportChannel = { client, maxBackoffMs };
    const deliver: Deliver = (run, outcome, stopWhy, interrupt, deadline = Infinity) =>
      this.useBatches
        ? this.reporter.submit(run, outcome, stopWhy, interrupt, deadline)
        : deliverOne(channel, run, outcome, stopWhy, interrupt, deadline);
    this.settling = { deliver, logDrainMs: o.logDrainMs, abortGraceMs: o.abortGraceMs };
    const noBatches = (err: unknown) => this.dropBatches(err);
    this.keeper = new LeaseKeeper({ client, logger, heartbeatMs, everyMs: Math.min(heartbeatMs, cancelPollMs), noBatches });
    this.reporter = new ReportBatcher({
      client,
      logger,
      maxBackoffMs,
      batching: () => this.useBatches,
      claimAlong: (reporting) => this.claimAlong(reporting),
      claimed: (claims, sentAt) => this.startClaims(claims, sentAt),
      noBatches,
    });
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
    prepareHandler(this.handler);
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
    // Aborting: no job is wanted any more, not even one already on its way (the server takes it back).
    if (opts.abort) this.claimController.abort();
    else setTimeout(() => this.claimController.abort(), CLAIM_ANSWER_GRACE_MS).unref();
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

  // ------------------------------------------------------------------------------ batch bookkeeping

  /** The server has no batch endpoints: every part of the worker uses the one-job calls from now on. */
  private dropBatches(err: unknown): void {
    if (!this.useBatches) return;
    this.useBatches = false;
    this.logger.info({ err: describe(err) }, 'the server has no batch endpoints; using the one-job calls');
    for (const run of this.keeper.handOver()) run.startOwnLoops(true);
    this.reporter.fallBack();
    this.wakeup.poke();
  }

  /** A claim request for `max` jobs (at most {@link MAX_BATCH}); `waitSecs` > 0 makes it a long poll. */
  private claimRequest(max: number, waitSecs: number): BatchClaimRequest {
    const req: BatchClaimRequest = { worker_id: this.workerId, labels: this.labels, lease_ttl_secs: this.leaseTtlSecs, max_jobs: max };
    if (waitSecs > 0) req.wait_secs = waitSecs;
    return req;
  }

  /**
   * The claim a report of `reporting` finished jobs may send along (null: none), for the slots those
   * jobs free and those already free; they count as taken until it is released.
   */
  private claimAlong(reporting: number): ClaimAlong | null {
    if (!this.useBatches || this.stopping || this.aborting) return null;
    const free = Math.min(MAX_BATCH, this.concurrency - (this.running.size - reporting) - this.reserved);
    if (free <= 0) return null;
    this.reserved += free;
    let released = false;
    return {
      request: this.claimRequest(free, 0),
      release: () => {
        if (released) return;
        released = true;
        this.reserved -= free;
        this.wakeup.poke();
      },
    };
  }

  /** Runs jobs claimed by a request sent at `sentAt`. */
  private startClaims(claims: readonly ClaimResult[], sentAt: number): void {
    for (const claim of claims) {
      const job: Promise<void> = this.runJob(claim, sentAt).finally(() => {
        this.jobs.delete(job);
        this.wakeup.poke();
      });
      this.jobs.add(job);
    }
  }

  // ------------------------------------------------------------------------------------- claiming

  /**
   * One loop for all slots: it claims while a slot is free and the last claim found a job. An empty
   * claim has already waited on the server (a long poll) and the loop asks again at once; against a
   * server without long polls it waits `pollMs` (plus jitter, so that idle workers spread out). A freed
   * slot wakes it at once, since a finished job often unblocks others.
   */
  private async claimLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = Math.min(MAX_BATCH, this.concurrency - this.running.size - this.reserved);
      if (free <= 0) {
        await this.wakeup.wait();
        continue;
      }
      let claims: ClaimResult[];
      const sentAt = now();
      const waitSecs = this.longPollSecs;
      const batched = this.useBatches;
      try {
        const signal = this.claimController.signal;
        if (batched) {
          this.reserved += free;
          try {
            const res = await this.client.claimBatch(this.claimRequest(free, waitSecs), { signal });
            claims = Array.isArray(res?.claims) ? res.claims : [];
          } finally {
            this.reserved -= free;
          }
        } else {
          const claim = await this.client.claim(this.workerId, this.labels, this.leaseTtlSecs, { waitSecs, signal });
          claims = claim ? [claim] : [];
        }
        if (failures > 0) this.logger.info({ failed_attempts: failures }, 'server reachable again');
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        if (batched && lacksBatches(err)) {
          this.dropBatches(err);
          continue;
        }
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
      if (claims.length === 0) {
        // A server that ignores wait_secs answers at once: fall back to polling rather than spin.
        const waited = now() - sentAt >= (waitSecs * 1000) / 2;
        if (waitSecs === 0 || !waited) await this.wakeup.wait(this.pollMs * (1 + 0.1 * Math.random()));
        continue;
      }
      // A job claimed while stopping is run all the same: its lease is ours (graceful drain).
      this.startClaims(claims, sentAt);
    }
    // Reports still in flight may bring jobs of their own.
    while (this.jobs.size > 0) await Promise.all(this.jobs);
  }

  // ----------------------------------------------------------------------------------- one job

  private async runJob(claim: ClaimResult, claimSentAt: number): Promise<void> {
    const run = new JobRun(this.runSettings, claim, claimSentAt);
    const { job, lease } = run;
    this.running.add(run);
    this.counters.claimed++;
    run.log.info({ command: job.command.length > 200 ? `${job.command.slice(0, 200)}…` : job.command }, 'job started');
    this.notify('job:start', { job, lease });
    run.startLoops(!this.useBatches);
    if (this.useBatches) this.keeper.add(run);
    try {
      // A stop({ abort: true }) that raced the claim reaches this job too: it never starts.
      if (this.aborting) run.abandon('shutdown', 'the worker is shutting down');
      run.outcome = await this.runHandler(run);
      this.settled(run, run.abandoned ? await afterAbort(this.settling, run) : await report(this.settling, run, run.outcome));
    } catch (err) {
      // Nothing above should throw; if it does, the lease runs out and the job is retried elsewhere.
      run.log.error({ err }, 'unexpected worker error while running a job');
    } finally {
      run.finish();
      this.keeper.delete(run);
      this.running.delete(run);
    }
  }

  private runHandler(run: JobRun): Promise<Outcome> {
    return runAttempt(run, { client: this.client, workRoot: this.workRoot, owner: this.workDirOwner }, this.handler);
  }

  /** Counts how a job ended and tells the listeners. */
  private settled(run: JobRun, s: Settlement): void {
    const { job, lease } = run;
    switch (s.kind) {
      case 'done':
        this.counters.succeeded++;
        this.notify('job:done', { job, lease, outputs: s.outputs, status: s.status, durationMs: s.durationMs });
        return;
      case 'failed':
        this.counters.failed++;
        this.notify('job:failed', { job, lease, error: s.error, retryable: s.retryable, status: s.status, durationMs: s.durationMs });
        return;
      case 'abandoned':
        this.counters.abandoned++;
        this.notify('job:abandoned', { job, lease, reason: s.reason, detail: s.detail, durationMs: s.durationMs });
        return;
    }
  }
}
