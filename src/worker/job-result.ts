/**
 * What becomes of a job once its handler has settled: its result reported (a refused success turns
 * into a failure), or, for an aborted job, its last log lines and the note of why it was given up.
 */
import { timedOutError } from '../domain/retry.js';
import { describe, now, secs, truncateError, type Outcome } from './helpers.js';
import type { JobRun } from './job-run.js';
import type { AbortReason } from './types.js';
import type { Worker } from './worker.js';

/** How long an aborted job's last log lines may take to go out. */
const LAST_WORDS_MS = 2000;

/**
 * After an abort nothing is reported, except a shutdown's failure (so that the job is retried at
 * once rather than after its lease runs out). A cancelled or shut-down job's last log lines still go out.
 */
export async function afterAbort(worker: Worker, run: JobRun): Promise<void> {
  const { reason, detail } = run.abandoned!;
  let note = 'nothing reported';
  if (reason !== 'lease_lost') {
    const left = await run.sender.flush(LAST_WORDS_MS);
    run.sender.close();
    if (left > 0) note += `; ${left} log chunk(s) not delivered`;
  }
  if (reason === 'shutdown' || reason === 'timeout') {
    // Reported at once, so the job is retried (or failed) now rather than when the server notices.
    const error = reason === 'timeout' ? timedOutError(run.job.timeout_secs) : 'aborted: the worker was shut down';
    const d = await worker.deliver(run, { ok: false, error, retryable: true }, () => run.gone, run.goneSignal, now() + worker.abortGraceMs);
    note =
      d.kind === 'landed' || d.kind === 'settled'
        ? `failure reported (job ${d.status})`
        : `the failure report did not land: ${d.kind === 'refused' ? describe(d.err) : d.detail}`;
  }
  abandonedEvent(worker, run, reason, detail, note);
}

export function abandonedEvent(worker: Worker, run: JobRun, reason: AbortReason, detail: string, note: string): void {
  worker.counters.abandoned++;
  const durationMs = now() - run.startedAt;
  const what =
    reason === 'cancelled'
      ? 'job cancelled'
      : reason === 'shutdown'
        ? 'job aborted by shutdown'
        : reason === 'timeout'
          ? 'job timed out'
          : 'job abandoned (lease lost)';
  run.log.warn({ reason, detail, duration_ms: Math.round(durationMs) }, `${what} after ${secs(durationMs)}; handler stopped; ${note}`);
  worker.notify('job:abandoned', { job: run.job, lease: run.lease, reason, detail, durationMs });
}

/**
 * Sends the handler's logs (waiting at most logDrainMs for them), then complete/fail, retried with
 * capped backoff until it lands or the lease is gone.
 */
export async function report(worker: Worker, run: JobRun, outcome: Outcome): Promise<void> {
  const left = await run.sender.flush(worker.logDrainMs);
  if (left > 0 && !run.abandoned) {
    run.log.warn({ chunks: left }, `${left} log chunk(s) could not be delivered within ${secs(worker.logDrainMs)}; reporting the result without them`);
  }
  run.sender.close();
  for (;;) {
    if (run.abandoned) return afterAbort(worker, run);
    // Any abort (the lease lost included) aborts the handler's signal.
    const d = await worker.deliver(run, outcome, () => run.gone ?? run.abandoned?.detail ?? null, run.controller.signal);
    if (d.kind === 'refused') {
      if (outcome.ok) {
        // The server will never take these outputs (too large, say): fail the job instead.
        run.log.error({ err: describe(d.err) }, 'the server refused the result; reporting a failure instead');
        outcome = { ok: false, error: truncateError(`the server refused the job's result: ${describe(d.err)}`), retryable: false };
        continue;
      }
      run.log.error({ err: describe(d.err) }, 'the server refused the failure report; giving up on it');
      return abandonedEvent(worker, run, 'lease_lost', `failure report refused: ${describe(d.err)}`, 'the failure report was refused');
    }
    if (d.kind === 'lost' || d.kind === 'timeout') {
      if (run.abandoned) return afterAbort(worker, run);
      return abandonedEvent(worker, run, 'lease_lost', d.detail, 'the result was not reported');
    }
    const durationMs = now() - run.startedAt;
    const landed = d.kind === 'settled' ? ' (an earlier try had landed; its answer was lost)' : '';
    if (outcome.ok) {
      worker.counters.succeeded++;
      run.log.info({ outputs: Object.keys(outcome.outputs), status: d.status }, `job succeeded after ${secs(durationMs)}; reported${landed}`);
      worker.notify('job:done', { job: run.job, lease: run.lease, outputs: outcome.outputs, status: d.status, durationMs });
    } else {
      worker.counters.failed++;
      run.log.info(
        { error: outcome.error.slice(0, 300), retryable: outcome.retryable, status: d.status },
        `job failed after ${secs(durationMs)}; reported${landed}`,
      );
      worker.notify('job:failed', {
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
