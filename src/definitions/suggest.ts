/**
 * "Did you mean" hints for unknown keys, so typos such as `need:` are caught with a fix attached
 * rather than silently ignored.
 */

/** Optimal string alignment distance: swapped neighbours (`nmae`) count as one typo, not two. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The valid key the user most likely meant. `aliases` maps spellings from neighbouring formats
 * (GitHub Actions, the array form) to their equivalent here; they are not typos, so edit distance
 * would not find them.
 */
export function closestKey(
  key: string,
  valid: readonly string[],
  aliases: Readonly<Record<string, string>> = {},
): string | null {
  const lower = key.toLowerCase().replace(/-/g, '_');
  const alias = Object.hasOwn(aliases, lower) ? aliases[lower] : undefined;
  if (alias !== undefined) return alias;
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of valid) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  // Beyond this a suggestion is more confusing than helpful ("x" is not a typo of "on").
  const limit = Math.max(1, Math.min(3, Math.floor(lower.length / 3)));
  return best !== null && bestDistance <= limit ? best : null;
}

export function unknownKeyMessage(
  key: string,
  valid: readonly string[],
  aliases: Readonly<Record<string, string>> = {},
): string {
  const hint = closestKey(key, valid, aliases);
  return hint !== null
    ? `unknown key '${key}' (did you mean '${hint}'?)`
    : `unknown key '${key}' (allowed: ${valid.join(', ')})`;
}
