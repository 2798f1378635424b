/**
 * One lease renewal for every running job of a worker: a `heartbeat-batch` call per interval instead
 * of a heartbeat loop and a cancellation poll per job. Each lease's answer is handled as its own
 * heartbeat's would be: 200 renews it, `job_cancelled` aborts the job as cancelled, any other 409
 * means the lease is lost.
 */
import type { HeartbeatBatchResponse } from '../protocol/wire.js';
import { describe, isLeaseOver } from './answers.js';
import { elementError, lacksBatches, MAX_BATCH } from './batching.js';
import type { KeptLease, LeaseKeeperContext } from './seams.js';
import { backoffMs, now, Wakeup } from './timing.js';

/** `R`: the worker's job attempts, handed back as they are when the keeper gives them up. */
export class LeaseKeeper<R extends KeptLease> {
  private readonly runs = new Set<R>();
  private looping = false;
  private failures = 0;
  private readonly wakeup = new Wakeup();
  /** The renewal in flight; aborted when no job is left to renew or the jobs are handed over. */
  private inFlight: AbortController | null = null;

  constructor(private readonly ctx: LeaseKeeperContext) {}

  add(run: R): void {
    this.runs.add(run);
    if (!this.looping) {
      this.looping = true;
      void this.loop();
    }
  }

  delete(run: R): void {
    this.runs.delete(run);
    if (this.runs.size === 0) this.quiet();
  }

  /** Gives every job back (to heartbeat on its own) and stops renewing. */
  handOver(): R[] {
    const runs = [...this.runs];
    this.runs.clear();
    this.quiet();
    return runs;
  }

  private quiet(): void {
    this.inFlight?.abort();
    this.wakeup.poke();
  }

  private async loop(): Promise<void> {
    const every = this.ctx.everyMs;
    try {
      while (this.runs.size > 0) {
        const dueAt = now() + (this.failures === 0 ? every : Math.min(every, backoffMs(this.failures - 1, every, 250)));
        // A wake-up only ends the loop (no job left); a job claimed meanwhile waits for the due time.
        while (this.runs.size > 0 && now() < dueAt) await this.wakeup.wait(dueAt - now());
        if (this.runs.size === 0) break;
        await this.renew();
      }
    } finally {
      this.looping = false;
    }
  }

  private async renew(): Promise<void> {
    const due = [...this.runs].filter((r) => r.heartbeating);
    let failed = false;
    for (let i = 0; i < due.length && this.runs.size > 0; i += MAX_BATCH) {
      const outcome = await this.renewSome(due.slice(i, i + MAX_BATCH));
      if (outcome === 'dropped') return;
      if (outcome === 'failed') failed = true;
    }
    if (failed) {
      this.failures++;
      return;
    }
    if (this.failures > 0) this.ctx.logger.info({ failed_attempts: this.failures }, 'lease renewal got through again');
    this.failures = 0;
  }

  private async renewSome(due: R[]): Promise<'renewed' | 'failed' | 'dropped'> {
    const sentAt = now();
    // An answer after the next heartbeat was due, or after every lease ran out, is no use.
    const latest = Math.max(...due.map((r) => r.leaseExpiresAt));
    const timeoutMs = Math.max(1, Math.min(this.ctx.heartbeatMs, latest - sentAt));
    const ctl = new AbortController();
    this.inFlight = ctl;
    let res: HeartbeatBatchResponse;
    try {
      res = await this.ctx.client.heartbeatBatch(
        due.map((r) => r.lease.lease_id),
        { timeoutMs, signal: ctl.signal },
      );
    } catch (err) {
      if (ctl.signal.aborted) return 'dropped';
      if (lacksBatches(err)) {
        this.ctx.noBatches(err);
        return 'dropped';
      }
      const left = Math.min(...due.map((r) => r.leaseExpiresAt)) - now();
      this.ctx.logger.warn(
        { err: describe(err), leases: due.length, lease_left_ms: Math.max(0, Math.round(left)) },
        'lease renewal failed; will retry',
      );
      return 'failed';
    } finally {
      if (this.inFlight === ctl) this.inFlight = null;
    }
    if (!Array.isArray(res?.results)) {
      this.ctx.logger.warn({ leases: due.length }, 'the lease renewal answer has no results; will retry');
      return 'failed';
    }
    const answers = new Map(res.results.map((r) => [r.lease_id, r]));
    for (const run of due) {
      const a = answers.get(run.lease.lease_id);
      // Finished (or given up) while the request was out: the answer is about a lease we no longer use.
      if (!a || !this.runs.has(run) || !run.heartbeating) continue;
      if (a.status === 200) {
        run.renewed(sentAt);
        continue;
      }
      const err = elementError(a.status, 'error' in a ? a.error : undefined, '/api/jobs/heartbeat-batch', run.lease.lease_id);
      if (isLeaseOver(err)) run.lost(err);
      else run.log.warn({ err: describe(err) }, 'heartbeat failed; will retry');
    }
    return 'renewed';
  }
}
