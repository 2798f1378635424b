import { retryDelayMs } from './backoff.js';
import type { Backoff } from './model.js';

/**
 * What a failure does to a job (README "How a run works"): a retryable failure with budget left
 * re-queues it for the next attempt after its backoff; anything else fails it for good.
 */
export type FailurePlan =
  | { kind: 'retry'; attempt: number; delayed_until_ms: number; ready_at_ms: number }
  | { kind: 'fail' };

export function planFailure(
  job: { attempt: number; max_retries: number; backoff: Backoff },
  retryable: boolean,
  nowMs: number,
): FailurePlan {
  if (!retryable || job.attempt >= job.max_retries) return { kind: 'fail' };
  const attempt = job.attempt + 1;
  const delay = retryDelayMs(job.backoff, attempt);
  const delayedUntil = delay > 0 ? nowMs + delay : 0;
  return { kind: 'retry', attempt, delayed_until_ms: delayedUntil, ready_at_ms: Math.max(nowMs, delayedUntil) };
}

/** Error texts of the failures the server decides on its own. */
export const LEASE_EXPIRED_ERROR = 'lease expired';
export const timedOutError = (timeoutSecs: number | null) => `timed out after ${timeoutSecs}s`;
