/**
 * Hiding secret values in what a job sends back (README "Secrets"): log text, outputs, the error of
 * a failure. Each secret is hidden as written and in its base64 forms (a job that runs `base64` on
 * it must not print it either), and each line of a value of several lines on its own, as a shell
 * prints such a value line by line. Every form found is replaced by `***`.
 */

export const MASK = '***';

/** Forms shorter than this are not hidden on their own: a 1-character form would blank out half a log. */
const MIN_FORM_CHARS = 3;
/** A base64 piece this short is common in any base64 text; the value's own form still hides it. */
const MIN_BASE64_CHARS = 6;

/**
 * Everything to hide for `values`: each value, each of its lines, and the base64 text of each at the
 * three alignments it can take inside longer base64 text (only the characters that depend on the
 * value alone), longest first so that a longer form is hidden whole before a shorter one inside it.
 */
export function maskForms(values: Iterable<string>): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    if (value.length === 0) continue;
    for (const text of [value, ...value.split(/\r?\n/)]) {
      if (text.trim().length < MIN_FORM_CHARS) continue;
      forms.add(text);
      for (const b64 of base64Forms(text)) if (b64.length >= MIN_BASE64_CHARS) forms.add(b64);
    }
  }
  return [...forms].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
}

/**
 * `text` as it appears inside base64 output that starts 0, 1 or 2 bytes before it: base64 turns 3
 * bytes into 4 characters, so the characters that mix in a neighbouring byte are left off.
 */
function base64Forms(text: string): string[] {
  const bytes = Buffer.from(text, 'utf8');
  const out: string[] = [];
  for (const lead of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(lead), bytes]).toString('base64');
    const from = Math.ceil((lead * 8) / 6);
    const to = Math.floor(((lead + bytes.length) * 8) / 6);
    out.push(encoded.slice(from, to));
    // base64url, which tokens and JWTs use.
    out.push(encoded.slice(from, to).replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** `text` with every form replaced by `***`. */
export function maskText(text: string, forms: readonly string[]): string {
  if (forms.length === 0 || text.length === 0) return text;
  let out = text;
  for (const f of forms) if (out.includes(f)) out = out.split(f).join(MASK);
  return out;
}

/**
 * A form that starts in `before` (text already stored) and ends in `after` (the text now arriving):
 * answers both with the form's pieces hidden (its part in `before` replaced by `***`, its part in
 * `after` removed), or null when no form crosses the seam. Each side is already masked on its own.
 */
export function maskAcrossSeam(before: string, after: string, forms: readonly string[]): { before: string; after: string } | null {
  let cut: { start: number; end: number } | null = null;
  for (const f of forms) {
    // Only a window of f.length - 1 characters each side can hold a form that crosses the seam.
    const from = Math.max(0, before.length - f.length + 1);
    const joined = before.slice(from) + after.slice(0, f.length - 1);
    for (let i = joined.indexOf(f); i !== -1; i = joined.indexOf(f, i + 1)) {
      const start = from + i;
      const end = start + f.length;
      if (start < before.length && end > before.length && (cut === null || start < cut.start)) cut = { start, end };
    }
  }
  if (cut === null) return null;
  return { before: before.slice(0, cut.start) + MASK, after: after.slice(cut.end - before.length) };
}
