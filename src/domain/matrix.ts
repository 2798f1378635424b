/**
 * Matrix jobs (README "Matrix, fan-out and artifacts"): the combinations a `strategy.matrix`
 * expands into, by GitHub Actions' rules, and how each instance is named and identified.
 */
import { envNamePart } from './conditions.js';
import { valueText } from './expressions.js';

/** At most this many instances per matrix (GitHub's limit). */
export const MAX_MATRIX_INSTANCES = 256;

export type Combo = Record<string, unknown>;

/** `<job>~<index>`: `~` is outside the job-id alphabet, so an instance id never equals a job id. */
export const INSTANCE_SEPARATOR = '~';

export function instanceId(group: string, index: number): string {
  return `${group}${INSTANCE_SEPARATOR}${index}`;
}

/** The definition job of an instance id, or null for a plain job id. */
export function groupOfInstance(jobId: string): string | null {
  const at = jobId.lastIndexOf(INSTANCE_SEPARATOR);
  return at > 0 && /^[0-9]+$/.test(jobId.slice(at + 1)) ? jobId.slice(0, at) : null;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function matches(combo: Combo, partial: Combo): boolean {
  return Object.entries(partial).every(([k, v]) => Object.hasOwn(combo, k) && sameValue(combo[k], v));
}

/**
 * GitHub's expansion: the product of the vectors (first key varies slowest), minus every combination an
 * `exclude` entry matches on all its keys, then each `include` entry is merged into every combination
 * whose original values it does not change (added keys may be overwritten by a later entry), or added
 * as a new combination when it fits none.
 */
export function expandMatrix(vectors: ReadonlyArray<[string, readonly unknown[]]>, include: readonly Combo[], exclude: readonly Combo[]): Combo[] {
  let base: Combo[] = vectors.length === 0 ? [] : [{}];
  for (const [key, values] of vectors) base = base.flatMap((c) => values.map((v) => ({ ...c, [key]: v })));
  base = base.filter((c) => !exclude.some((e) => matches(c, e)));
  const original = base.map((c) => ({ ...c }));
  const combos: Combo[] = base.map((c) => ({ ...c }));
  const added: Combo[] = [];
  for (const entry of include) {
    let fitted = false;
    combos.forEach((c, i) => {
      const orig = original[i]!;
      const fits = Object.entries(entry).every(([k, v]) => !Object.hasOwn(orig, k) || sameValue(orig[k], v));
      if (!fits) return;
      Object.assign(c, entry);
      fitted = true;
    });
    if (!fitted) added.push({ ...entry });
  }
  return [...combos, ...added];
}

/** `test (linux, 20)`: GitHub's rendering of an instance's name, values in key order, objects as JSON. */
export function instanceName(name: string, values: readonly unknown[]): string {
  return values.length === 0 ? name : `${name} (${values.map(valueText).join(', ')})`;
}

/** `WEFT_MATRIX_<K>`: K upper-cased, every character outside [A-Za-z0-9] becomes `_`. */
export function matrixEnvName(key: string): string {
  return `WEFT_MATRIX_${envNamePart(key)}`;
}
