/**
 * What a handler's result becomes on the wire: its outputs (returned, set, or `::set-output` lines)
 * as strings, or its error as a bounded text and whether a retry may help.
 */
import type { Outputs } from '../domain/model.js';
import { keyed } from '../domain/keyed.js';
import { maskText } from '../domain/masking.js';
import { PermanentError } from './worker-api.js';

/** The interface's rule: error text sent by workers is truncated to this many characters. */
export const MAX_ERROR_CHARS = 4096;

/** A handler's result, as it is to be reported. */
export type Outcome = { ok: true; outputs: Outputs } | { ok: false; error: string; retryable: boolean };

/** The outcome with the job's secrets hidden in its outputs (names and values) or error (README "Secrets"). */
export function maskOutcome(outcome: Outcome, forms: readonly string[]): Outcome {
  if (forms.length === 0) return outcome;
  if (!outcome.ok) return { ...outcome, error: maskText(outcome.error, forms) };
  return { ok: true, outputs: Object.fromEntries(Object.entries(outcome.outputs).map(([k, v]) => [maskText(k, forms), maskText(v, forms)])) };
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
