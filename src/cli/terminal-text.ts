/**
 * Text from the server that a worker or a job wrote (a job's log, an error, a worker id, labels, a
 * workflow name) made safe for a terminal. Such text reaches the CLI's output verbatim, and a terminal
 * acts on escape sequences in it: OSC 8 makes hidden links, OSC 0/2 retitles the window, cursor
 * movement (CSI A, H, J, …) overwrites lines already printed (a fake `success`), others reset the
 * terminal or report its state back as input. So every control character goes, with the whole
 * sequence it starts, except:
 *
 * - SGR colour (`ESC [ digits/; m`): job output is often coloured and `weft logs` shows it as is;
 * - newline and tab in multi-line text (logs, a whole error); `terminalLine` makes them spaces.
 *
 * A carriage return alone (a progress bar redrawing its line) becomes a newline, so it cannot draw
 * over the `job | ` prefix the CLI printed.
 */

const ESC = 0x1b;
const BEL = 0x07;

/** Code points a terminal treats as control: C0, DEL and C1 (U+0080..U+009F, which include CSI and OSC). */
function isControl(c: number): boolean {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

/** Index just past a string-type sequence (OSC, DCS, SOS, PM, APC) whose body starts at `i`. */
function skipString(s: string, i: number): number {
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === BEL || c === 0x9c) return i + 1;
    if (c === ESC) return s.charCodeAt(i + 1) === 0x5c /* \ */ ? i + 2 : i;
  }
  // Unterminated (or cut at a chunk boundary): the rest is the sequence's body, never shown.
  return i;
}

/** Index just past a CSI sequence whose parameters start at `i`, and whether it is a plain SGR. */
function skipCsi(s: string, i: number): { end: number; sgr: boolean } {
  const start = i;
  while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x3f) i++;
  const params = s.slice(start, i);
  while (i < s.length && s.charCodeAt(i) >= 0x20 && s.charCodeAt(i) <= 0x2f) i++;
  if (i >= s.length) return { end: i, sgr: false };
  const final = s.charCodeAt(i);
  // Not a final byte: a malformed sequence; drop what was read, keep the character.
  if (final < 0x40 || final > 0x7e) return { end: i, sgr: false };
  // Only digits and `;` (what table widths and `fit` know how to measure), nothing in between.
  const sgr = final === 0x6d /* m */ && i === start + params.length && /^[0-9;]*$/.test(params);
  return { end: i + 1, sgr };
}

/** Multi-line text (a log chunk, a whole error) safe to print: see the module comment. */
export function terminalText(s: string): string {
  // The common case (plain text) costs one scan and no copy.
  if (!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(s)) return s;
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (!isControl(c) || c === 0x0a || c === 0x09) {
      out += s[i];
      i++;
      continue;
    }
    if (c === 0x0d) {
      // \r\n is a newline; a lone \r starts the line again, shown as a new line.
      out += s.charCodeAt(i + 1) === 0x0a ? '' : '\n';
      i++;
      continue;
    }
    if (c === ESC || c === 0x9b || c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f) {
      const introducer = c === ESC ? s[i + 1] : String.fromCharCode(c - 0x40);
      const next = c === ESC ? i + 2 : i + 1;
      if (introducer === '[') {
        const { end, sgr } = skipCsi(s, next);
        if (sgr) out += `\x1b${s.slice(c === ESC ? i + 1 : i, end).replace(/^\x9b/, '[')}`;
        i = end;
        continue;
      }
      if (introducer === ']' || introducer === 'P' || introducer === 'X' || introducer === '^' || introducer === '_') {
        i = skipString(s, next);
        continue;
      }
      if (c === ESC) {
        // ESC, intermediates, then one final character (ESC 7, ESC c, ESC ( B, …); a lone ESC goes alone.
        let j = i + 1;
        while (j < s.length && s.charCodeAt(j) >= 0x20 && s.charCodeAt(j) <= 0x2f) j++;
        i = j < s.length && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x7e ? j + 1 : j;
        continue;
      }
    }
    // Any other control character (BEL, backspace, form feed, a C1 code): dropped.
    i++;
  }
  return out;
}

/** One line of a table or a message: `terminalText`, with newlines and tabs as spaces. */
export function terminalLine(s: string): string {
  return terminalText(s).replace(/[\n\t]/g, ' ');
}
