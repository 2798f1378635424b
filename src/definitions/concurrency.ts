/**
 * `concurrency:` of a workflow (README "Workflow definitions"): how many of its runs may be active at
 * once, and what a start does when that many are.
 */
import type { Concurrency } from '../domain/model.js';
import { checkKeys, describe, isAbsent, isPlainObject, type At } from './values.js';

const CONCURRENCY_KEYS = ['max_runs', 'when_full'] as const;
export const MAX_CONCURRENT_RUNS = 100;
const WHEN_FULL = ['reject', 'queue'] as const;

/** Undefined for the default (one run, reject), so such a definition hashes as it always did. */
export function readConcurrency(value: unknown, at: At): Concurrency | undefined {
  if (isAbsent(value)) return undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping {max_runs?, when_full?}, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, CONCURRENCY_KEYS, (key, message) => at.issues.add(at.job, `${at.field}.${key}`, message), {
    max: 'max_runs',
    runs: 'max_runs',
    on_full: 'when_full',
  });
  const out: Concurrency = { max_runs: 1, when_full: 'reject' };
  if (!isAbsent(value.max_runs)) {
    const n = value.max_runs;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CONCURRENT_RUNS) {
      at.issues.add(at.job, `${at.field}.max_runs`, `must be a whole number from 1 to ${MAX_CONCURRENT_RUNS}, got ${describe(n)}`);
    } else {
      out.max_runs = n;
    }
  }
  if (!isAbsent(value.when_full)) {
    const w = value.when_full;
    if (typeof w !== 'string' || !(WHEN_FULL as readonly string[]).includes(w)) {
      at.issues.add(at.job, `${at.field}.when_full`, `must be one of ${WHEN_FULL.join(', ')}, got ${describe(w)}`);
    } else {
      out.when_full = w as Concurrency['when_full'];
    }
  }
  return out.max_runs === 1 && out.when_full === 'reject' ? undefined : out;
}
