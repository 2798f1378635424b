/**
 * How a result report (complete or fail) ends, and what an error answer to one means: the same rules
 * whether it went out alone (./deliver.ts) or in a report batch (./report-batcher.ts).
 */
import type { WorkflowApiError } from '../client/client.js';
import { landedReportCode } from '../protocol/errors.js';
import type { ClaimedJob } from '../protocol/wire.js';
import { isLeaseOver, isTransient } from './answers.js';
import type { Outcome } from './outcome.js';

/** How a report (complete or fail) ended. */
export type Delivery =
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

/**
 * What an error answer to a report means, or null when it is transient (retry). `transientSeen` says
 * an earlier try may have landed without its answer arriving.
 */
export function reportRefusal(
  err: unknown,
  outcome: Outcome,
  job: ClaimedJob,
  transientSeen: boolean,
): { delivery: Delivery; lost?: WorkflowApiError } | null {
  if (isLeaseOver(err)) {
    if (transientSeen && err.error === landedReportCode(outcome.ok ? 'complete' : 'fail')) {
      return { delivery: { kind: 'settled', status: outcome.ok ? 'success' : failedStatus(job, outcome.retryable) } };
    }
    return { delivery: { kind: 'lost', detail: err.serverMessage }, lost: err };
  }
  if (!isTransient(err)) return { delivery: { kind: 'refused', err } };
  return null;
}

/** The state a fail report leaves the job in (README "How a run works"), for when its answer was lost. */
export function failedStatus(job: ClaimedJob, retryable: boolean): string {
  return retryable && job.attempt < job.retry_policy.max_retries ? 'queued' : 'failed';
}
