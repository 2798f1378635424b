import type { Logger } from 'pino';
import type { JobChange, Store } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import type { BlobStore } from './blob-store.js';
import type { AttemptEvent } from './engine-options.js';
import type { OutageWarnings } from './outage.js';
import type { QueuedRuns } from './queued-runs.js';
import type { JobGroups } from './job-groups.js';
import type { RunEnds } from './run-ends.js';
import { fireDueSchedules, type SchedulePassOptions, type ScheduleTotals } from './schedules.js';
import {
  BATCHES_PER_PASS,
  pruneInBatches,
  pruneRequest,
  pruneWorkersInBatches,
  type PruneTotals,
  type RetentionPolicy,
} from './retention.js';

const REAP_BATCH = 500;

/** What the passes below need of the engine: its store, clock and log, and where changes are told. */
export interface HousekeepingContext {
  readonly store: Store;
  readonly now: () => number;
  readonly log: Logger;
  readonly outage: OutageWarnings;
  readonly blobs: BlobStore;
  readonly queued: QueuedRuns;
  readonly scheduleGraceMs: number;
  readonly workerRetainMs: number;
  /** Durable changes, told to listeners, waiting claims and other servers. */
  announce(changes: readonly JobChange[]): void;
  /** Arrivals in concurrency groups of jobs, which each pass settles whoever made them. */
  readonly jobGroups: JobGroups;
  /** The run-end outbox's consumers: the reaper's pass hands over what no look after a change did. */
  readonly runEnds: RunEnds;
  /** An attempt this process settled (the `attempt` event). */
  attemptEnded(event: AttemptEvent): void;
  /** A scheduled run started (its label sets are new to this server). */
  scheduledRunStarted: SchedulePassOptions['onStarted'];
  /** A scheduled run queued behind the workflow's active runs. */
  scheduledRunQueued: SchedulePassOptions['onQueued'];
}

/**
 * The reaper's passes (src/runtime/reaper.ts; README "Retention", docs/api.md "Schedules"): lost
 * leases and timed-out attempts, stranded runs, queued runs, schedules, retention, unseen workers and
 * unnamed artifact files. Each pass is safe to run from several processes at once (the store settles
 * each item under its own guard, once), and an outage ends a pass quietly: whatever it missed is still
 * there for the next one.
 */
export class Housekeeping {
  constructor(private readonly ctx: HousekeepingContext) {}

  /**
   * Re-queues (or fails, when the budget is spent) every job whose lease expired or whose attempt
   * outlived timeout_secs, fails every wait for approval past its timeout, settles runs a crash left running, and starts queued runs that now fit.
   */
  async reap(): Promise<{ expired: number; timedOut: number; approvalsTimedOut: number }> {
    const { store, log } = this.ctx;
    const now = this.ctx.now();
    const counts = { expired: 0, timedOut: 0, approvalsTimedOut: 0 };
    try {
      const expired = await store.expireLeases(now, REAP_BATCH);
      counts.expired = expired.ended.length;
      this.ctx.announce(expired.changes);
      expired.ended.forEach((job, i) => this.ctx.attemptEnded({ kind: 'expired', job, ran: expired.ran?.[i] ?? job }));
      const timedOut = await store.timeOutJobs(now, REAP_BATCH);
      counts.timedOut = timedOut.ended.length;
      this.ctx.announce(timedOut.changes);
      timedOut.ended.forEach((job, i) => this.ctx.attemptEnded({ kind: 'timed_out', job, ran: timedOut.ran?.[i] ?? job }));
      // Waits for approval past their timeout_secs fail, as a reject would (README "Approvals").
      const approvals = await store.timeOutApprovals(now, REAP_BATCH);
      counts.approvalsTimedOut = approvals.ended.length;
      this.ctx.announce(approvals.changes);
      // Arrivals in concurrency groups of jobs no server settled yet: a run another server started, or
      // a crash between a change and its settling (README "Concurrency groups").
      await this.ctx.jobGroups.settle();
      const runs = await store.settleStrandedRuns(now, REAP_BATCH);
      if (runs > 0) log.warn({ runs }, 'reaper settled runs whose last job finished without settling them (a crash in between)');
      // After the sweeps above, so the slots they freed are taken in this same pass.
      await this.ctx.queued.pass();
      // Ended runs no look after a change handed over: ended by another server, or a crash between
      // acting and finishing (docs/architecture.md "Run ends").
      await this.ctx.runEnds.pass();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      this.ctx.outage.warn('reaper', err);
    }
    if (counts.expired + counts.timedOut + counts.approvalsTimedOut > 0) log.info(counts, 'reaper settled lost jobs and waits past their timeout');
    return counts;
  }

  /** Starts the runs whose scheduled time has come, one per time across every scheduler sharing the store. */
  async fireSchedules(): Promise<ScheduleTotals | null> {
    try {
      return await fireDueSchedules(this.ctx.store, {
        now: this.ctx.now,
        graceMs: this.ctx.scheduleGraceMs,
        log: this.ctx.log,
        onStarted: this.ctx.scheduledRunStarted,
        onQueued: this.ctx.scheduledRunQueued,
      });
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      this.ctx.outage.warn('scheduler', err);
      return null;
    }
  }

  /** One pass of retention: up to BATCHES_PER_PASS batches, the rest on later passes. */
  async applyRetention(policy: RetentionPolicy): Promise<PruneTotals | null> {
    try {
      const totals = await pruneInBatches(this.ctx.store, pruneRequest(policy, this.ctx.now(), false), BATCHES_PER_PASS);
      if (totals.runs.length > 0 || totals.partial_log_chunks > 0) {
        const logChunks = totals.runs.reduce((n, r) => n + r.log_chunks, totals.partial_log_chunks);
        this.ctx.log.info({ runs: totals.runs.length, log_chunks: logChunks, more: totals.more }, 'retention deleted finished runs');
      }
      if (totals.unnamed_blobs.length > 0) await this.removeBlobs(totals.unnamed_blobs);
      return totals;
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      this.ctx.outage.warn('retention', err);
      return null;
    }
  }

  /**
   * Workers unseen for WORKER_RETAIN_SECS that hold no lease are deleted, in bounded batches, so that
   * the list does not grow by a row for every worker id ever seen.
   */
  async pruneWorkers(): Promise<number> {
    const retainMs = this.ctx.workerRetainMs;
    try {
      const { deleted, more } = await pruneWorkersInBatches(this.ctx.store, this.ctx.now() - retainMs, BATCHES_PER_PASS);
      if (deleted > 0) this.ctx.log.info({ workers: deleted, more, retain_secs: retainMs / 1000 }, 'reaper deleted workers not seen for WORKER_RETAIN_SECS');
      return deleted;
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      this.ctx.outage.warn('worker pruning', err);
      return 0;
    }
  }

  /**
   * Deletes the artifact bytes kept outside the store (ARTIFACTS_DIR) that no row names any more, and
   * the leftovers of uploads that died; a no-op for bytes in the store, which go with their rows. Each
   * reaper pass asks (the file implementation then sweeps at most once a minute); workflow deletion
   * forces it (retention removes the files the store reported instead, without a listing). A failure
   * is logged, never thrown: the next pass tries again.
   */
  async collectBlobs(force = false): Promise<void> {
    try {
      const removed = await this.ctx.blobs.collect(force);
      if (removed > 0) this.ctx.log.info({ blobs: removed }, 'deleted artifact files no run names any more');
    } catch (err) {
      if (err instanceof StoreUnavailableError) this.ctx.outage.warn('artifact files', err);
      else this.ctx.log.warn({ err }, 'deleting unused artifact files failed; the next reaper pass tries again');
    }
  }

  /** Deletes the bytes kept outside the store of blobs retention reported unnamed; logged, never thrown. */
  private async removeBlobs(ids: readonly string[]): Promise<void> {
    try {
      const removed = await this.ctx.blobs.remove(ids);
      if (removed > 0) this.ctx.log.info({ blobs: removed }, 'deleted the artifact files of the runs retention deleted');
    } catch (err) {
      // The reaper's sweep finds them again (no row names them).
      this.ctx.log.warn({ err }, 'deleting artifact files after retention failed; the sweep tries again');
    }
  }
}
