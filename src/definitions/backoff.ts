/**
 * Backoff spellings. Users write the lower-case form; Rust workers and existing clients use serde's
 * PascalCase external tagging, so both are accepted and normalised to the internal `Backoff`.
 */
import type { Backoff } from '../domain/model.js';
import { NO_BACKOFF } from '../domain/backoff.js';
import { type At, checkKeys, child, describe, isAbsent, isPlainObject, readInt } from './values.js';

const KINDS: Record<string, Backoff['kind']> = {
  none: 'none',
  None: 'none',
  fixed: 'fixed',
  Fixed: 'fixed',
  exponential: 'exponential',
  Exponential: 'exponential',
};

const SHAPE_HINT = "expected 'none', { fixed: { delay_secs } } or { exponential: { base_secs, max_secs } }";

export function readBackoff(value: unknown, at: At): Backoff {
  const none = NO_BACKOFF;
  if (isAbsent(value)) return none;
  if (typeof value === 'string') {
    if (value === 'none' || value === 'None') return none;
    const kind = KINDS[value];
    at.issues.add(at.job, at.field, kind !== undefined
      ? `'${value}' needs parameters: ${SHAPE_HINT}`
      : `unknown backoff '${value}': ${SHAPE_HINT}`);
    return none;
  }
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a string or a mapping, got ${describe(value)}: ${SHAPE_HINT}`);
    return none;
  }
  const keys = Object.keys(value);
  const known = keys.filter((k) => Object.hasOwn(KINDS, k));
  checkKeys(value, Object.keys(KINDS), (key, message) => at.issues.add(at.job, child(at, key).field, message));
  if (known.length !== 1) {
    if (known.length > 1) at.issues.add(at.job, at.field, `must have exactly one strategy, got ${known.join(', ')}`);
    else if (keys.length === 0) at.issues.add(at.job, at.field, `must not be empty: ${SHAPE_HINT}`);
    return none;
  }
  const tag = known[0]!;
  const kind = KINDS[tag]!;
  const params = value[tag];
  const paramsAt = child(at, tag);
  if (kind === 'none') {
    if (params !== null && !(isPlainObject(params) && Object.keys(params).length === 0)) {
      at.issues.add(at.job, paramsAt.field, `takes no parameters, got ${describe(params)}`);
    }
    return none;
  }
  if (!isPlainObject(params)) {
    const wanted = kind === 'fixed' ? '{ delay_secs }' : '{ base_secs, max_secs }';
    at.issues.add(at.job, paramsAt.field, `must be a mapping ${wanted}, got ${describe(params)}`);
    return none;
  }
  const names = kind === 'fixed' ? ['delay_secs'] : ['base_secs', 'max_secs'];
  checkKeys(params, names, (key, message) => at.issues.add(at.job, child(paramsAt, key).field, message), {
    delay: 'delay_secs',
    base: 'base_secs',
    max: 'max_secs',
  });
  const nums: Record<string, number | undefined> = {};
  for (const name of names) {
    if (isAbsent(params[name])) at.issues.add(at.job, child(paramsAt, name).field, 'is required');
    else nums[name] = readInt(params[name], child(paramsAt, name), 0);
  }
  if (kind === 'fixed') {
    return nums.delay_secs === undefined ? none : { kind: 'fixed', delay_secs: nums.delay_secs };
  }
  const { base_secs, max_secs } = nums;
  if (base_secs === undefined || max_secs === undefined) return none;
  if (max_secs < base_secs) {
    at.issues.add(at.job, child(paramsAt, 'max_secs').field, `must be >= base_secs (${base_secs}), got ${max_secs}`);
    return none;
  }
  return { kind: 'exponential', base_secs, max_secs };
}
