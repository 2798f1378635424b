/**
 * Job output is arbitrary bytes decoded as text and may hold NUL, which PostgreSQL text columns
 * refuse; every store keeps the same U+FFFD in its place so text reads back alike everywhere.
 */
export function storableText(s: string): string {
  return s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
}
