/**
 * Typed readers for definition fields. Each reports a problem into `Issues` and returns a fallback
 * instead of throwing, so one bad field does not hide the others.
 */
import type { Issues } from './issues.js';
import { unknownKeyMessage } from './suggest.js';
import { isPriority, MAX_PRIORITY, MIN_PRIORITY } from '../domain/priority.js';

export type Plain = Record<string, unknown>;

/** Where a value sits, for issue reporting. */
export interface At {
  issues: Issues;
  job: string | null;
  field: string;
}

/** Optional fields treat null like absence: JSON clients often send `"depends_on": null`, YAML users write `needs:`. */
export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

export function isPlainObject(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `string '${value.length > 40 ? value.slice(0, 40) + '…' : value}'`;
  return `${typeof value} ${String(value)}`;
}

export function child(at: At, key: string | number): At {
  const field = typeof key === 'number' ? `${at.field}[${key}]` : `${at.field}.${key}`;
  return { ...at, field };
}

export function checkKeys(
  obj: Plain,
  allowed: readonly string[],
  report: (key: string, message: string) => void,
  aliases: Readonly<Record<string, string>> = {},
): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) report(key, unknownKeyMessage(key, allowed, aliases));
  }
}

export function readString(value: unknown, at: At, opts: { nonEmpty?: boolean } = {}): string | undefined {
  if (typeof value !== 'string') {
    at.issues.add(at.job, at.field, `must be a string, got ${describe(value)}`);
    return undefined;
  }
  if (opts.nonEmpty && value.trim() === '') {
    at.issues.add(at.job, at.field, 'must not be empty');
    return undefined;
  }
  // A NUL cannot reach `sh -c` and PostgreSQL text refuses it: say so here, not at run time.
  if (value.includes('\u0000')) {
    at.issues.add(at.job, at.field, 'must not contain a NUL character (\\u0000)');
    return undefined;
  }
  return value;
}

export function readInt(value: unknown, at: At, min: number): number | undefined {
  if (typeof value !== 'number') {
    at.issues.add(at.job, at.field, `must be an integer >= ${min}, got ${describe(value)}`);
    return undefined;
  }
  if (!Number.isSafeInteger(value)) {
    at.issues.add(at.job, at.field, `must be an integer >= ${min}, got ${value} (not an integer)`);
    return undefined;
  }
  if (value < min) {
    const what = value < 0 ? 'negative' : 'too small';
    at.issues.add(at.job, at.field, `must be an integer >= ${min}, got ${value} (${what})`);
    return undefined;
  }
  return value;
}

/** `priority:` (README "Priorities"): an integer from -100 to 100. */
export function readPriority(value: unknown, at: At): number | undefined {
  if (isPriority(value)) return value;
  at.issues.add(at.job, at.field, `must be an integer from ${MIN_PRIORITY} (least urgent) to ${MAX_PRIORITY} (most urgent), got ${describe(value)}`);
  return undefined;
}

/** A string or a list of strings; a single string is the one-element list (as GitHub Actions allows). */
export function readStringList(value: unknown, at: At): string[] {
  const items = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(items)) {
    at.issues.add(at.job, at.field, `must be a string or a list of strings, got ${describe(value)}`);
    return [];
  }
  const out: string[] = [];
  items.forEach((item, i) => {
    const itemAt = typeof value === 'string' ? at : child(at, i);
    const s = readString(item, itemAt, { nonEmpty: true });
    if (s !== undefined) out.push(s);
  });
  return out;
}

export function uniqueInOrder(items: readonly string[]): string[] {
  return [...new Set(items)];
}

export function sortedUnique(items: readonly string[]): string[] {
  return [...new Set(items)].sort();
}

// POSIX portable names: anything else (e.g. `=`, spaces) could not be exported by `sh`.
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Scalars only: a nested value has no single string form a shell could receive. */
export function readEnv(value: unknown, at: At): Record<string, string> {
  if (isAbsent(value)) return {};
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping of NAME: value, got ${describe(value)}`);
    return {};
  }
  const entries: Array<[string, string]> = [];
  for (const [name, raw] of Object.entries(value)) {
    const where = child(at, name);
    if (!ENV_NAME.test(name)) {
      at.issues.add(at.job, where.field, `invalid environment variable name '${name}' (use letters, digits and _, not starting with a digit)`);
      continue;
    }
    if (typeof raw === 'string' && raw.includes('\u0000')) at.issues.add(at.job, where.field, 'must not contain a NUL character (\\u0000)');
    else if (typeof raw === 'string') entries.push([name, raw]);
    else if (typeof raw === 'number' && Number.isFinite(raw)) entries.push([name, String(raw)]);
    else if (typeof raw === 'boolean') entries.push([name, String(raw)]);
    else at.issues.add(at.job, where.field, `must be a string, number or boolean, got ${describe(raw)}`);
  }
  // fromEntries defines own properties, so a key like `__proto__` cannot reach the prototype.
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Free-form values (`on`, and the display fields `metadata`, `ports`, `children`) are kept as given and
 * later walked recursively (hashing, rendering, serialising), so their nesting is bounded (README "Limits").
 */
export const MAX_VALUE_DEPTH = 32;

/** Whether arrays and objects nest deeper than `max` levels; iterative, so any depth is safe to ask about. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) return true;
    for (const inner of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof inner === 'object' && inner !== null) stack.push([inner, depth + 1]);
    }
  }
  return false;
}

/** Reports a free-form value nested beyond MAX_VALUE_DEPTH; true when it is within it. */
export function checkDepth(value: unknown, at: At): boolean {
  if (!nestsDeeperThan(value, MAX_VALUE_DEPTH)) return true;
  at.issues.add(at.job, at.field, `nests lists and mappings deeper than ${MAX_VALUE_DEPTH} levels`);
  return false;
}
