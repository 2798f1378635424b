/**
 * Job output is arbitrary bytes decoded as text and may hold NUL, which PostgreSQL text columns
 * refuse; every store keeps the same U+FFFD in its place so text reads back alike everywhere.
 */
export function storableText(s: string): string {
  return s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
}

/**
 * Outputs become environment variables of the jobs downstream, where NUL cannot appear either:
 * keys and values get the same replacement as other job output.
 */
export function storableOutputs(outputs: Record<string, string>): Record<string, string> {
  let clean = true;
  for (const [k, v] of Object.entries(outputs)) if (k.includes('\u0000') || v.includes('\u0000')) clean = false;
  if (clean) return outputs;
  // fromEntries defines own properties, so a key like `__proto__` stays an ordinary output.
  return Object.fromEntries(Object.entries(outputs).map(([k, v]) => [storableText(k), storableText(v)]));
}
