/** The log viewer's lines, rows of a folded log and search (src/dashboard/log-lines.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogModel, Matches, Rows, lineHtml } from '../../src/dashboard/log-lines.js';
import type { LogChunkView } from '../../src/protocol/wire.js';

let sequence = 0;
function chunk(data: string, stream = 'stdout', timestamp_ms = 1000): LogChunkView {
  return { attempt: 0, sequence: sequence++, stream, data, timestamp_ms } as LogChunkView;
}

test('chunks split into lines as they arrive; `::step` lines become headings; colours go on from line to line', () => {
  const m = new LogModel();
  assert.equal(m.append(chunk('::step 1/2 build\nmaking <it>\n')), 2);
  assert.equal(m.append(chunk('\u001b[31mred\nstill red\n\u001b[0mplain\n')), 3);
  assert.equal(m.append(chunk('a warning', 'stderr')), 1);
  assert.equal(m.append(chunk('::step 2/2 test\ndone\n')), 2);
  assert.deepEqual(
    m.lines.map((l) => [l.stream, l.text, l.step, l.heading]),
    [
      ['step', 'step 1/2: build', 0, true],
      ['stdout', 'making <it>', 0, false],
      ['stdout', 'red', 0, false],
      ['stdout', 'still red', 0, false],
      ['stdout', 'plain', 0, false],
      ['stderr', 'a warning', 0, false],
      ['step', 'step 2/2: test', 1, true],
      ['stdout', 'done', 1, false],
    ],
  );
  assert.deepEqual(
    m.steps.map((s) => [s.label, s.title, s.line]),
    [
      ['1/2', 'build', 0],
      ['2/2', 'test', 6],
    ],
  );
  // A plain line keeps no HTML of its own; it is escaped when drawn.
  assert.equal(m.lines[1]!.html, null);
  assert.equal(lineHtml(m.lines[1]!), 'making &lt;it&gt;');
  assert.equal(lineHtml(m.lines[2]!), '<span class="ansi-red-fg">red</span>');
  // No escape of its own, but the colour of the line before is still on.
  assert.equal(lineHtml(m.lines[3]!), '<span class="ansi-red-fg">still red</span>');
  assert.equal(lineHtml(m.lines[4]!), 'plain');
  assert.equal(m.lines[7]!.html, null);
  assert.equal(m.widest, 'step 1/2: build'.length);
});

test('a folded step hides the lines after its heading; rows and lines map both ways around the folds', () => {
  const m = new LogModel();
  // Lines 0-1 before any step, step 0 at 2 (3-5), step 1 at 6 (7-8), step 2 at 9 (10-12).
  m.append(chunk('a\nb\n::step 1/3 one\nc\nd\ne\n::step 2/3 two\nf\ng\n::step 3/3 three\nh\ni\nj\n'));
  const all = new Rows(m, new Set());
  assert.equal(all.count, 13);
  for (let i = 0; i < 13; i++) assert.equal(all.line(all.row(i)), i);

  const rows = new Rows(m, new Set([2, 0]));
  const shown = [0, 1, 2, 6, 7, 8, 9];
  assert.equal(rows.count, shown.length);
  assert.deepEqual(
    shown.map((_, r) => rows.line(r)),
    shown,
  );
  for (let i = 0; i < 13; i++) assert.equal(rows.row(i), shown.indexOf(i), `line ${i}`);
  // A step that is not there (yet) folds nothing.
  assert.equal(new Rows(m, new Set([7])).count, 13);
  // The last step's lines grow as lines arrive, and stay folded.
  m.append(chunk('k\n'));
  assert.equal(new Rows(m, new Set([2])).count, 10);
});

test('a search finds the lines holding its text, case aside, and reads only the lines that arrived since', () => {
  const m = new LogModel();
  m.append(chunk('one Needle\ntwo\n\u001b[32mneedle\u001b[0m three\n'));
  const found = new Matches(' NEEDLE ').update(m);
  assert.deepEqual(found.lines, [0, 2]);
  m.append(chunk('four\nfive needle\n'));
  assert.deepEqual(found.update(m).lines, [0, 2, 4]);
  assert.deepEqual(found.update(m).lines, [0, 2, 4], 'no line is read twice');
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => found.has(i)), [true, false, true, false, true]);
  assert.deepEqual(new Matches('  ').update(m).lines, []);
});

test('a long log streamed in many chunks keeps every line in order', () => {
  const m = new LogModel();
  for (let c = 0; c < 1000; c++) {
    m.append(chunk(Array.from({ length: 100 }, (_, i) => `line ${c * 100 + i + 1}`).join('\n') + '\n'));
  }
  assert.equal(m.lines.length, 100_000);
  assert.equal(m.lines[99_999]!.text, 'line 100000');
  assert.equal(m.lines[49_999]!.text, 'line 50000');
  assert.deepEqual(new Matches('line 99999').update(m).lines, [99_998]);
});
