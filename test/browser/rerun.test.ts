/**
 * Re-running from the dashboard (README "Re-running a run"), in a real Chromium against a real `weft
 * server`; the test plays the worker over HTTP. "Re-run failed jobs" and "Re-run all" on a finished run,
 * "Re-run from here" on a job, each a re-run of the run shown; disabled, with the reason, where the
 * server would refuse it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { until } from '../helpers/http.js';

const WAIT = { timeout: 60_000 };

declare const document: any;
declare const requestAnimationFrame: (cb: () => void) => number;

const stack = dashboardStack('weft-dash-rerun-');

/** Plays the worker: takes the next job of the workflow and ends it as told. */
async function work(expected: string, outcome: 'complete' | 'fail'): Promise<void> {
  const c = await until(() => stack.api.claim('test-worker', ['rr']), `job ${expected} to be claimable`);
  assert.equal(c.job.job_id, expected);
  const r =
    outcome === 'complete'
      ? await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: { from: `run ${c.job.run_number}` } })
      : await stack.api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'broken', retryable: false });
  assert.equal(r.status, 200, r.text);
}

const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
const stateOf = (page: Page, job: string) => page.locator(`[data-job-id="${job}"]`).getAttribute('data-state');

test('Re-run failed jobs, Re-run all and Re-run from here start re-runs of the run shown, and say why when they cannot', async () => {
  await stack.api.createWorkflow({ id: 'rr', jobs: { build: { run: 'true', labels: ['rr'] }, deploy: { needs: 'build', run: 'true', labels: ['rr'] } } });
  await stack.api.run('rr');
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/rr`);
  await page.locator('[data-job-id="build"][data-state="queued"]').waitFor(WAIT);
  // While the run is active, neither re-run applies, and the button says why.
  assert.equal(await button(page, 'Re-run failed jobs').isDisabled(), true);
  assert.match((await button(page, 'Re-run all').getAttribute('title')) ?? '', /still active/);

  await work('build', 'complete');
  await work('deploy', 'fail');
  await page.locator('[data-job-id="deploy"][data-state="failed"]').waitFor(WAIT);
  await until(async () => !(await button(page, 'Re-run failed jobs').isDisabled()), 'Re-run failed jobs to be offered');

  // Re-run failed jobs: run 2 keeps build's success and runs deploy again; the page follows it.
  await button(page, 'Re-run failed jobs').click();
  await page.waitForFunction(() => document.querySelector('select')?.value === '2', undefined, WAIT);
  await page.locator('[data-job-id="deploy"][data-state="queued"]').waitFor(WAIT);
  assert.equal(await stateOf(page, 'build'), 'success');
  const two = await stack.api.get('/api/workflows/rr/runs/2');
  assert.equal(two.body.run.rerun_of, 1);
  assert.equal(two.body.jobs.find((j: any) => j.id === 'build').outputs.from, 'run 1', "build was kept with run 1's outputs");
  await work('deploy', 'complete');
  await page.locator('[data-job-id="deploy"][data-state="success"]').waitFor(WAIT);
  // A job that worked at its first try shows its state and time, with no attempt count and no stray separator.
  const line = (await page.locator('[data-job-id="deploy"] .state').textContent()) ?? '';
  assert.doesNotMatch(line, /\d\/\d|try/, line);
  assert.doesNotMatch(line, /·\s*$/, line);

  // The tab's title names the run's state.
  await until(async () => (await page.title()) === 'success · rr · weft', "the tab's title to name the run's state");

  // Every job of run 2 succeeded: nothing failed to re-run, but everything may run again.
  await until(async () => !(await button(page, 'Re-run all').isDisabled()), 'Re-run all to be offered');
  assert.equal(await button(page, 'Re-run failed jobs').isDisabled(), true);
  assert.match((await button(page, 'Re-run failed jobs').getAttribute('title')) ?? '', /every job of this run succeeded/);

  // Re-run from here, on deploy: run 3 keeps build and runs deploy.
  await page.goto(`${stack.url}/#/workflows/rr/jobs/deploy`);
  await button(page, 'Re-run from here').click();
  await page.waitForFunction(() => document.querySelector('select')?.value === '3', undefined, WAIT);
  const three = await stack.api.get('/api/workflows/rr/runs/3');
  assert.equal(three.body.run.rerun_of, 2);
  assert.deepEqual(
    Object.fromEntries(three.body.jobs.map((j: any) => [j.id, j.state])),
    { build: 'success', deploy: 'queued' },
  );
  // While run 3 is active, the panel's button is disabled and says why.
  await page.goto(`${stack.url}/#/workflows/rr/jobs/build`);
  await button(page, 'Re-run from here').waitFor(WAIT);
  assert.equal(await button(page, 'Re-run from here').isDisabled(), true);
  // Escape closes the panel.
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.location.hash === '#/workflows/rr', undefined, WAIT);
  // The address changes first; the panel goes with the next render.
  await page.getByRole('complementary', { name: 'Job build' }).waitFor({ state: 'detached', ...WAIT });
  await work('deploy', 'complete');

  // Re-run all on an earlier run (run 1, shown from the selector): run 4 runs every job.
  await page.goto(`${stack.url}/#/workflows/rr/runs/1`);
  await until(async () => !(await button(page, 'Re-run all').isDisabled()), 'Re-run all to be offered on run 1');
  await button(page, 'Re-run all').click();
  await page.waitForFunction(() => document.querySelector('select')?.value === '4', undefined, WAIT);
  const four = await stack.api.get('/api/workflows/rr/runs/4');
  assert.equal(four.body.run.rerun_of, 1);
  assert.equal(four.body.jobs.find((j: any) => j.id === 'build').state, 'queued');
  await screenshot(page, 'rerun-buttons');
  assert.deepEqual(errors, []);
});

test('History lists every run with its state, duration, job counts and the run it re-ran, a page at a time', async () => {
  const { page, errors } = await stack.newPage();
  // The runs of the test above: 4, the last a re-run of run 1, still active until its jobs end.
  await work('build', 'complete');
  await work('deploy', 'complete');
  await page.goto(`${stack.url}/#/workflows/rr`);
  await page.getByRole('link', { name: 'History', exact: true }).click();
  const table = page.getByRole('table', { name: 'Runs of rr' });
  await table.waitFor(WAIT);
  await page.locator('tr[data-run="4"]', { hasText: 'success' }).waitFor(WAIT);
  assert.equal(await table.locator('tbody tr').count(), 4);
  const row = (n: number) => table.locator(`tr[data-run="${n}"]`);
  assert.match((await row(4).textContent()) ?? '', /Run 4.*success.*Run 1$/);
  assert.match((await row(1).textContent()) ?? '', /Run 1.*failed/);
  assert.match((await row(1).locator('td.duration').textContent()) ?? '', /^\d+(\.\d)?s$|^\d+m \d\ds$/);
  // The selector of the workflow view names each run's state and duration too.
  await row(2).getByRole('link', { name: 'Run 2' }).click();
  await page.waitForFunction(() => document.querySelector('select')?.value === '2', undefined, WAIT);
  // The history is read after the run shown, so the options gain their details a moment later.
  await page.locator('option[value="2"]', { hasText: /^Run 2 · success · \d/ }).waitFor({ state: 'attached', ...WAIT });
  assert.match((await page.locator('.wf-head').textContent()) ?? '', /success in \d/);

  // Paging: 51 more runs make two pages, newest first.
  await stack.api.createWorkflow({ id: 'many', jobs: { one: { run: 'true', labels: ['many'] } } });
  for (let i = 0; i < 51; i++) {
    await stack.api.run('many');
    const c = await until(() => stack.api.claim('test-worker', ['many']), 'the job of a run of many');
    assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  }
  await page.goto(`${stack.url}/#/workflows/many/runs`);
  const many = page.getByRole('table', { name: 'Runs of many' });
  await many.waitFor(WAIT);
  assert.equal(await many.locator('tbody tr').count(), 50);
  assert.equal(await many.locator('tbody tr').first().getAttribute('data-run'), '51');
  await page.getByRole('link', { name: 'Older →' }).click();
  await page.locator('tr[data-run="1"]').waitFor(WAIT);
  assert.equal(await page.getByRole('table', { name: 'Runs of many' }).locator('tbody tr').count(), 1);
  assert.equal(await page.getByRole('link', { name: 'Older →' }).count(), 0);
  await page.getByRole('link', { name: '← Newer' }).click();
  await page.locator('tr[data-run="51"]').waitFor(WAIT);
  await screenshot(page, 'run-history');
  assert.deepEqual(errors, []);
});

test('a read of the run list that answers late does not take a newer run out of the selector', async () => {
  await stack.api.createWorkflow({ id: 'late', jobs: { one: { run: 'true', labels: ['late'] } } });
  await stack.api.run('late');
  const { page, errors } = await stack.newPage();
  // The page's first read of the run list is answered only once run 2 is on screen, with the list as
  // it was before run 2 (the order a busy server may answer two reads in).
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  let lateAnswered!: () => void;
  const answeredLate = new Promise<void>((resolve) => (lateAnswered = resolve));
  await page.route('**/api/workflows/late/runs?limit=100', async (route) => {
    if (held) return route.continue();
    held = true;
    const stale = await route.fetch();
    await released;
    await route.fulfill({ response: stale });
    lateAnswered();
  });
  await page.goto(`${stack.url}/#/workflows/late`);
  await page.waitForFunction(() => document.querySelector('select')?.value === '1', undefined, WAIT);
  const c = await until(() => stack.api.claim('test-worker', ['late']), 'the job of run 1');
  assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await stack.api.run('late');
  await page.locator('option[value="2"]').waitFor({ state: 'attached', ...WAIT });
  await page.waitForFunction(() => document.querySelector('select')?.value === '2', undefined, WAIT);
  release();
  await answeredLate;
  // Two frames after the late answer, whatever it changed is drawn.
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
  assert.equal(await page.locator('option[value="2"]').count(), 1, 'run 2 is still offered');
  assert.equal(await page.evaluate(() => document.querySelector('select')?.value), '2');
  assert.deepEqual(errors, []);
});
