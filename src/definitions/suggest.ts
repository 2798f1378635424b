/**
 * "Did you mean" hints for unknown keys, so typos such as `need:` are caught with a fix attached
 * rather than silently ignored.
 */

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[b.length]!;
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
