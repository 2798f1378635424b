/**
 * Workflows calling workflows in the dashboard (README "Workflows calling workflows", "Seeing it"), in
 * a real Chromium against a real `weft server`; the test plays the worker over HTTP. The calling job's
 * node opens the run it started; that run's header names the calling job and leads back to it, whose
 * panel links the run again; the history says who called.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { until } from '../helpers/http.js';

const WAIT = { timeout: 60_000 };

declare const location: any;

const stack = dashboardStack('weft-dash-calls-');

test("the calling job's node opens its child run; the child's header leads back to the calling job, whose panel links the child", async () => {
  await stack.api.createWorkflow({ id: 'inner', outputs: { got: '${{ jobs.work.outputs.got }}' }, jobs: { work: { run: 'true', labels: ['cb'] } } });
  await stack.api.createWorkflow({ id: 'outer', jobs: { call: { uses: 'inner' } } });
  await stack.api.run('outer');
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/outer`);
  const node = page.locator('[data-job-id="call"][data-state="running"]');
  await node.waitFor(WAIT);
  const link = node.locator('a.child-run[data-child-run="inner/1"]');
  await link.waitFor(WAIT);
  assert.match((await link.textContent()) ?? '', /inner run 1/);
  await screenshot(page, 'calls-node');

  // The node's link opens the child run, not the job's panel.
  await link.click();
  await page.waitForFunction(() => location.hash === '#/workflows/inner/runs/1', undefined, WAIT);
  const header = page.locator('.wf-head .parent-run');
  await header.waitFor(WAIT);
  assert.equal((await header.textContent())?.trim(), '· called by job call of outer run 1');
  await page.locator('[data-job-id="work"][data-state="queued"]').waitFor(WAIT);

  // The child's job ends; the calling job succeeds with the child's outputs, live on the page.
  const c = await until(() => stack.api.claim('test-worker', ['cb']), 'the child job to be claimable');
  assert.equal(c.job.workflow_id, 'inner');
  assert.equal((await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: { got: 'it' } })).status, 200);
  await page.locator('[data-job-id="work"][data-state="success"]').waitFor(WAIT);

  // Back to the calling job from the header: its panel says what it calls and links the child again.
  await header.getByRole('link', { name: 'call', exact: true }).click();
  await page.waitForFunction(() => location.hash === '#/workflows/outer/runs/1/jobs/call', undefined, WAIT);
  await page.locator('[data-job-id="call"][data-state="success"]').waitFor(WAIT);
  const panel = page.getByRole('complementary', { name: 'Job call' });
  await panel.getByRole('link', { name: 'Open run 1 of inner' }).waitFor(WAIT);
  assert.equal(await panel.locator('.command-fold').count(), 0, 'a calling job has no command to show');
  assert.match((await panel.locator('.call-note').textContent()) ?? '', /starts a run of inner and ends as that run ends/);
  assert.match((await panel.locator('dl.outputs').textContent()) ?? '', /got\s*it/);
  await screenshot(page, 'calls-panel');
  await panel.getByRole('link', { name: 'Open run 1 of inner' }).click();
  await page.waitForFunction(() => location.hash === '#/workflows/inner/runs/1', undefined, WAIT);

  // The child's history row names its caller, linked.
  await page.goto(`${stack.url}/#/workflows/inner/runs`);
  const row = page.locator('tr[data-run="1"] a.parent-run');
  await row.waitFor(WAIT);
  assert.equal((await row.textContent())?.trim(), 'call from outer #1');
  assert.deepEqual(errors, []);
});
