/**
 * Small pieces the worker's parts share: how an answer from the server is read (docs/protocol.md
 * "Errors"), what a handler's result becomes on the wire, and timing helpers.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { WorkflowApiError, WorkflowNetworkError } from '../client/client.js';
import { classifyAnswer, landedReportCode, type ErrorBody, type LeaseCallOutcome } from '../protocol/errors.js';
import type { ClaimedJob } from '../protocol/types.js';
import type { Outputs } from '../domain/types.js';
import { keyed } from '../domain/keyed.js';
import { sleep } from '../util/sleep.js';
import { PermanentError } from './types.js';

/** The interface's rule: error text sent by workers is truncated to this many characters. */
export const MAX_ERROR_CHARS = 4096;

/** The most jobs, reports or leases one batch call may carry (docs/api.md "Batches"). */
export const MAX_BATCH = 1000;

/** `${hostname}-${6 hex}`: the worker id used when none is given. */
export function defaultWorkerId(): string {
  return `${os.hostname()}-${randomBytes(3).toString('hex')}`;
}

/** A `::set-output key=value` line (a trailing CR is ignored), or null. */
export function parseSetOutput(line: string): [string, string] | null {
  const m = /^::set-output ([^=]+)=(.*?)\r?$/s.exec(line);
  if (!m) return null;
  const key = m[1]!.trim();
  return key === '' ? null : [key, m[2]!];
}

/** Cuts `text` to at most `max` characters (UTF-16 units), marking the cut, never splitting a pair. */
export function truncateError(text: string, max = MAX_ERROR_CHARS): string {
  if (text.length <= max) return text;
  const marker = '… [truncated]';
  let head = text.slice(0, Math.max(0, max - marker.length));
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  return head + marker;
}

/** A server from before long polls refuses the unknown `wait_secs` field of a claim. */
export function refusesLongPoll(err: unknown): boolean {
  return err instanceof WorkflowApiError && err.status === 400 && /wait_secs/.test(err.serverMessage);
}

/**
 * A server without the batch endpoints (an older weft, or one that implements only the interface's
 * one-job calls) has no route there. The batch paths have no parameters, so a 404 can only mean that.
 */
export function lacksBatches(err: unknown): boolean {
  return err instanceof WorkflowApiError && (err.status === 404 || err.status === 405);
}

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

/**
 * One element of a batch answered with an error: the error its one-job call would have thrown, so
 * that it is judged exactly as that call's error would be.
 */
export function elementError(status: number, body: ErrorBody | undefined, path: string, leaseId: string): WorkflowApiError {
  const code = typeof body?.error === 'string' ? body.error : 'http_error';
  const message = typeof body?.message === 'string' ? body.message : `status ${status}`;
  return new WorkflowApiError(status, '', code, message, body, 'POST', `${path} [${leaseId}]`);
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

/** The text to report for a thrown value. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name || 'handler failed';
  if (typeof err === 'string') return err || 'handler failed';
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

export function isRetryable(err: unknown): boolean {
  if (err instanceof PermanentError) return false;
  if (err !== null && typeof err === 'object' && (err as { retryable?: unknown }).retryable === false) return false;
  return true;
}

/** Handler results are declared as strings; anything else a JS caller returns is stringified. */
export function normalizeOutputs(value: unknown): Outputs {
  const out: Outputs = keyed();
  if (value === null || typeof value !== 'object') return out;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** A handler's result, as it is to be reported. */
export type Outcome = { ok: true; outputs: Outputs } | { ok: false; error: string; retryable: boolean };

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

export const now = () => performance.now();

export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Capped exponential backoff with ±20 % jitter; `n` counts failures from 0. */
export function backoffMs(n: number, capMs: number, baseMs = 250): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(n, 30));
  return Math.min(capMs, raw * (0.8 + Math.random() * 0.4));
}

/** Resolves when `signal` aborts (at once if it already has). Holds no timer, so keeps nothing alive. */
export function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** A resettable wake-up: `wait()` resolves at the next `poke()` (or after `ms`). */
export class Wakeup {
  private controller = new AbortController();
  poke(): void {
    this.controller.abort();
    this.controller = new AbortController();
  }
  wait(ms?: number): Promise<void> {
    return ms === undefined ? whenAborted(this.controller.signal) : sleep(ms, this.controller.signal);
  }
}
