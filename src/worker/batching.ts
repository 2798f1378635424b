/**
 * What the batch calls (docs/api.md "Batches") share: their bound, how a server without them answers,
 * and how one element of a batch answer is judged.
 */
import { WorkflowApiError } from '../client/client.js';
import type { ErrorBody } from '../protocol/errors.js';

/** The most jobs, reports or leases one batch call may carry (docs/api.md "Batches"). */
export { MAX_BATCH } from '../protocol/batches-wire.js';

/**
 * A server without the batch endpoints (an older weft, or one that implements only the interface's
 * one-job calls) has no route there. The batch paths have no parameters, so a 404 can only mean that.
 */
export function lacksBatches(err: unknown): boolean {
  return err instanceof WorkflowApiError && (err.status === 404 || err.status === 405);
}

/**
 * One element of a batch answered with an error: the error its one-job call would have thrown, so
 * that it is judged exactly as that call's error would be.
 */
export function elementError(status: number, body: ErrorBody | undefined, path: string, leaseId: string): WorkflowApiError {
  const code = typeof body?.error === 'string' ? body.error : 'http_error';
  const message = typeof body?.message === 'string' ? body.message : `status ${status}`;
  return new WorkflowApiError(status, '', code, message, body, 'POST', `${path} [${leaseId}]`);
}
