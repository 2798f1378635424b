/** The life of one claimed attempt: its handler's signal, its lease, its logs and its outputs. */
import type { Logger } from 'pino';
import type { WorkflowApiError } from '../client/client.js';
import type { LogStream, Outputs } from '../domain/model.js';
import type { ClaimResult, ClaimedJob, LeaseView } from '../protocol/wire.js';
import { sleep } from '../util/sleep.js';
import { describe, isLeaseOver, outcomeOf } from './answers.js';
import { keyed } from '../domain/keyed.js';
import path from 'node:path';
import { uploadFile, uploadStream } from './artifacts.js';
import { LogSender } from './log-sender.js';
import { maskForms, maskText } from '../domain/masking.js';
import { parseSetOutput, type Outcome } from './outcome.js';
import type { KeptLease, LogSenderRun, ReportedRun, RunSettings } from './seams.js';
import { backoffMs, now } from './timing.js';
import { JobAbortedError, type AbortReason, type JobContext } from './worker-api.js';

/**
 * What ends a finished job's waits and requests: one shared reason, since an abort without one builds
 * a DOMException, stack and all, at every job (docs/performance.md "Fifth round").
 */
const JOB_FINISHED = new Error('the job finished');

export class JobRun implements LogSenderRun, ReportedRun, KeptLease {
  readonly job: ClaimedJob;
  readonly lease: LeaseView;
  readonly log: Logger;
  readonly controller = new AbortController();
  readonly sender: LogSender;
  /** The job's secrets as the claim answer listed them (`mask`), in every form to hide (README "Secrets"). */
  readonly masks: readonly string[];
  /** Keyed by names the job prints (`::set-output __proto__=…` included): no prototype. */
  readonly outputs: Outputs = keyed();
  readonly startedAt = now();
  /** Local (monotonic) estimate of when the lease expires; never later than the server's. */
  private expiresAt: number;
  private expiryTimer: NodeJS.Timeout | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
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
  private ownLoops = false;

  constructor(
    /** What the attempt uses of its worker: settings and the per-lease server calls. */
    readonly worker: RunSettings,
    claim: ClaimResult,
    claimSentAt: number,
  ) {
    this.job = claim.job;
    this.lease = claim.lease;
    this.ttlMs = claim.lease.ttl_secs * 1000;
    // The lease began no earlier than the claim was sent, plus however long the server held a
    // long-poll claim before a job came (`waited_ms`, docs/api.md "POST /api/jobs/claim"): without
    // that, a claim that waited most of a short ttl would count its lease as already run out.
    this.expiresAt = claimSentAt + Math.max(0, claim.lease.waited_ms ?? 0) + this.ttlMs;
    this.log = worker.logger.child({
      workflow_id: claim.job.workflow_id,
      job_id: claim.job.job_id,
      run: claim.job.run_number,
      attempt: claim.job.attempt,
      lease_id: claim.lease.lease_id,
    });
    this.sender = new LogSender(this);
    this.masks = maskForms(claim.job.mask ?? []);
    // timeout_secs counts from the claim on the server; counting from when the claim was sent puts the
    // local deadline no later than the server's, so the job is stopped here, with its last log lines,
    // rather than found out by the reaper or the next heartbeat's 409.
    const limit = claim.job.timeout_secs;
    if (limit !== null && limit > 0) {
      this.timeoutTimer = setTimeout(
        () => this.abandon('timeout', `the job outlived its timeout_secs (${limit}s)`),
        Math.max(0, claimSentAt + limit * 1000 - now()),
      );
    }
  }

  get leaseExpiresAt(): number {
    return this.expiresAt;
  }

  leaseExpired(): boolean {
    return now() > this.expiresAt;
  }

  /** Aborts the handler (reason `cancelled` or `shutdown`; `lease_lost` goes through loseLease). */
  abandon(reason: AbortReason, detail: string): void {
    if (this.abandoned || this.gone) return;
    // A finished handler has nothing left to abort: its result is still worth reporting.
    if ((reason === 'shutdown' || reason === 'timeout') && this.outcome) return;
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

  /** A heartbeat sent at `sentAt` renewed the lease. */
  renewed(sentAt: number): void {
    if (!this.heartbeating) return;
    this.expiresAt = sentAt + this.ttlMs;
    this.armExpiry();
  }

  /**
   * `ownLoops`: this job heartbeats and polls its cancellation by itself, as against a server
   * without batches; otherwise the worker's lease keeper does both for all jobs at once.
   */
  startLoops(ownLoops: boolean): void {
    this.armExpiry();
    if (ownLoops) this.startOwnLoops(false);
  }

  /**
   * Starts the per-job heartbeat and cancellation poll. `beatNow`: the lease keeper gave this job up
   * at an unknown point of its heartbeat interval, so the first heartbeat cannot wait a whole one.
   */
  startOwnLoops(beatNow: boolean): void {
    if (this.ownLoops) return;
    this.ownLoops = true;
    void this.heartbeatLoop(beatNow);
    void this.cancelLoop();
  }

  /** Ends heartbeats, polls and the expiry timer. A request in flight is aborted; its answer is ignored. */
  finish(): void {
    clearTimeout(this.expiryTimer);
    clearTimeout(this.timeoutTimer);
    this.finished.abort(JOB_FINISHED);
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
  get heartbeating(): boolean {
    return !this.finished.signal.aborted && this.gone === null && (this.abandoned === null || this.abandoned.reason === 'shutdown');
  }

  private async heartbeatLoop(beatNow: boolean): Promise<void> {
    const every = this.worker.heartbeatMs;
    let failures = 0;
    let first = beatNow;
    while (this.heartbeating) {
      if (!first) await sleep(failures === 0 ? every : Math.min(every, backoffMs(failures - 1, every, 250)), this.finished.signal);
      first = false;
      if (!this.heartbeating) return;
      const sentAt = now();
      try {
        // An answer arriving after the lease ran out, or after the next heartbeat was due, is no use.
        const timeoutMs = Math.max(1, Math.min(every, this.expiresAt - sentAt));
        await this.worker.client.heartbeat(this.lease.lease_id, { timeoutMs, signal: this.finished.signal });
        if (!this.heartbeating) return;
        this.renewed(sentAt);
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
        if (await this.worker.client.isCancelled(this.job.workflow_id, this.job.job_id, { run: this.job.run_number, signal: this.finished.signal })) {
          this.abandon('cancelled', 'the job was cancelled');
          return;
        }
      } catch (err) {
        if (!over()) this.log.debug({ err: describe(err) }, 'cancellation check failed');
      }
    }
  }

  /** The handler's view of the attempt; `workDir`: its fresh directory (./artifacts.ts). */
  context(workDir: string): JobContext {
    const run = this;
    return {
      workDir,
      uploadArtifact(name: string, source: string | AsyncIterable<Uint8Array>) {
        const { client } = run.worker;
        const signal = run.controller.signal;
        return typeof source === 'string'
          ? uploadFile(client, run.lease.lease_id, name, path.resolve(workDir, source), signal)
          : uploadStream(client, run.lease.lease_id, name, source, workDir, signal);
      },
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
        // Hidden before it leaves: the server hides them too, but need not see them (README "Secrets").
        run.sender.push(maskText(data.endsWith('\n') ? data : `${data}\n`, run.masks), s);
      },
      setOutput(key: string, value: string) {
        run.outputs[String(key)] = String(value);
      },
    };
  }
}
