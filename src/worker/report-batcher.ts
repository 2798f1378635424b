/**
 * Result reports through `report-batch`: reports that finish close together go out in one request,
 * and the request claims jobs for the slots it frees (complete-and-claim-next). Each report keeps
 * the rules of its one-job call: retried with backoff while the answer is transient, judged by its
 * own element of the answer otherwise (docs/protocol.md "Errors"), and counted as landed when a retry
 * meets the 409 its own earlier try caused.
 */
import type { Report, ReportBatchResponse } from '../protocol/wire.js';
import { describe, isTransient } from './answers.js';
import { elementError, lacksBatches } from './batching.js';
import { deliverOne, pastHope, type ReportState } from './deliver.js';
import type { Outcome } from './outcome.js';
import { reportRefusal, type Delivery } from './report-answer.js';
import type { ReportBatcherContext, ReportedRun } from './seams.js';
import { backoffMs, now, Wakeup } from './timing.js';

/** Bounds of one request, well inside the server's (1000 reports, a 1 MB body by default). */
const MAX_REPORTS = 500;
const MAX_BATCH_CHARS = 256 * 1024;

interface Pending {
  run: ReportedRun;
  outcome: Outcome;
  report: Report;
  chars: number;
  stopWhy: () => string | null;
  interrupt: AbortSignal;
  deadline: number;
  state: ReportState;
  /** Not sent before this (a backoff after a transient failure). */
  readyAt: number;
  resolve: (d: Delivery) => void;
}

export class ReportBatcher {
  private queue: Pending[] = [];
  private looping = false;
  private failures = 0;
  private readonly wakeup = new Wakeup();
  private readonly poke = () => this.wakeup.poke();

  constructor(private readonly ctx: ReportBatcherContext) {}

  /** Same contract as {@link deliverOne}. */
  submit(run: ReportedRun, outcome: Outcome, stopWhy: () => string | null, interrupt: AbortSignal, deadline = Infinity): Promise<Delivery> {
    const report: Report = outcome.ok
      ? { lease_id: run.lease.lease_id, outcome: 'complete', outputs: outcome.outputs }
      : { lease_id: run.lease.lease_id, outcome: 'fail', error: outcome.error, retryable: outcome.retryable };
    return new Promise((resolve) => {
      const p: Pending = {
        run,
        outcome,
        report,
        chars: JSON.stringify(report).length,
        stopWhy,
        interrupt,
        deadline,
        state: { failures: 0, transientSeen: false },
        readyAt: 0,
        resolve: (d) => {
          interrupt.removeEventListener('abort', this.poke);
          resolve(d);
        },
      };
      // An abort while the report waits for its turn ends it at once, not at its turn.
      interrupt.addEventListener('abort', this.poke);
      this.enqueue(p);
    });
  }

  /** The worker gave batches up: what waits here goes to the one-job endpoints now. */
  fallBack(): void {
    this.wakeup.poke();
  }

  private enqueue(p: Pending): void {
    this.queue.push(p);
    if (this.looping) {
      this.wakeup.poke();
      return;
    }
    this.looping = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        this.sweep();
        if (this.queue.length === 0) return;
        if (!this.ctx.batching()) {
          for (const p of this.queue.splice(0)) this.single(p);
          return;
        }
        const wait = Math.min(...this.queue.map((p) => p.readyAt)) - now();
        if (wait > 0) {
          await this.wakeup.wait(wait);
          continue;
        }
        // Reports finishing in the same turn of the event loop share the request.
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.sweep();
        const batch = this.take();
        if (batch.length > 0) await this.send(batch);
      }
    } finally {
      this.looping = false;
    }
  }

  /** Ends the reports whose lease is gone or whose job was abandoned meanwhile. */
  private sweep(): void {
    this.queue = this.queue.filter((p) => {
      const why = p.stopWhy();
      if (why === null) return true;
      p.resolve({ kind: 'lost', detail: why });
      return false;
    });
  }

  private take(): Pending[] {
    const t = now();
    const batch: Pending[] = [];
    let chars = 0;
    this.queue = this.queue.filter((p) => {
      if (p.readyAt > t || batch.length >= MAX_REPORTS) return true;
      if (batch.length > 0 && chars + p.chars > MAX_BATCH_CHARS) return true;
      batch.push(p);
      chars += p.chars;
      return false;
    });
    return batch;
  }

  /** From here on the report goes through the one-job endpoint, where it started. */
  private single(p: Pending): void {
    void deliverOne(this.ctx, p.run, p.outcome, p.stopWhy, p.interrupt, p.deadline, p.state).then(p.resolve);
  }

  private async send(batch: Pending[]): Promise<void> {
    const w = this.ctx;
    const along = w.claimAlong(batch.length);
    const sentAt = now();
    let res: ReportBatchResponse;
    try {
      res = await w.client.reportBatch(batch.map((p) => p.report), along?.request);
    } catch (err) {
      along?.release();
      if (lacksBatches(err)) {
        w.noBatches(err);
        for (const p of batch) this.single(p);
      } else if (isTransient(err)) {
        this.retryLater(batch, err);
      } else {
        // One report the server will not take (outputs too large, say) must not sink the others.
        w.logger.warn({ err: describe(err), reports: batch.length }, 'the server refused a report batch as a whole; sending its reports one by one');
        for (const p of batch) this.single(p);
      }
      return;
    }
    along?.release();
    if (!Array.isArray(res?.results)) {
      w.logger.warn({ reports: batch.length }, 'the report batch answer has no results; sending its reports one by one');
      for (const p of batch) {
        // The server took the request, so the reports may have landed.
        p.state.transientSeen = true;
        this.single(p);
      }
      return;
    }
    if (this.failures > 0) w.logger.info({ failed_attempts: this.failures }, 'reports got through again');
    this.failures = 0;
    const answers = new Map(res.results.map((r) => [r.lease_id, r]));
    const again: Pending[] = [];
    let lastErr: unknown = null;
    for (const p of batch) {
      const a = answers.get(p.report.lease_id);
      if (a && a.status === 200 && 'result' in a) {
        p.resolve({ kind: 'landed', status: a.result.status });
        continue;
      }
      const err = a
        ? elementError(a.status, 'error' in a ? a.error : undefined, '/api/jobs/report-batch', p.report.lease_id)
        : new Error(`the report batch's answer has no result for lease ${p.report.lease_id}`);
      const refusal = a ? reportRefusal(err, p.outcome, p.run.job, p.state.transientSeen) : null;
      if (refusal) {
        if (refusal.lost) p.run.lost(refusal.lost);
        p.resolve(refusal.delivery);
      } else {
        again.push(p);
        lastErr = err;
      }
    }
    if (again.length > 0) this.retryLater(again, lastErr);
    // A job claimed while stopping is run all the same: its lease is ours.
    w.claimed(Array.isArray(res.claims) ? res.claims : [], sentAt);
  }

  /** Back in the queue after a transient failure, all of them due again after one backoff. */
  private retryLater(batch: Pending[], err: unknown): void {
    const wait = backoffMs(this.failures++, this.ctx.maxBackoffMs, 250);
    const readyAt = now() + wait;
    let kept = 0;
    for (const p of batch) {
      p.state.transientSeen = true;
      p.state.failures++;
      const over = pastHope(p.run, err, wait, p.deadline);
      if (over) {
        p.resolve(over);
        continue;
      }
      p.readyAt = readyAt;
      this.queue.push(p);
      kept++;
    }
    if (kept > 0) {
      this.ctx.logger.warn({ err: describe(err), reports: kept, retry_in_ms: Math.round(wait) }, 'could not send results; retrying');
    }
  }
}
