/**
 * Label matching. A job is claimable by a worker when the job's required labels are a subset of the
 * worker's labels. Jobs are grouped by their exact label set ("label key") so that a claim looks up
 * each fitting group through an index instead of testing every queued job.
 */

/** Canonical form of a label set: sorted, unique. */
export function normalizeLabels(labels: readonly string[]): string[] {
  return [...new Set(labels)].sort();
}

/** Stable key of a label set; the empty set has the empty key. JSON keeps arbitrary label text unambiguous. */
export function labelKey(labels: readonly string[]): string {
  const norm = normalizeLabels(labels);
  return norm.length === 0 ? '' : JSON.stringify(norm);
}

export function isSubset(required: readonly string[], offered: ReadonlySet<string>): boolean {
  for (const l of required) if (!offered.has(l)) return false;
  return true;
}

/** The label set a key stands for (the inverse of labelKey). */
export function labelsOfKey(key: string): string[] {
  return key === '' ? [] : (JSON.parse(key) as string[]);
}

/**
 * Limits on one label set, the same for a job's required labels and a worker's offered ones
 * (README "Limits"): a claim's cost grows with the worker's label count, and no real fleet needs more.
 */
export const MAX_LABELS = 64;
export const MAX_LABEL_LENGTH = 128;

/** C0 controls and DEL: invisible in every listing, and NUL cannot be stored as PostgreSQL text. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** Why one label is unusable, or null when it is fine. */
export function labelProblem(label: string): string | null {
  if (label.length === 0) return 'must not be empty';
  if (label.length > MAX_LABEL_LENGTH) return `must be at most ${MAX_LABEL_LENGTH} characters, got ${label.length}`;
  if (CONTROL_CHARACTERS.test(label)) return 'must not contain control characters (U+0000 to U+001F, U+007F)';
  return null;
}
