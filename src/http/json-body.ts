import { WeftError } from '../protocol/errors.js';

/**
 * How deep arrays and objects may nest in a request body (README "Limits"). JSON.parse itself copes
 * with any depth, but recursive walks after it (hashing a definition, serialising an answer) do not.
 */
export const MAX_BODY_DEPTH = 64;

// Fatal: a byte sequence that is not UTF-8 is refused rather than silently replaced by U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A request body as JSON: `undefined` for an empty one (several worker libraries send a JSON
 * content type with no body), else the parsed value. Throws `invalid_json` naming the problem.
 */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    const at = validPrefixLength(body);
    const where = at === body.length ? 'it ends in the middle of a character' : `malformed at byte offset ${at}`;
    throw new WeftError('invalid_json', `request body is not valid UTF-8 (${where}); JSON must be sent as UTF-8`);
  }
  // A scan, not a trimmed copy of the whole body.
  if (!/\S/.test(text)) return undefined;
  if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
    throw new WeftError('invalid_json', `request body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`);
  }
  try {
    return JSON.parse(withoutLoneSurrogates(text));
  } catch (err) {
    throw new WeftError('invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * One pass over the text, skipping string contents; brackets inside strings do not count. Run before
 * JSON.parse, so a text that is not JSON at all may be judged by depth first, which is still a 400.
 */
function nestsDeeperThan(text: string, max: number): boolean {
  // Each level takes at least one character.
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: jump to its closing quote (indexOf is much faster than stepping), one that an odd
      // run of backslashes does not escape.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return false;
        let backslashes = 0;
        while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
        i = q;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
// Left to right, an escaped backslash is consumed whole, so `\\ud800` (a backslash, then text) is not an escape.
const ESCAPES = /\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g;

/**
 * `"\ud800"` is valid JSON but no character: a UTF-16 surrogate escaped without its pair. Neither store
 * can keep it as text (PostgreSQL refuses it, SQLite mangles it), so it is read as U+FFFD, the same
 * replacement job output gets for NUL (README "Limits"). Bodies without surrogate escapes skip this.
 */
function withoutLoneSurrogates(text: string): string {
  if (text.indexOf('\\u') === -1 || !SURROGATE_ESCAPE.test(text)) return text;
  return text.replace(ESCAPES, (m) => (m.length === 6 ? '\\ufffd' : m));
}

/** Only on the error path: how many leading bytes decode (or could, given more), to point at the fault. */
function validPrefixLength(body: Buffer): number {
  let lo = 0;
  let hi = body.length;
  // Bisection works because a prefix that holds a malformed sequence makes every longer one fail too.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (decodesUpTo(body, mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function decodesUpTo(body: Buffer, end: number): boolean {
  const stream = new TextDecoder('utf-8', { fatal: true });
  try {
    // stream: true lets a sequence cut at `end` wait for bytes that will not come, instead of failing.
    stream.decode(body.subarray(0, end), { stream: true });
    return true;
  } catch {
    return false;
  }
}
