/** A result report (complete or fail) on the interface's one-job endpoints. */
import { sleep } from '../util/sleep.js';
import { describe } from './answers.js';
import type { Outcome } from './outcome.js';
import { reportRefusal, type Delivery } from './report-answer.js';
import type { ReportChannel, ReportedRun } from './seams.js';
import { backoffMs, now } from './timing.js';

/** Where a report stands when it moves from one way of sending to another. */
export interface ReportState {
  failures: number;
  /** A try got no answer: it may have landed, so a 409 saying so means it did. */
  transientSeen: boolean;
}

/**
 * One complete/fail report, retried on transient errors until it lands, `stopWhy()` says stop (checked
 * before each try; `interrupt` ends a wait between tries), or `deadline` passes.
 */
export async function deliverOne(
  channel: ReportChannel,
  run: ReportedRun,
  outcome: Outcome,
  stopWhy: () => string | null,
  interrupt: AbortSignal,
  deadline = Infinity,
  state: ReportState = { failures: 0, transientSeen: false },
): Promise<Delivery> {
  for (; ; state.failures++) {
    const why = stopWhy();
    if (why !== null) return { kind: 'lost', detail: why };
    try {
      const res = outcome.ok
        ? await channel.client.complete(run.lease.lease_id, outcome.outputs)
        : await channel.client.fail(run.lease.lease_id, outcome.error, outcome.retryable);
      return { kind: 'landed', status: res.status };
    } catch (err) {
      const refusal = reportRefusal(err, outcome, run.job, state.transientSeen);
      if (refusal) {
        if (refusal.lost) run.lost(refusal.lost);
        return refusal.delivery;
      }
      state.transientSeen = true;
      const wait = backoffMs(state.failures, channel.maxBackoffMs, 250);
      const over = pastHope(run, err, wait, deadline);
      if (over) return over;
      run.log.warn({ err: describe(err), retry_in_ms: Math.round(wait) }, `could not report the ${outcome.ok ? 'result' : 'failure'}; retrying`);
      await sleep(wait, interrupt);
    }
  }
}

/**
 * After a transient failure of a report, before waiting `wait` for the next try: how the report ends
 * instead, if its lease ran out meanwhile or the wait would take it past its deadline.
 */
export function pastHope(run: ReportedRun, err: unknown, wait: number, deadline: number): Delivery | null {
  if (run.leaseExpired()) {
    const detail = `the result could not be reported before the lease expired (last error: ${describe(err)})`;
    run.loseLease(detail);
    return { kind: 'lost', detail };
  }
  if (now() + wait > deadline) return { kind: 'timeout', detail: `still failing: ${describe(err)}` };
  return null;
}
