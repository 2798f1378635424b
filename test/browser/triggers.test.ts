/**
 * What started a run, in the dashboard (README "Dashboard", "Triggers and notifications"): the
 * workflows list and the workflow's header name its triggers, the runs table names a webhook's and an
 * event's runs with their event, and the run's header says what started it with the payload folded
 * under it, read once opened; in a real Chromium against a real `weft server`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { rawRequest } from '../helpers/http.js';
import { dashboardStack, screenshot } from '../helpers/browser.js';

const WAIT = { timeout: 60_000 };
const stack = dashboardStack('weft-dash-triggers-', { WEFT_SECRET_KEY: randomBytes(32).toString('base64') });

test('a run started by a webhook or an event says so, and shows its payload once opened', async () => {
  await stack.api.createWorkflow({
    id: 'site',
    on: { webhook: { secret: 'HOOK', filters: { ref: 'refs/heads/main' } }, event: ['deployed'], workflow_run: { workflows: ['build'], types: ['success'] } },
    concurrency: { max_runs: 5 },
    jobs: { build: { run: 'true', labels: ['site'] } },
  });
  assert.equal((await stack.api.put('/api/secrets/HOOK', { value: 'hook secret' })).status, 201);
  const body = JSON.stringify({ ref: 'refs/heads/main', head_commit: { id: 'abc123', message: '<b>not markup</b>' } });
  const signature = `sha256=${createHmac('sha256', 'hook secret').update(body).digest('hex')}`;
  const hook = await rawRequest(stack.url, 'POST', '/api/hooks/site', body, { 'x-hub-signature-256': signature, 'x-github-event': 'push' });
  assert.equal(hook.status, 202, hook.text);
  assert.equal((await stack.api.post('/api/events/deployed', { version: '1.4.2' })).status, 202);
  assert.equal((await stack.api.post('/api/workflows/site/run')).status, 202);

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/`);
  await page.getByText('webhook, event deployed, after build (success)').first().waitFor(WAIT);

  await page.goto(`${stack.url}/#/workflows/site/runs`);
  const triggers = page.locator('table[aria-label="Runs of site"] td.trigger');
  await triggers.first().waitFor(WAIT);
  assert.deepEqual(await triggers.allTextContents(), ['manual', 'event deployed', 'webhook push']);

  await page.goto(`${stack.url}/#/workflows/site/runs/1`);
  const head = page.locator('.wf-head');
  await head.getByText('by webhook push').waitFor(WAIT);
  assert.match(await head.innerText(), /trigger: webhook, event deployed, after build \(success\)/);
  const block = page.locator('details.run-event');
  assert.equal(await block.locator('pre').count(), 0, 'the payload is not read before it is opened');
  await block.locator('summary').click();
  const json = block.locator('pre.event-json');
  await json.waitFor(WAIT);
  assert.deepEqual(JSON.parse(await json.innerText()), JSON.parse(body));
  assert.equal(await block.locator('b').count(), 0, 'the payload is text, never markup');
  await screenshot(page, 'run-event');

  // The run started by hand has no event: no block.
  await page.goto(`${stack.url}/#/workflows/site/runs/3`);
  await page.locator('.wf-head').getByText('never run').or(page.locator('.wf-head').getByText('started')).first().waitFor(WAIT);
  assert.equal(await page.locator('details.run-event').count(), 0);
  assert.deepEqual(errors, []);
});
