/**
 * The runs table says what started each run, and the Definition view shows the definition the shown run
 * used, with a note and the current one a click away once the workflow has changed (README
 * "Dashboard"); in a real Chromium against a real `weft server`, the test playing the worker over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack, screenshot } from '../helpers/browser.js';

const WAIT = { timeout: 60_000 };
const stack = dashboardStack('weft-dash-definitions-');

test('the runs table names each run\'s trigger; an earlier run shows the definition it used', async () => {
  const v1 = { id: 'site', env: { STAGE: 'one' }, jobs: { build: { run: 'echo one', labels: ['site'] } } };
  await stack.api.createWorkflow(v1);
  await stack.api.run('site');
  const c = await stack.api.claim('w', ['site']);
  assert.equal((await stack.api.post(`/api/jobs/${c!.lease.lease_id}/fail`, { error: 'boom', retryable: false })).status, 200);
  assert.equal((await stack.api.put('/api/workflows/site', { ...v1, env: { STAGE: 'two' } })).status, 200);
  assert.equal((await stack.api.post('/api/workflows/site/runs/1/rerun', {})).status, 202);

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/site/runs`);
  const rows = page.locator('table[aria-label="Runs of site"] tbody tr');
  await rows.first().waitFor(WAIT);
  assert.deepEqual(await page.locator('table[aria-label="Runs of site"] td.trigger').allTextContents(), ['re-run', 'manual']);

  await page.goto(`${stack.url}/#/workflows/site/runs/1/definition`);
  const def = page.locator('section.definition');
  await def.getByText('The definition run 1 used; the workflow has changed since.').waitFor(WAIT);
  assert.match(await def.locator('pre').innerText(), /STAGE: one/);
  await screenshot(page, 'definition-of-run');
  await def.getByRole('button', { name: 'Show the current one' }).click();
  await def.locator('pre', { hasText: 'STAGE: two' }).waitFor(WAIT);

  // The latest run used the current definition: no note.
  await page.goto(`${stack.url}/#/workflows/site/runs/2/definition`);
  await def.locator('pre', { hasText: 'STAGE: two' }).waitFor(WAIT);
  assert.equal(await def.locator('.note').count(), 0);
  assert.deepEqual(errors, []);
});
