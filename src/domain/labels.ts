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
