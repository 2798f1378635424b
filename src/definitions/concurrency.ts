/**
 * `concurrency:` of a workflow (README "Workflow definitions", "Concurrency groups"): how many of its
 * runs may be active at once, what a start does when that many are, and the group its runs share with
 * other workflows' runs.
 */
import { hasExpression, parseTemplate } from '../domain/expressions.js';
import type { Concurrency, JobConcurrency } from '../domain/model.js';
import { checkKeys, describe, isAbsent, isPlainObject, type At } from './values.js';

const CONCURRENCY_KEYS = ['max_runs', 'when_full', 'group', 'cancel_in_progress'] as const;
/** A group name, as written and once its inputs are filled in. */
export const MAX_GROUP_CHARS = 256;
export const MAX_CONCURRENT_RUNS = 100;
const WHEN_FULL = ['reject', 'queue'] as const;

/** Undefined for the default (one run, reject), so such a definition hashes as it always did. */
export function readConcurrency(value: unknown, at: At): Concurrency | undefined {
  if (isAbsent(value)) return undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping {max_runs?, when_full?, group?, cancel_in_progress?}, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, CONCURRENCY_KEYS, (key, message) => at.issues.add(at.job, `${at.field}.${key}`, message), {
    max: 'max_runs',
    runs: 'max_runs',
    on_full: 'when_full',
    cancel: 'cancel_in_progress',
    cancel_in_flight: 'cancel_in_progress',
    name: 'group',
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
  readGroup(value, out, at);
  return out.max_runs === 1 && out.when_full === 'reject' && out.group === undefined ? undefined : out;
}

/**
 * `group` (text, `${{ inputs.* }}` allowed: checked against the declared inputs by checkGroupInputs)
 * and `cancel_in_progress` (a boolean, only with a group).
 */
function readGroup(value: Record<string, unknown>, out: Concurrency, at: At): void {
  const g = value.group;
  if (!isAbsent(g)) {
    if (typeof g !== 'string' || g.trim() === '') {
      at.issues.add(at.job, `${at.field}.group`, `must be a non-empty text naming the group (e.g. "deploy-\${{ inputs.env }}"), got ${describe(g)}`);
    } else if (g.length > MAX_GROUP_CHARS) {
      at.issues.add(at.job, `${at.field}.group`, `is ${g.length} characters; at most ${MAX_GROUP_CHARS} are allowed`);
    } else {
      out.group = g;
    }
  }
  const c = value.cancel_in_progress;
  if (!isAbsent(c)) {
    if (typeof c !== 'boolean') at.issues.add(at.job, `${at.field}.cancel_in_progress`, `must be true or false, got ${describe(c)}`);
    else if (isAbsent(g)) at.issues.add(at.job, `${at.field}.cancel_in_progress`, 'needs a group: it cancels the running run of the group');
    else if (c) out.cancel_in_progress = true;
  }
}

/** The group's expressions: values only, and only the run's inputs and event (it is evaluated when a run starts). */
export function checkGroupInputs(group: string | undefined, inputs: ReadonlySet<string>, at: At): void {
  if (group === undefined || !hasExpression(group)) return;
  const parsed = parseTemplate(group);
  if ('error' in parsed) {
    at.issues.add(at.job, `${at.field}.group`, parsed.error);
    return;
  }
  for (const part of parsed.parts) {
    // The event a run was started with is known when it starts, as its inputs are (README "Triggers and notifications").
    if (typeof part === 'string' || part.ref.kind === 'literal' || part.ref.kind === 'event' || part.ref.kind === 'event_name') continue;
    if (part.ref.kind !== 'inputs') {
      at.issues.add(at.job, `${at.field}.group`, `'${part.text}' cannot be used in a group: only \${{ inputs.<name> }} and \${{ event.<path> }}, known when the run starts`);
    } else if (!inputs.has(part.ref.key)) {
      at.issues.add(at.job, `${at.field}.group`, `unknown input '${part.ref.key}' (declared: ${[...inputs].join(', ') || 'none'})`);
    }
  }
}

const JOB_CONCURRENCY_KEYS = ['group', 'cancel_in_progress'] as const;

/**
 * `concurrency:` of a job: a group (text, or the group alone as a string, as GitHub Actions allows)
 * and `cancel_in_progress`. Its expressions are checked with the job's others (expressions.ts).
 */
export function readJobConcurrency(value: unknown, at: At): JobConcurrency | undefined {
  if (isAbsent(value)) return undefined;
  if (typeof value === 'string') value = { group: value };
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping {group, cancel_in_progress?} or a group name, got ${describe(value)}`);
    return undefined;
  }
  for (const key of ['max_runs', 'when_full']) {
    if (Object.hasOwn(value, key)) {
      at.issues.add(at.job, `${at.field}.${key}`, `is a workflow's setting (concurrency at the top level); a job's concurrency takes only group and cancel_in_progress`);
    }
  }
  const rest = Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'max_runs' && k !== 'when_full'));
  checkKeys(rest, JOB_CONCURRENCY_KEYS, (key, message) => at.issues.add(at.job, `${at.field}.${key}`, message), {
    cancel: 'cancel_in_progress',
    cancel_in_flight: 'cancel_in_progress',
    name: 'group',
  });
  if (isAbsent(value.group)) {
    at.issues.add(at.job, `${at.field}.group`, 'is required: name the group the job shares with other jobs (e.g. "deploy-${{ inputs.env }}")');
    return undefined;
  }
  const out: Concurrency = { max_runs: 1, when_full: 'reject' };
  readGroup(value, out, at);
  return out.group === undefined ? undefined : { group: out.group, cancel_in_progress: out.cancel_in_progress === true };
}
