/**
 * Approval gates in the dashboard (README "Approvals"), in a real Chromium against a real `weft
 * server`; the test plays the worker over HTTP. A waiting job stands out in the graph and the job
 * list, its panel shows the message with Approve and Reject, the live view follows the decision, and
 * a token that may not decide gets the server's refusal in words.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { client, until } from '../helpers/http.js';
import { makeSandbox, spawnWeft, type SpawnedProcess } from '../helpers/server.js';

const WAIT = { timeout: 60_000 };
const stack = dashboardStack('weft-dash-approvals-');

const RELEASE = {
  id: 'release',
  jobs: {
    build: { run: 'true', labels: ['appr'] },
    gate: { needs: 'build', approval: { message: 'Ship build to production?' } },
    deploy: { needs: 'gate', run: 'true', labels: ['appr'] },
  },
};

/** Plays the worker: takes the next job and completes it. */
async function work(api: ReturnType<typeof client>, expected: string): Promise<void> {
  const c = await until(() => api.claim('test-worker', ['appr']), `job ${expected} to be claimable`);
  assert.equal(c.job.job_id, expected);
  const r = await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
const node = (page: Page, job: string, state: string) => page.locator(`[data-job-id="${job}"][data-state="${state}"]`);

test('a waiting job is highlighted in the graph and the list; Approve and Reject in its panel decide it, and the live view follows', async () => {
  const api = stack.api;
  await api.createWorkflow(RELEASE);
  await api.run('release');
  await work(api, 'build');
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/release`);
  const waiting = node(page, 'gate', 'awaiting_approval');
  await waiting.waitFor(WAIT);
  assert.match((await waiting.getAttribute('class')) ?? '', /\bst-awaiting_approval\b/, 'the node carries the highlight');

  // The panel: the message, the buttons, a comment.
  await waiting.click();
  const panel = page.getByRole('region', { name: 'Approval' });
  await panel.waitFor(WAIT);
  assert.match((await panel.textContent()) ?? '', /Waiting for approval.*Ship build to production\?/);
  await page.getByRole('textbox', { name: 'Comment on the decision' }).fill('release notes read');
  await screenshot(page, 'approval-waiting');
  await button(page, 'Approve').click();
  // Live: the gate succeeds, deploy is queued, the panel says who decided what.
  await node(page, 'gate', 'success').waitFor(WAIT);
  await node(page, 'deploy', 'queued').waitFor(WAIT);
  await page.locator('.approval .decision[data-decision="approved"]').waitFor(WAIT);
  assert.match((await panel.textContent()) ?? '', /Approved at .*: “release notes read”/);
  assert.equal(await button(page, 'Approve').count(), 0, 'no buttons once decided');
  await work(api, 'deploy');
  await until(async () => (await api.status('release')).status === 'success', 'run 1 to succeed');

  // Run 2: the list view highlights the waiting row; Reject fails the gate and skips deploy.
  await api.run('release');
  await work(api, 'build');
  await page.goto(`${stack.url}/#/workflows/release`);
  await node(page, 'gate', 'awaiting_approval').waitFor(WAIT);
  await button(page, 'List').click();
  const row = page.locator('tr[data-job-row="gate"]');
  // Wait for the list's render under the same deadline as every other wait here (a loaded machine may
  // take longer than Playwright's default 30 s for a locator), then for the row's highlight.
  await row.waitFor(WAIT);
  await until(async () => /\bawaiting\b/.test((await row.getAttribute('class', WAIT)) ?? ''), 'the waiting row to be highlighted', WAIT.timeout);
  await page.goto(`${stack.url}/#/workflows/release/jobs/gate`);
  await button(page, 'Reject').click();
  await page.locator('.approval .decision[data-decision="rejected"]').waitFor(WAIT);
  await until(async () => (await api.status('release')).status === 'failed', 'run 2 to fail');
  const doc = await api.status('release');
  assert.deepEqual(doc.jobs.map((j: any) => [j.id, j.state]), [['build', 'success'], ['gate', 'failed'], ['deploy', 'skipped']]);
  await screenshot(page, 'approval-rejected');
  assert.deepEqual(errors, []);
  await page.context().close();
});

const procs: SpawnedProcess[] = [];
const boxes: string[] = [];
after(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  for (const b of boxes) fs.rmSync(b, { recursive: true, force: true });
});

test('a token that may only read sees the buttons, and pressing one shows the refusal in words; the job keeps waiting', async () => {
  const ADMIN = 'approvals-admin-token-0123456789';
  const READ = 'approvals-read-token-0123456789ab';
  const box = makeSandbox('weft-dash-approvals-tokens-');
  boxes.push(box.dir);
  const server = spawnWeft(['server'], { PORT: '0', ...box.env, WEFT_ADMIN_TOKEN: ADMIN, WEFT_READ_TOKEN: READ }, box.dir);
  procs.push(server);
  const url = (await server.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/))[1]!;
  const admin = { authorization: `Bearer ${ADMIN}` };
  const api = client(url);
  assert.equal((await api.post('/api/workflows', { id: 'gated', jobs: { ship: { approval: { message: 'go?' }, run: 'true' } } }, admin)).status, 201);
  assert.equal((await api.post('/api/workflows/gated/run', undefined, admin)).status, 202);

  const { page, errors } = await stack.newPage();
  await page.goto(`${url}/#/workflows/gated/jobs/ship`);
  const input = page.getByRole('textbox', { name: 'Token', exact: true });
  await input.waitFor(WAIT);
  await input.fill(READ);
  await button(page, 'Use token').click();
  await button(page, 'Approve').click();
  const alert = page.locator('.approval [role="alert"]');
  await alert.waitFor(WAIT);
  assert.match((await alert.textContent()) ?? '', /token 'WEFT_READ_TOKEN' has the read role; POST .*approve needs admin or approver/);
  assert.equal((await api.get('/api/workflows/gated/status', admin)).body.jobs[0].state, 'awaiting_approval');
  // The refusal is shown where the buttons are, not as a page error.
  assert.deepEqual(errors.filter((e) => !/403/.test(e)), []);
  await page.context().close();
});
