/**
 * How the worker reads an answer from the server: what an error means for the call that got it
 * (docs/protocol.md "Errors"), and how an error is put into a log line.
 */
import { WorkflowApiError, WorkflowNetworkError } from '../client/client.js';
import { classifyAnswer, type LeaseCallOutcome } from '../protocol/errors.js';

/** What an error of a server call means for the worker, by the catalogue in docs/protocol.md. */
export function outcomeOf(err: unknown): LeaseCallOutcome {
  return err instanceof WorkflowApiError ? classifyAnswer(err.status, err.error) : classifyAnswer(null, null);
}

/** Network failures, timeouts, 5xx, 408 and 429 are worth retrying; other answers are not. */
export function isTransient(err: unknown): boolean {
  return outcomeOf(err) === 'transient';
}

/** The server says this lease is over: its job was cancelled, or the lease expired or was settled. */
export function isLeaseOver(err: unknown): err is WorkflowApiError {
  const o = outcomeOf(err);
  return o === 'lease_lost' || o === 'cancelled';
}

/** A server from before long polls refuses the unknown `wait_secs` field of a claim. */
export function refusesLongPoll(err: unknown): boolean {
  return err instanceof WorkflowApiError && err.status === 400 && /wait_secs/.test(err.serverMessage);
}

export function describe(err: unknown): string {
  if (err instanceof WorkflowApiError) return `${err.status} ${err.error}: ${err.serverMessage}`;
  // Its message already names the call and the cause.
  if (err instanceof WorkflowNetworkError) return err.message;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
