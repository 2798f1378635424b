/**
 * The job log viewer (README "Dashboard") in a real Chromium against a real `weft server`; the test
 * plays the worker over HTTP and pushes the log itself: numbered lines with their own URLs, search,
 * timestamps, steps that fold with their state and time, the raw download (`…/logs?format=text`), the
 * live tail's Follow switch and its "new lines below" cue, and the command folded; and all of that on a
 * log of 100,000 lines, of which only the rows in and near view are drawn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { request, until } from '../helpers/http.js';

const WAIT = { timeout: 60_000 };

declare const document: any;

const stack = dashboardStack('weft-dash-log-');

let sequence = 0;
async function push(leaseId: string, data: string, stream = 'stdout', at = Date.now()): Promise<void> {
  const r = await stack.api.post(`/api/jobs/${leaseId}/logs`, { chunks: [{ sequence: sequence++, stream, data, timestamp_ms: at }] });
  assert.equal(r.status, 200, r.text);
}

const LOG = [
  '::step 1/2 build\n',
  ...Array.from({ length: 30 }, (_, i) => `building part ${i + 1}\n`),
  'the needle is here\n',
  '::step 2/2 test\n',
  'all tests passed\n',
];

test('lines are numbered and linkable, searchable, timed on demand; steps fold with their state and time; the raw log downloads', async () => {
  await stack.api.createWorkflow({ id: 'logs', jobs: { build: { steps: [{ run: 'make' }, { run: 'make test' }], labels: ['logs'] } } });
  await stack.api.run('logs');
  const c = await until(() => stack.api.claim('test-worker', ['logs']), 'the job to be claimable');
  sequence = 0;
  const t0 = Date.UTC(2026, 0, 2, 3, 4, 5, 600);
  for (const [i, line] of LOG.entries()) await push(c.lease.lease_id, line, 'stdout', t0 + i * 100);
  await push(c.lease.lease_id, 'a warning\n', 'stderr', t0 + LOG.length * 100);
  assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);

  // The raw log, as a file.
  const raw = await request('GET', `${stack.url}/api/workflows/logs/jobs/build/logs?format=text`);
  assert.equal(raw.status, 200);
  assert.match(raw.headers.get('content-type') ?? '', /^text\/plain; charset=utf-8/);
  assert.equal(raw.headers.get('content-disposition'), 'attachment; filename="logs-build-run1-attempt1.log"');
  assert.equal(raw.text, LOG.join('') + 'a warning\n');

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/logs/jobs/build`);
  const log = page.getByRole('log');
  await log.getByText('all tests passed').waitFor(WAIT);
  // The command is folded; the log is what one reads.
  assert.equal(await page.locator('details.command-fold').getAttribute('open'), null);
  // Every line has a number, step headings included: 35 in all.
  assert.equal(await log.locator('.ln').count(), 35);
  assert.equal(await log.locator('[data-line="32"] .text').textContent(), 'the needle is here');

  // Steps: each heading says how it went and how long it took; one folds away.
  const step1 = log.locator('.chunk.step', { hasText: 'step 1/2: build' });
  assert.match((await step1.textContent()) ?? '', /success.*3\.2s/);
  assert.match((await log.locator('.chunk.step', { hasText: 'step 2/2: test' }).textContent()) ?? '', /success/);
  await step1.getByRole('button').click();
  // A folded step hides its lines (with the next render).
  await log.getByText('building part 7').waitFor({ state: 'detached', ...WAIT });
  assert.equal(await log.getByText('all tests passed').count(), 1, 'the other step stays open');
  await step1.getByRole('button').click();
  await log.getByText('building part 7').waitFor(WAIT);

  // Search: a match count, the match marked, Enter and the arrows walk the matches.
  const tools = page.getByRole('toolbar', { name: 'Log tools' });
  const search = tools.getByRole('searchbox', { name: 'Search the log' });
  await search.fill('needle');
  await tools.getByText('1 of 1', { exact: true }).waitFor(WAIT);
  assert.equal(await log.locator('.log-line.current .text').textContent(), 'the needle is here');
  await search.fill('PART 1');
  await tools.getByText('1 of 11', { exact: true }).waitFor(WAIT);
  await search.press('Enter');
  await tools.getByText('2 of 11', { exact: true }).waitFor(WAIT);
  assert.equal(await log.locator('.log-line.current .text').textContent(), 'building part 10');
  await page.getByRole('button', { name: 'Previous match' }).click();
  await tools.getByText('1 of 11', { exact: true }).waitFor(WAIT);
  await search.fill('');

  // Timestamps on demand, as each chunk was stamped.
  await page.getByLabel('Timestamps').check();
  const stamp = (await log.locator('[data-line="2"] .ts').textContent()) ?? '';
  const expected = new Date(t0 + 100);
  assert.equal(stamp.slice(-4), `.${String(expected.getMilliseconds()).padStart(3, '0')}`);
  assert.match(stamp, /^\d\d:\d\d:\d\d\.\d{3}$/);

  // A line's number is its address: following it marks and shows that line.
  await log.getByRole('link', { name: 'Line 20', exact: true }).click();
  await page.waitForFunction(() => document.location.hash.endsWith('&line=20'), undefined, WAIT);
  await page.reload();
  await log.locator('.log-line.current[data-line="20"]').waitFor(WAIT);

  // Download: the same file as the API gives.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()]);
  assert.equal(download.suggestedFilename(), 'logs-build-run1-attempt1.log');
  assert.equal(fs.readFileSync((await download.path())!, 'utf8'), raw.text);
  await screenshot(page, 'log-viewer');
  assert.deepEqual(errors, []);
});

test('the live tail follows until the reader scrolls up; then new lines below are announced and one click follows again', async () => {
  await stack.api.createWorkflow({ id: 'tail', jobs: { talk: { run: 'true', labels: ['tail'] } } });
  await stack.api.run('tail');
  const c = await until(() => stack.api.claim('test-worker', ['tail']), 'the job to be claimable');
  sequence = 0;
  for (let i = 1; i <= 80; i++) await push(c.lease.lease_id, `line ${i}\n`);
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/tail/jobs/talk`);
  const log = page.getByRole('log');
  await log.getByText('line 80').waitFor(WAIT);
  const follow = page.getByLabel('Follow');
  assert.equal(await follow.isChecked(), true);
  await page.waitForFunction(() => {
    const el = document.querySelector('[role=log]');
    return el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  }, undefined, WAIT);

  // The reader scrolls up: following stops, and what arrives is announced instead of scrolled to.
  await log.evaluate((el: any) => (el.scrollTop = 0));
  await until(async () => !(await follow.isChecked()), 'Follow to turn off once the reader scrolled up');
  await push(c.lease.lease_id, 'line 81\n');
  const cue = page.getByRole('button', { name: 'New lines below ↓' });
  await cue.waitFor(WAIT);
  assert.equal(await log.evaluate((el: any) => el.scrollTop), 0, 'the reader stays where they were');
  await cue.click();
  await until(async () => await follow.isChecked(), 'Follow to turn on again');
  await page.waitForFunction(() => {
    const el = document.querySelector('[role=log]');
    return el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  }, undefined, WAIT);
  await cue.waitFor({ state: 'detached', ...WAIT });
  assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.deepEqual(errors, []);
});

// A long log (README "Dashboard": drawn a window at a time). Line n says its own number, so a row
// drawn says which line it is; three steps, a coloured line, a stderr line and two needles near the end.
const LONG = 100_000;
const STEP_AT = { 1: 'prepare', 50_001: 'build', 99_001: 'report' } as Record<number, string>;
function longLine(n: number): { stream: string; text: string } {
  if (STEP_AT[n]) return { stream: 'stdout', text: `::step ${Object.keys(STEP_AT).indexOf(String(n)) + 1}/3 ${STEP_AT[n]}` };
  const step = n < 50_001 ? 'prepare' : n < 99_001 ? 'build' : 'report';
  if (n === 99_700 || n === 99_950) return { stream: 'stdout', text: `line ${n} of ${step}: the needle` };
  if (n === 99_500) return { stream: 'stdout', text: `line ${n} of ${step}, \u001b[32min green\u001b[0m` };
  if (n === 99_501) return { stream: 'stderr', text: `line ${n} of ${step}, a warning` };
  return { stream: 'stdout', text: `line ${n} of ${step}` };
}

/** Pushes lines `from`..`to` as a worker would: chunks of up to 5,000 lines of one stream, a few chunks to a request. */
async function pushLines(leaseId: string, from: number, to: number, line: (n: number) => { stream: string; text: string } = longLine): Promise<void> {
  let chunks: Array<{ sequence: number; stream: string; data: string; timestamp_ms: number }> = [];
  let bytes = 0;
  const send = async () => {
    if (chunks.length === 0) return;
    const r = await stack.api.post(`/api/jobs/${leaseId}/logs`, { chunks });
    assert.equal(r.status, 200, r.text);
    chunks = [];
    bytes = 0;
  };
  let n = from;
  while (n <= to) {
    const { stream } = line(n);
    let data = '';
    let count = 0;
    for (; n <= to && count < 5000 && line(n).stream === stream; n++, count++) data += `${line(n).text}\n`;
    chunks.push({ sequence: sequence++, stream, data, timestamp_ms: Date.now() });
    bytes += data.length;
    if (bytes > 400_000) await send();
  }
  await send();
}

/** The long log's job, made once and shared by the tests that read it. */
let longJob: Promise<void> | undefined;
function longLogJob(): Promise<void> {
  longJob ??= (async () => {
    await stack.api.createWorkflow({ id: 'long', jobs: { print: { run: 'true', labels: ['long'] } } });
    await stack.api.run('long');
    const c = await until(() => stack.api.claim('test-worker', ['long']), 'the job to be claimable');
    sequence = 0;
    await pushLines(c.lease.lease_id, 1, LONG);
    assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  })();
  return longJob;
}

/** Waits until line `n` is drawn and wholly inside the log box's visible part. */
async function lineInView(page: Page, n: number): Promise<void> {
  await page.waitForFunction(
    (line: number) => {
      const box = document.querySelector('[role=log]');
      const row = box?.querySelector(`[data-line="${line}"]`);
      if (!row) return false;
      const b = box.getBoundingClientRect();
      const r = row.getBoundingClientRect();
      return r.top >= b.top && r.bottom <= b.bottom;
    },
    n,
    WAIT,
  );
}

const drawnRows = (page: Page) => page.locator('[role=log] .log-line').count();

test('a log of 100,000 lines draws only the rows in and near view, and says it has 100,000 lines', async (t) => {
  await longLogJob();
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/long/jobs/print`);
  const log = page.getByRole('log');
  await page.getByRole('toolbar', { name: 'Log tools' }).getByText(`${LONG} lines`, { exact: true }).waitFor(WAIT);
  // The log opens at its end, as it follows the tail: the last line is in view with its number.
  await lineInView(page, LONG);
  assert.equal(await log.locator(`[data-line="${LONG}"] .ln`).textContent(), String(LONG));
  assert.equal(await log.locator(`[data-line="${LONG}"] .text`).textContent(), `line ${LONG} of report`);
  const drawn = await drawnRows(page);
  t.diagnostic(`rows drawn at the end of ${LONG} lines: ${drawn}`);
  assert.ok(drawn > 10 && drawn < 1000, `${drawn} rows drawn`);
  // The scroll height is that of every line: the rows drawn are placed where they belong.
  const { scrollHeight, row } = await log.evaluate((el: any) => ({ scrollHeight: el.scrollHeight, row: el.querySelector('.log-line').getBoundingClientRect().height }));
  assert.ok(scrollHeight >= LONG * row, `scroll height ${scrollHeight} for rows of ${row} px`);

  // Scrolled to the top: the first lines are drawn instead, and as few.
  await log.evaluate((el: any) => (el.scrollTop = 0));
  await lineInView(page, 1);
  await lineInView(page, 2);
  assert.equal(await log.locator('[data-line="2"] .text').textContent(), 'line 2 of prepare');
  assert.equal(await log.locator(`[data-line="${LONG}"]`).count(), 0);
  const atTop = await drawnRows(page);
  t.diagnostic(`rows drawn at the top: ${atTop}`);
  assert.ok(atTop < 1000, `${atTop} rows drawn`);
  assert.deepEqual(errors, []);
});

test('a line far down a long log opens from its address, drawn, marked and in view, with its colours and stream', async (t) => {
  await longLogJob();
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/long/runs/1/jobs/print?attempt=0&line=99500`);
  const log = page.getByRole('log');
  await log.locator('.log-line.current[data-line="99500"]').waitFor(WAIT);
  await lineInView(page, 99_500);
  assert.equal(await log.locator('[data-line="99500"] .ansi-green-fg').textContent(), 'in green');
  assert.equal(await log.locator('[data-line="99500"] .text').textContent(), 'line 99500 of report, in green');
  assert.equal(await log.locator('[data-line="99501"]').getAttribute('data-stream'), 'stderr');
  assert.equal(await log.locator('.log-line.current').count(), 1);
  // The rows drawn are text like any other: selected, they read as their lines, numbers aside.
  const selected = await log.evaluate((el: any) => {
    const range = document.createRange();
    range.setStartBefore(el.querySelector('[data-line="99502"] .text'));
    range.setEndAfter(el.querySelector('[data-line="99504"] .text'));
    const selection = document.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return selection.toString();
  });
  assert.equal(selected.trim(), ['line 99502 of report', 'line 99503 of report', 'line 99504 of report'].join('\n'));
  const drawn = await drawnRows(page);
  t.diagnostic(`rows drawn around line 99500: ${drawn}`);
  assert.ok(drawn < 1000, `${drawn} rows drawn`);
  await log.scrollIntoViewIfNeeded();
  await screenshot(page, 'log-viewer-long');
  assert.deepEqual(errors, []);
});

/** The long log's panel, opened (so drawn to its last line) and scrolled back to the top. */
async function openLongLogAtTop() {
  await longLogJob();
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/long/jobs/print`);
  const log = page.getByRole('log');
  await lineInView(page, LONG);
  await log.evaluate((el: any) => (el.scrollTop = 0));
  return { page, errors, log };
}

test('search counts matches over every line of a long log; next and previous bring each into view, marked', async () => {
  const { page, errors, log } = await openLongLogAtTop();
  await lineInView(page, 1);
  const tools = page.getByRole('toolbar', { name: 'Log tools' });
  await tools.getByRole('searchbox', { name: 'Search the log' }).fill('NEEDLE');
  await tools.getByText('1 of 2', { exact: true }).waitFor(WAIT);
  await lineInView(page, 99_700);
  assert.equal(await log.locator('.log-line.current').getAttribute('data-line'), '99700');
  // The second match is far enough below not to be drawn yet.
  assert.equal(await log.locator('[data-line="99950"]').count(), 0);
  await page.getByRole('button', { name: 'Next match' }).click();
  await tools.getByText('2 of 2', { exact: true }).waitFor(WAIT);
  await lineInView(page, 99_950);
  assert.equal(await log.locator('.log-line.current').getAttribute('data-line'), '99950');
  assert.equal(await log.locator('.log-line.current .text').textContent(), 'line 99950 of report: the needle');
  assert.match((await log.locator('[data-line="99950"]').getAttribute('class')) ?? '', /\bmatch\b/);
  await page.getByRole('button', { name: 'Previous match' }).click();
  await tools.getByText('1 of 2', { exact: true }).waitFor(WAIT);
  await lineInView(page, 99_700);
  assert.equal(await log.locator('.log-line.current').getAttribute('data-line'), '99700');
  assert.deepEqual(errors, []);
});

test('folding a step of a long log hides its lines; the lines after it keep their numbers and places', async () => {
  const { page, errors, log } = await openLongLogAtTop();
  await lineInView(page, 2);
  const before = await log.evaluate((el: any) => el.scrollHeight);
  const row = await log.locator('[data-line="1"]').evaluate((el: any) => el.getBoundingClientRect().height);

  // Step 1 (lines 2 to 50,000) folds away: step 2's heading comes right under step 1's.
  await log.locator('[data-line="1"]').getByRole('button').click();
  await log.locator('[data-line="2"]').waitFor({ state: 'detached', ...WAIT });
  await lineInView(page, 50_001);
  const top = (n: number) => log.locator(`[data-line="${n}"]`).evaluate((el: any) => el.getBoundingClientRect().top);
  assert.equal((await top(50_001)) - (await top(1)), row);
  assert.equal((await top(50_002)) - (await top(50_001)), row);
  assert.equal(await log.locator('[data-line="50002"] .text').textContent(), 'line 50002 of build');
  assert.equal(await log.locator('[data-line="50002"] .ln').textContent(), '50002');
  assert.equal(before - (await log.evaluate((el: any) => el.scrollHeight)), 49_999 * row, 'the folded lines take no room');

  // The end is where it belongs, numbered as before.
  await log.evaluate((el: any) => (el.scrollTop = el.scrollHeight));
  await lineInView(page, LONG);
  assert.equal(await log.locator(`[data-line="${LONG}"] .text`).textContent(), `line ${LONG} of report`);

  // A line in a folded step, searched for, opens the step and is shown.
  const tools = page.getByRole('toolbar', { name: 'Log tools' });
  await tools.getByRole('searchbox', { name: 'Search the log' }).fill('line 25000 of');
  await tools.getByText('1 of 1', { exact: true }).waitFor(WAIT);
  await lineInView(page, 25_000);
  assert.equal(await log.locator('.log-line.current').getAttribute('data-line'), '25000');
  assert.equal(await log.evaluate((el: any) => el.scrollHeight), before, 'every line takes its room again');
  await log.evaluate((el: any) => (el.scrollTop = 0));
  assert.equal(await log.locator('[data-line="1"] button').getAttribute('aria-expanded'), 'true');
  assert.deepEqual(errors, []);
});

test('following a long live log keeps its newest line in view; scrolled up, new lines are announced below', async (t) => {
  await stack.api.createWorkflow({ id: 'longtail', jobs: { talk: { run: 'true', labels: ['longtail'] } } });
  await stack.api.run('longtail');
  const c = await until(() => stack.api.claim('test-worker', ['longtail']), 'the job to be claimable');
  sequence = 0;
  const line = (n: number) => ({ stream: 'stdout', text: `tail line ${n}` });
  await pushLines(c.lease.lease_id, 1, 30_000, line);
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/longtail/jobs/talk`);
  const log = page.getByRole('log');
  await lineInView(page, 30_000);
  const follow = page.getByLabel('Follow');
  assert.equal(await follow.isChecked(), true);

  // Lines keep arriving, a chunk at a time: the newest stays in view.
  for (let n = 30_001; n <= 40_000; n += 1000) await pushLines(c.lease.lease_id, n, n + 999, line);
  await lineInView(page, 40_000);
  assert.equal(await log.locator('[data-line="40000"] .text').textContent(), 'tail line 40000');
  assert.equal(await follow.isChecked(), true);
  const drawn = await drawnRows(page);
  t.diagnostic(`rows drawn while following 40000 lines: ${drawn}`);
  assert.ok(drawn < 1000, `${drawn} rows drawn`);

  // The reader scrolls to the top: following stops; what arrives is announced, not scrolled to.
  await log.evaluate((el: any) => (el.scrollTop = 0));
  await until(async () => !(await follow.isChecked()), 'Follow to turn off once the reader scrolled up');
  await pushLines(c.lease.lease_id, 40_001, 41_000, line);
  const cue = page.getByRole('button', { name: 'New lines below ↓' });
  await cue.waitFor(WAIT);
  await page.getByRole('toolbar', { name: 'Log tools' }).getByText('41000 lines', { exact: true }).waitFor(WAIT);
  assert.equal(await log.evaluate((el: any) => el.scrollTop), 0, 'the reader stays where they were');
  await lineInView(page, 1);
  await cue.click();
  await lineInView(page, 41_000);
  assert.equal(await follow.isChecked(), true);
  await cue.waitFor({ state: 'detached', ...WAIT });
  assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.deepEqual(errors, []);
});
