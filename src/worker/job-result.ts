/**
 * What becomes of a job once its handler has settled: its result reported (a refused success turns
 * into a failure), or, for an aborted job, its last log lines and the note of why it was given up.
 * The answer says how the job ended; the worker counts it and emits its event.
 */
import { timedOutError } from '../domain/retry.js';
import type { Outputs } from '../domain/model.js';
import { describe } from './answers.js';
import type { JobRun } from './job-run.js';
import { maskOutcome, truncateError, type Outcome } from './outcome.js';
import type { Settling } from './seams.js';
import { now, secs } from './timing.js';
import type { AbortReason } from './worker-api.js';

/** How a job ended: reported as a success or a failure (with the job state the server answered), or given up. */
export type Settlement =
  | { kind: 'done'; outputs: Outputs; status: string; durationMs: number }
  | { kind: 'failed'; error: string; retryable: boolean; status: string; durationMs: number }
  | { kind: 'abandoned'; reason: AbortReason; detail: string; durationMs: number };

/** How long an aborted job's last log lines may take to go out. */
const LAST_WORDS_MS = 2000;

/**
 * After an abort nothing is reported, except a shutdown's failure (so that the job is retried at
 * once rather than after its lease runs out). A cancelled or shut-down job's last log lines still go out.
 */
export async function afterAbort(s: Settling, run: JobRun): Promise<Settlement> {
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
    const d = await s.deliver(run, { ok: false, error, retryable: true }, () => run.gone, run.goneSignal, now() + s.abortGraceMs);
    note =
      d.kind === 'landed' || d.kind === 'settled'
        ? `failure reported (job ${d.status})`
        : `the failure report did not land: ${d.kind === 'refused' ? describe(d.err) : d.detail}`;
  }
  return abandoned(run, reason, detail, note);
}

function abandoned(run: JobRun, reason: AbortReason, detail: string, note: string): Settlement {
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
  return { kind: 'abandoned', reason, detail, durationMs };
}

/**
 * Sends the handler's logs (waiting at most logDrainMs for them), then complete/fail, retried with
 * capped backoff until it lands or the lease is gone.
 */
export async function report(s: Settling, run: JobRun, outcome: Outcome): Promise<Settlement> {
  outcome = maskOutcome(outcome, run.masks);
  const left = await run.sender.flush(s.logDrainMs);
  if (left > 0 && !run.abandoned) {
    run.log.warn({ chunks: left }, `${left} log chunk(s) could not be delivered within ${secs(s.logDrainMs)}; reporting the result without them`);
  }
  run.sender.close();
  for (;;) {
    if (run.abandoned) return afterAbort(s, run);
    // Any abort (the lease lost included) aborts the handler's signal.
    const d = await s.deliver(run, outcome, () => run.gone ?? run.abandoned?.detail ?? null, run.controller.signal);
    if (d.kind === 'refused') {
      if (outcome.ok) {
        // The server will never take these outputs (too large, say): fail the job instead.
        run.log.error({ err: describe(d.err) }, 'the server refused the result; reporting a failure instead');
        outcome = { ok: false, error: truncateError(`the server refused the job's result: ${describe(d.err)}`), retryable: false };
        continue;
      }
      run.log.error({ err: describe(d.err) }, 'the server refused the failure report; giving up on it');
      return abandoned(run, 'lease_lost', `failure report refused: ${describe(d.err)}`, 'the failure report was refused');
    }
    if (d.kind === 'lost' || d.kind === 'timeout') {
      if (run.abandoned) return afterAbort(s, run);
      return abandoned(run, 'lease_lost', d.detail, 'the result was not reported');
    }
    const durationMs = now() - run.startedAt;
    const landed = d.kind === 'settled' ? ' (an earlier try had landed; its answer was lost)' : '';
    if (outcome.ok) {
      run.log.info({ outputs: Object.keys(outcome.outputs), status: d.status }, `job succeeded after ${secs(durationMs)}; reported${landed}`);
      return { kind: 'done', outputs: outcome.outputs, status: d.status, durationMs };
    }
    run.log.info(
      { error: outcome.error.slice(0, 300), retryable: outcome.retryable, status: d.status },
      `job failed after ${secs(durationMs)}; reported${landed}`,
    );
    return { kind: 'failed', error: outcome.error, retryable: outcome.retryable, status: d.status, durationMs };
  }
}
