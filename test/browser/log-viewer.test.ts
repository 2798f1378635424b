/**
 * The job log viewer (README "Dashboard") in a real Chromium against a real `weft server`; the test
 * plays the worker over HTTP and pushes the log itself: numbered lines with their own URLs, search,
 * timestamps, steps that fold with their state and time, the raw download (`…/logs?format=text`), the
 * live tail's Follow switch and its "new lines below" cue, and the command folded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
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
