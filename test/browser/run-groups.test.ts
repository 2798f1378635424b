/**
 * A run waiting on its concurrency group says so in the dashboard's run header (README "Concurrency
 * groups"), and the header follows live when the group frees and the run starts; in a real Chromium
 * against a real `weft server`, the test playing the worker over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack } from '../helpers/browser.js';

const WAIT = { timeout: 60_000 };
const stack = dashboardStack('weft-dash-groups-');

test('a queued run names the group it waits for, and shows it running once the group frees', async () => {
  for (const id of ['api', 'web']) {
    await stack.api.createWorkflow({ id, concurrency: { group: 'deploy-prod' }, jobs: { ship: { run: 'true', labels: [`g-${id}`] } } });
  }
  await stack.api.run('api');
  const queued = await stack.api.post('/api/workflows/web/run', {});
  assert.equal(queued.body.run.status, 'queued');
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/web`);
  await page.getByText('waiting for group deploy-prod').waitFor(WAIT);

  const c = await stack.api.claim('w', ['g-api']);
  assert.equal((await stack.api.post(`/api/jobs/${c!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await page.locator('.run-group', { hasText: /^ · group deploy-prod$/ }).waitFor(WAIT);
  assert.deepEqual(errors, []);
});

test('a run queued behind max_runs says it waits for a free slot', async () => {
  await stack.api.createWorkflow({ id: 'slots', concurrency: { max_runs: 1, when_full: 'queue' }, jobs: { a: { run: 'true', labels: ['g-slots'] } } });
  await stack.api.run('slots');
  assert.equal((await stack.api.post('/api/workflows/slots/run', {})).body.run.status, 'queued');
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/slots`);
  await page.getByText('waiting for a free slot: every run concurrency.max_runs allows is running').waitFor(WAIT);
  assert.deepEqual(errors, []);
});

test("a queued job of a concurrency group names the job it waits for, and runs once that one ends", async () => {
  for (const id of ['jg-api', 'jg-web']) {
    await stack.api.createWorkflow({ id, jobs: { deploy: { run: 'true', labels: [id], concurrency: 'deploy-eu' } } });
  }
  await stack.api.run('jg-api');
  const holder = await stack.api.claim('w', ['jg-api']);
  assert.equal(holder?.job.job_id, 'deploy');
  await stack.api.run('jg-web');
  assert.equal(await stack.api.claim('w', ['jg-web']), null);
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/jg-web/jobs/deploy`);
  const why = page.locator('.why-waiting[data-group="deploy-eu"]');
  await why.getByText(/Waiting for concurrency group deploy-eu: job deploy of run #1 of jg-api runs/).waitFor(WAIT);
  assert.equal(await why.getByRole('link', { name: 'jg-api' }).getAttribute('href'), '#/workflows/jg-api');

  assert.equal((await stack.api.post(`/api/jobs/${holder!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await stack.api.claim('w', ['jg-web']))?.job.job_id, 'deploy');
  await page.locator('.panel .facts .badge.st-running').waitFor(WAIT);
  assert.equal(await why.count(), 0);
  assert.deepEqual(errors, []);
});
