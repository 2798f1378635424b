/**
 * The log viewer's lines (README "Dashboard"): chunks split into lines as they arrive, ANSI colours
 * kept per stream, `::step` lines turned into step headings; which lines show while steps are folded;
 * and which lines a search finds. A log may hold 100,000 lines and more, streamed a chunk at a time,
 * so each chunk costs the work of its own lines: lines are appended in place (never copied or split
 * again), the rows of a folded log are arithmetic over its few folded steps, and a search reads each
 * line once however many chunks follow.
 */
import { AnsiUp } from 'ansi_up';
import type { LogChunkView } from '../protocol/wire.js';

/** One line of the log: its text (for search), its HTML (ANSI colours as spans), where it came from. */
export interface LogLine {
  /** stdout, stderr, or `step` for a step's heading. */
  stream: string;
  /**
   * Its HTML, or null when that is its text escaped: a line with no escape sequence while no colour is
   * open, as most are. Such lines are escaped only when drawn, so a long log holds no second copy.
   */
  html: string | null;
  /** The text without escape sequences. */
  text: string;
  timestamp_ms: number;
  /** The step it belongs to (index into `steps`), or -1 before the first step. */
  step: number;
  /** This line is the heading of step `step`. */
  heading: boolean;
}

export interface Step {
  label: string;
  title: string;
  startMs: number;
  /** The index of its heading among the lines. */
  line: number;
}

/** The line a `steps:` job prints before each step (README "Workflow definitions"). */
const STEP_LINE = /^::step (\d+\/\d+) (.*)$/;

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(\u0007|\u001b\\)/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

/** Text as HTML, escaped as ansi_up escapes it. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A line's HTML: what ansi_up made of it, or its text escaped. */
export function lineHtml(l: LogLine): string {
  return l.html ?? escapeHtml(l.text);
}

/**
 * One stream's ANSI state, carried from line to line (a colour opened on one line goes on). A line
 * holding no escape sequence while no colour is open gives null: its HTML is its text, escaped.
 *
 * OSC 8 hyperlinks (http and https only, ansi_up's default) open in a new tab that cannot reach back
 * to the dashboard (`window.opener`) and is not told where it came from. ansi_up escapes every `<` of
 * the log text, so the only `<a ` in its output are the links it made itself.
 */
function htmlConverter(): (raw: string) => string | null {
  const au = new AnsiUp();
  au.use_classes = true;
  let open = false;
  return (raw) => {
    const escapes = raw.includes('\u001b');
    if (!open && !escapes) return null;
    const html = au.ansi_to_html(raw).replaceAll('<a href="', '<a rel="noopener noreferrer" target="_blank" href="');
    if (escapes) {
      // A sequence cut off at the end of the line waits in ansi_up for the next line: not plain until
      // then. Otherwise a plain probe comes back as it went in only while no colour is open (and,
      // holding no escape, changes nothing).
      open = raw.replace(ANSI, '').includes('\u001b') || au.ansi_to_html('x') !== 'x';
    }
    return html;
  };
}

/** A log's lines and steps, appended to as chunks arrive. */
export class LogModel {
  readonly lines: LogLine[] = [];
  readonly steps: Step[] = [];
  /** The longest line's length in characters: how wide the log box scrolls, whichever lines are drawn. */
  widest = 0;
  private readonly converters: Record<string, (raw: string) => string | null> = {};

  /**
   * Appends a chunk's lines; a line never spans chunks. Returns how many lines it added. The work is
   * that of the chunk's own lines, whatever the lines before it.
   */
  append(c: LogChunkView): number {
    const toHtml = (this.converters[c.stream] ??= htmlConverter());
    const parts = c.data.split('\n');
    // A chunk ending in a newline leaves an empty last part, which is no line.
    if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
    for (const raw of parts) {
      const m = c.stream === 'stdout' ? STEP_LINE.exec(raw) : null;
      if (m) {
        this.steps.push({ label: m[1]!, title: m[2]!, startMs: c.timestamp_ms, line: this.lines.length });
        const heading = `step ${m[1]}: ${m[2]}`;
        this.push({ stream: 'step', html: toHtml(heading), text: heading.replace(ANSI, ''), timestamp_ms: c.timestamp_ms, step: this.steps.length - 1, heading: true });
        continue;
      }
      const text = raw.includes('\u001b') ? raw.replace(ANSI, '') : raw;
      this.push({ stream: c.stream, html: toHtml(raw), text, timestamp_ms: c.timestamp_ms, step: this.steps.length - 1, heading: false });
    }
    return parts.length;
  }

  private push(l: LogLine): void {
    this.lines.push(l);
    if (l.text.length > this.widest) this.widest = l.text.length;
  }
}

/**
 * The lines shown, as rows: a folded step hides the lines after its heading up to the next heading
 * (or the end). Lines of a step are contiguous, so the hidden lines are a few ranges, one per folded
 * step, and a row's line (and a line's row) is found by walking those ranges, not the lines.
 */
export class Rows {
  /** Hidden ranges of lines, [start, end), in order. */
  private readonly hidden: Array<readonly [number, number]> = [];
  /** How many rows there are: the lines less the hidden ones. */
  readonly count: number;

  constructor(model: LogModel, folded: ReadonlySet<number>) {
    const { steps, lines } = model;
    let hiddenCount = 0;
    for (const s of [...folded].sort((a, b) => a - b)) {
      const step = steps[s];
      if (!step) continue;
      const start = step.line + 1;
      const end = steps[s + 1]?.line ?? lines.length;
      if (end > start) {
        this.hidden.push([start, end]);
        hiddenCount += end - start;
      }
    }
    this.count = lines.length - hiddenCount;
  }

  /** The line (index) shown at row `row`. */
  line(row: number): number {
    let line = row;
    for (const [start, end] of this.hidden) {
      if (line < start) break;
      line += end - start;
    }
    return line;
  }

  /** The row showing line `line`, or -1 when a folded step hides it. */
  row(line: number): number {
    let row = line;
    for (const [start, end] of this.hidden) {
      if (line < start) break;
      if (line < end) return -1;
      row -= end - start;
    }
    return row;
  }
}

/**
 * The lines holding a text, case aside, in order. `update` reads only the lines appended since it
 * last ran, so a search kept open while a long log streams reads each line once.
 */
export class Matches {
  readonly lines: number[] = [];
  private read = 0;
  private readonly needle: string;

  constructor(query: string) {
    this.needle = query.trim().toLowerCase();
  }

  update(model: LogModel): this {
    if (this.needle === '') return this;
    const { lines } = model;
    for (; this.read < lines.length; this.read++) {
      if (lines[this.read]!.text.toLowerCase().includes(this.needle)) this.lines.push(this.read);
    }
    return this;
  }

  /** Whether line `line` matches: a binary search of the matches, per line drawn. */
  has(line: number): boolean {
    let lo = 0;
    let hi = this.lines.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.lines[mid]!;
      if (v === line) return true;
      if (v < line) lo = mid + 1;
      else hi = mid;
    }
    return false;
  }
}
