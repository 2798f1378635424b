/**
 * The dashboard stays true to the server while things change under it, in a real Chromium against a
 * real `weft server`; the test plays the worker over HTTP (jobs carry a label no other worker has),
 * so it decides exactly when each change happens:
 * - a run that starts and moves on while the page's read of it is slow to arrive ends up shown as it
 *   is, not as the read saw it;
 * - a job's live log through a retry shows only the attempt it is labelled with;
 * - the definition view does not widen the page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { until } from '../helpers/http.js';

const WAIT = { timeout: 60_000 };
/** How long a status answer is held back on its way to the page while the page hears events. */
const SLOW_STATUS_MS = 800;

declare const document: any;
declare const window: any;

const stack = dashboardStack('weft-dash-live-');

/** Claims the next job of label `label` as the test's own worker; fails the test if none comes. */
async function claimNext(label: string, worker = 'test-worker') {
  return until(() => stack.api.claim(worker, [label]), `a job with label ${label} to be claimable`);
}

async function complete(leaseId: string): Promise<void> {
  const r = await stack.api.post(`/api/jobs/${leaseId}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

test('a run that moves on while the page reads its status is shown as it ended, not as the read saw it', async () => {
  await stack.api.createWorkflow({ id: 'slowread', jobs: { a: { run: 'true', labels: ['slowread'] }, b: { needs: 'a', run: 'true', labels: ['slowread'] } } });
  // A first run, so that the page follows a run that the next one replaces.
  await stack.api.run('slowread');
  for (let i = 0; i < 2; i++) await complete((await claimNext('slowread')).lease.lease_id);
  await stack.api.settled('slowread');

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/slowread`);
  await page.locator('[data-job-id="b"][data-state="success"]').waitFor(WAIT);
  // The test decides when the server answers the page's next status read and when that answer
  // reaches the page, so that the document it brings is older than events the page gets meanwhile.
  let take!: () => void;
  let deliver!: () => void;
  const mayTake = new Promise<void>((r) => (take = r));
  const mayDeliver = new Promise<void>((r) => (deliver = r));
  let taken!: () => void;
  const wasTaken = new Promise<void>((r) => (taken = r));
  await page.route('**/api/workflows/slowread/status', async (route) => {
    await mayTake;
    const response = await route.fetch();
    taken();
    await mayDeliver;
    await route.fulfill({ response });
  });
  await stack.api.run('slowread');
  const a = await claimNext('slowread');
  // The read the new run made the page send is answered now: `a` running.
  take();
  await wasTaken;
  // `a` ends and `b` is queued while that answer is on its way; the page hears it as events.
  await complete(a.lease.lease_id);
  // Held back as long as a slow network would (SLOW_STATUS_MS), so the events arrive first.
  await new Promise((r) => setTimeout(r, SLOW_STATUS_MS));
  deliver();
  const b = await claimNext('slowread');
  await complete(b.lease.lease_id);
  assert.equal((await stack.api.settled('slowread')).status, 'success');

  await page.waitForFunction(
    () =>
      document.querySelector('select')?.value === '2' &&
      document.querySelector('[data-job-id="a"]')?.getAttribute('data-state') === 'success' &&
      document.querySelector('[data-job-id="b"]')?.getAttribute('data-state') === 'success',
    undefined,
    WAIT,
  );
  // The buttons follow: the run is over, so Run is offered again and Cancel is not.
  await page.waitForFunction(
    () => {
      const buttons = [...document.querySelectorAll('button')] as any[];
      const run = buttons.find((x) => x.textContent.trim() === 'Run');
      const cancel = buttons.find((x) => x.textContent.trim() === 'Cancel');
      return run && !run.disabled && (!cancel || cancel.disabled);
    },
    undefined,
    WAIT,
  );
  await screenshot(page, 'live-slow-status');
  assert.deepEqual(errors, []);
});

test("a job's live log through a retry shows only the attempt it is labelled with", async () => {
  await stack.api.createWorkflow({
    id: 'retrylog',
    jobs: { flaky: { run: 'true', labels: ['retrylog'], retries: 1, backoff: { fixed: { delay_secs: 1 } } } },
  });
  await stack.api.run('retrylog');
  const first = await claimNext('retrylog');
  const pushed = await stack.api.post(`/api/jobs/${first.lease.lease_id}/logs`, {
    chunks: [{ sequence: 0, stream: 'stdout', data: 'first attempt says hello\n', timestamp_ms: Date.now() }],
  });
  assert.equal(pushed.status, 200, pushed.text);

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/retrylog/jobs/flaky`);
  const log = page.getByRole('log');
  await page.waitForFunction(() => document.querySelector('[role=log]')?.textContent?.includes('first attempt says hello'), undefined, WAIT);

  // The attempt fails and is retried: the panel now shows attempt 2, whose log is empty until it runs.
  const failed = await stack.api.post(`/api/jobs/${first.lease.lease_id}/fail`, { error: 'flaky', retryable: true });
  assert.equal(failed.status, 200, failed.text);
  await page.getByRole('log', { name: 'Log of flaky, attempt 2' }).waitFor(WAIT);
  const second = await claimNext('retrylog');
  assert.equal(second.job.attempt, 1);
  await stack.api.post(`/api/jobs/${second.lease.lease_id}/logs`, {
    chunks: [{ sequence: 0, stream: 'stdout', data: 'second attempt says hello\n', timestamp_ms: Date.now() }],
  });
  await page.waitForFunction(() => document.querySelector('[role=log]')?.textContent?.includes('second attempt says hello'), undefined, WAIT);
  assert.equal(await log.getAttribute('aria-label'), 'Log of flaky, attempt 2');
  // The node says it is a retry; a first try says nothing of attempts.
  await page.locator('[data-job-id="flaky"] .state', { hasText: 'try 2/2' }).waitFor(WAIT);
  assert.doesNotMatch((await log.textContent()) ?? '', /first attempt/, "attempt 1's lines are not shown under attempt 2");
  await complete(second.lease.lease_id);

  // A reload shows the same: the history of attempt 2 only.
  await page.reload();
  await page.waitForFunction(() => document.querySelector('[role=log]')?.textContent?.includes('second attempt says hello'), undefined, WAIT);
  assert.doesNotMatch((await page.getByRole('log').textContent()) ?? '', /first attempt/);
  assert.deepEqual(errors, []);
});

test('the definition view and the job panel do not widen the page, on a desktop or a phone', async () => {
  const long = `echo ${'a-very-long-argument-'.repeat(30)}`;
  await stack.api.createWorkflow({ id: 'wide', jobs: { lint: { run: long, labels: ['wide'] }, build: { needs: 'lint', run: long, labels: ['wide'] } } });
  await stack.api.run('wide');
  await complete((await claimNext('wide')).lease.lease_id);
  for (const [width, height] of [[1440, 900], [390, 844]] as const) {
    const { page, errors } = await stack.newPage(width, height);
    await page.goto(`${stack.url}/#/workflows/wide/definition`);
    await page.getByRole('region', { name: 'Definition' }).locator('pre', { hasText: 'a-very-long-argument' }).waitFor(WAIT);
    const sizes = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    assert.ok(sizes[0]! <= sizes[1]!, `the definition view is ${sizes[0]} px wide in a ${sizes[1]} px window`);
    await page.goto(`${stack.url}/#/workflows/wide/jobs/build`);
    // Upstream outputs name each need apart from its outputs.
    const upstream = page.locator('.upstream', { hasText: 'lint' });
    await upstream.waitFor(WAIT);
    assert.match((await upstream.textContent()) ?? '', /^lint: none$/);
    await screenshot(page, `live-wide-${width}`);
    assert.deepEqual(errors, []);
  }
});

test('a page opened while the API is unreachable says so, and recovers by itself once it answers again', async () => {
  await stack.api.createWorkflow({ id: 'outage', jobs: { only: { run: 'true', labels: ['outage'] } } });
  for (const [path, ready] of [
    ['#/', 'a[href="#/workflows/outage"]'],
    ['#/workflows/outage', '[data-job-id="only"]'],
  ] as const) {
    const { page, errors } = await stack.newPage();
    // Every API call fails as with the server away (the page itself still loads).
    await page.route('**/api/**', (route) => route.abort('connectionrefused'));
    await page.goto(`${stack.url}/${path}`);
    await page.getByRole('alert').waitFor(WAIT);
    assert.match((await page.getByRole('alert').textContent()) ?? '', /fetch/i, `${path}: the error is shown`);
    // The API answers again: the page reads again by itself, with no reload and no click.
    await page.unroute('**/api/**');
    await page.locator(ready).first().waitFor(WAIT);
    assert.equal(await page.getByRole('alert').count(), 0, `${path}: the error is gone once the page could read`);
    // The browser logs each refused request itself; nothing else went wrong in the page.
    assert.deepEqual(errors.filter((e) => !/ERR_CONNECTION_REFUSED|Failed to fetch|Failed to load resource/.test(e)), []);
    await page.context().close();
  }
});

test('on a phone the workflows list fits the screen with Run on it, and a job panel goes under the graph instead of squeezing it', async () => {
  const { page, errors } = await stack.newPage(390, 844);
  await page.goto(`${stack.url}/#/`);
  await page.locator('a[href="#/workflows/wide"]').waitFor(WAIT);
  const sizes = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(sizes[0]! <= sizes[1]!, `the list is ${sizes[0]} px wide on a ${sizes[1]} px screen`);
  const run = page.locator('tr', { has: page.locator('a[href="#/workflows/wide"]') }).getByRole('button', { name: 'Run', exact: true });
  const box = (await run.boundingBox())!;
  assert.ok(box.x >= 0 && box.x + box.width <= 390, `Run is on the screen (x ${box.x}, width ${box.width})`);

  await page.goto(`${stack.url}/#/workflows/wide/jobs/build`);
  await page.getByRole('complementary', { name: 'Job build' }).waitFor(WAIT);
  const graph = (await page.locator('.graph-canvas').boundingBox())!;
  assert.ok(graph.width >= 330, `the graph keeps the screen's width (${graph.width} px)`);
  const panel = (await page.getByRole('complementary', { name: 'Job build' }).boundingBox())!;
  assert.ok(panel.y >= graph.y + graph.height - 1, 'the panel is under the graph');
  await screenshot(page, 'phone-job');
  assert.deepEqual(errors, []);
});
