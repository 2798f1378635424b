/**
 * `strategy:` of a job (README "Matrix, fan-out and artifacts"): a matrix expanded by GitHub's rules
 * (src/domain/matrix.ts), `fail_fast` and `max_parallel`. The combinations are expanded here, once, so
 * the stored definition says exactly which instances a run makes (and its hash changes when they do).
 */
import { type Combo, expandMatrix, MAX_MATRIX_INSTANCES } from '../domain/matrix.js';
import type { JobStrategy } from '../domain/model.js';
import { type At, checkDepth, checkKeys, child, describe, isAbsent, isPlainObject, readInt } from './values.js';

const STRATEGY_KEYS = ['matrix', 'fail_fast', 'max_parallel'] as const;
// `__proto__` is refused: merging an include entry assigns its keys, which must never reach a prototype.
const MATRIX_KEY = /^(?!__proto__$)[A-Za-z_][A-Za-z0-9_-]*$/;

/** `forEach`: the job has `for_each`, whose strategy takes fail_fast and max_parallel without a matrix. */
export function readStrategy(value: unknown, at: At, forEach = false): JobStrategy | undefined {
  if (isAbsent(value)) return forEach ? { matrix: {}, combos: [], fail_fast: true, max_parallel: null } : undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping { matrix, fail_fast?, max_parallel? }, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, STRATEGY_KEYS, (key, message) => at.issues.add(at.job, child(at, key).field, message), {
    'fail-fast': 'fail_fast',
    'max-parallel': 'max_parallel',
  });
  let failFast = true;
  if (!isAbsent(value.fail_fast)) {
    if (typeof value.fail_fast === 'boolean') failFast = value.fail_fast;
    else at.issues.add(at.job, child(at, 'fail_fast').field, `must be true or false, got ${describe(value.fail_fast)}`);
  }
  const maxParallel = isAbsent(value.max_parallel) ? null : readInt(value.max_parallel, child(at, 'max_parallel'), 1) ?? null;
  if (forEach) {
    if (!isAbsent(value.matrix)) at.issues.add(at.job, child(at, 'matrix').field, 'a job cannot have both for_each and a matrix: use one of them');
    return { matrix: {}, combos: [], fail_fast: failFast, max_parallel: maxParallel };
  }
  if (isAbsent(value.matrix)) {
    at.issues.add(at.job, child(at, 'matrix').field, 'is required: a mapping of key to list of values (with optional include and exclude)');
    return undefined;
  }
  const combos = readMatrix(value.matrix, child(at, 'matrix'));
  if (combos === undefined) return undefined;
  return { matrix: value.matrix as Record<string, unknown>, combos, fail_fast: failFast, max_parallel: maxParallel };
}

function readMatrix(value: unknown, at: At): Combo[] | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping of key to list of values, got ${describe(value)}`);
    return undefined;
  }
  if (!checkDepth(value, at)) return undefined;
  const vectors: Array<[string, unknown[]]> = [];
  let ok = true;
  for (const [key, values] of Object.entries(value)) {
    if (key === 'include' || key === 'exclude') continue;
    if (!MATRIX_KEY.test(key)) {
      at.issues.add(at.job, child(at, key).field, `invalid matrix key '${key}' (letters, digits, _ and -, not starting with a digit or -)`);
      ok = false;
    } else if (!Array.isArray(values) || values.length === 0) {
      at.issues.add(at.job, child(at, key).field, `must be a non-empty list of values, got ${describe(values)}`);
      ok = false;
    } else if (values.some((v) => v === null)) {
      at.issues.add(at.job, child(at, key).field, 'must not contain null');
      ok = false;
    } else {
      vectors.push([key, values]);
    }
  }
  const include = readEntries(value.include, child(at, 'include'));
  const exclude = readEntries(value.exclude, child(at, 'exclude'));
  if (!ok || include === undefined || exclude === undefined) return undefined;
  const keys = new Set(vectors.map(([k]) => k));
  exclude.forEach((e, i) => {
    for (const k of Object.keys(e)) {
      if (!keys.has(k)) at.issues.add(at.job, `${at.field}.exclude[${i}].${k}`, `'${k}' is not a key of the matrix (keys: ${[...keys].join(', ') || 'none'})`);
    }
  });
  // The product is counted before it is built, so a huge matrix costs nothing to refuse.
  const product = vectors.reduce((n, [, v]) => n * v.length, vectors.length === 0 ? 0 : 1);
  if (product > MAX_MATRIX_INSTANCES * 16) {
    at.issues.add(at.job, at.field, `expands to ${product} combinations; at most ${MAX_MATRIX_INSTANCES} instances are allowed`);
    return undefined;
  }
  const combos = expandMatrix(vectors, include, exclude);
  if (combos.length === 0) {
    at.issues.add(at.job, at.field, 'expands to no combination (every one is excluded, or the matrix is empty)');
    return undefined;
  }
  if (combos.length > MAX_MATRIX_INSTANCES) {
    at.issues.add(at.job, at.field, `expands to ${combos.length} instances; at most ${MAX_MATRIX_INSTANCES} are allowed`);
    return undefined;
  }
  return combos;
}

function readEntries(value: unknown, at: At): Combo[] | undefined {
  if (isAbsent(value)) return [];
  if (!Array.isArray(value)) {
    at.issues.add(at.job, at.field, `must be a list of mappings, got ${describe(value)}`);
    return undefined;
  }
  let ok = true;
  value.forEach((e, i) => {
    if (!isPlainObject(e) || Object.keys(e).length === 0) {
      at.issues.add(at.job, child(at, i).field, `must be a non-empty mapping of matrix key to value, got ${describe(e)}`);
      ok = false;
      return;
    }
    for (const k of Object.keys(e)) {
      if (!MATRIX_KEY.test(k)) {
        at.issues.add(at.job, `${child(at, i).field}.${k}`, `invalid matrix key '${k}'`);
        ok = false;
      }
    }
  });
  return ok ? (value as Combo[]) : undefined;
}

const FOR_EACH = /^\s*\$\{\{\s*needs\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}\s*$/;

/** `for_each: ${{ needs.<job>.outputs.<key> }}`, where the job is one of `needs`. */
export function readForEach(value: unknown, needs: readonly string[], at: At): { job: string; key: string } | undefined {
  const m = typeof value === 'string' ? FOR_EACH.exec(value) : null;
  if (!m) {
    at.issues.add(at.job, at.field, `must be '\${{ needs.<job>.outputs.<key> }}' (an output of a need holding a JSON array), got ${describe(value)}`);
    return undefined;
  }
  if (!needs.includes(m[1]!)) {
    at.issues.add(at.job, at.field, `'needs.${m[1]}' is not a need of this job (needs: ${needs.join(', ') || 'none'})`);
    return undefined;
  }
  return { job: m[1]!, key: m[2]! };
}
