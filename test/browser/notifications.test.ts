/**
 * The dashboard's notifications (README "Notifications"), in a real Chromium against a real `weft
 * server`: the Notifications page, linked from the nav, lists every notification with its state,
 * masked webhook, attempts and last error, filtered by state and workflow; a run's page lists its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/http.js';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { freePort, startReceiver } from '../helpers/receiver.js';

// Read in the page (page.evaluate), where the DOM is.
declare const document: any;

const WAIT = { timeout: 60_000 };
const stack = dashboardStack('weft-dash-notify-', { NOTIFY_RETRY_SECS: '0.2' });

async function endRun(wf: string, fail: boolean): Promise<void> {
  assert.equal((await stack.api.post(`/api/workflows/${wf}/run`)).status, 202);
  const c = await until(() => stack.api.claim(), `the job of ${wf}`);
  assert.equal(c.job.workflow_id, wf);
  const r = fail
    ? await stack.api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'tests failed: 3 of 120', retryable: false })
    : await stack.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

test('the Notifications page lists deliveries and failing attempts, filters them, and a run page lists its own', async (t) => {
  const recv = await startReceiver();
  t.after(() => recv.close());
  const down = await freePort();
  await stack.api.createWorkflow({ id: 'shipped', jobs: { a: { run: 'true' } }, notify: [{ on: ['success'], webhook: `${recv.url}/hook?token=abc` }] });
  await stack.api.createWorkflow({ id: 'unheard', jobs: { a: { run: 'false' } }, notify: [{ webhook: `http://127.0.0.1:${down}/hook` }] });
  await endRun('shipped', false);
  await endRun('unheard', true);
  await recv.waitFor(1, 'the delivery');
  await until(async () => {
    const l = (await stack.api.get('/api/notifications?workflow_id=unheard')).body;
    return l[0]?.attempts >= 2 ? l : null;
  }, 'failed attempts to the receiver that is down');

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/`);
  await page.getByRole('link', { name: 'Notifications' }).click();
  await page.getByRole('heading', { name: 'Notifications' }).waitFor(WAIT);
  const table = page.getByRole('table', { name: 'Notifications' });
  await table.locator('tr[data-status="delivered"]').waitFor(WAIT);
  const delivered = table.locator('tr[data-status="delivered"]');
  assert.match((await delivered.textContent()) ?? '', /shipped · run 1.*success.*delivered.*\?token=\*\*\*.*notify\[0\] · json/);
  assert.ok(!(await page.content()).includes('token=abc'), 'the query value is never on the page');
  const failing = table.locator('tr[data-notification]', { hasText: 'unheard' });
  await failing.getByText(/connection refused \(ECONNREFUSED\)/).waitFor(WAIT);
  await screenshot(page, 'notifications');

  // Filtered by state, then by workflow: the address says so, and a reload keeps it.
  await page.getByLabel('Status').selectOption('delivered');
  await page.waitForURL(/#\/notifications\?status=delivered$/, WAIT);
  await table.locator('tr[data-notification]', { hasText: 'unheard' }).waitFor({ state: 'detached', ...WAIT });
  // A new filter shows "Loading…" in the table's place until its list comes, so the row left out
  // is also gone while nothing is drawn yet: the count is taken once the filtered list is drawn.
  await table.locator('tr[data-status="delivered"]').waitFor(WAIT);
  assert.equal(await table.locator('tr[data-notification]').count(), 1);
  await page.getByLabel('Status').selectOption('');
  await page.getByLabel('Workflow').fill('unheard');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/#\/notifications\?workflow=unheard$/, WAIT);
  await table.locator('tr[data-notification]', { hasText: 'shipped' }).waitFor({ state: 'detached', ...WAIT });
  await page.reload();
  await table.locator('tr[data-notification]', { hasText: 'unheard' }).waitFor(WAIT);
  assert.equal(await table.locator('tr[data-notification]').count(), 1);
  assert.equal(await page.getByLabel('Workflow').inputValue(), 'unheard');

  // From the row to the run, whose page lists its notification under the graph.
  await table.getByRole('link', { name: /unheard · run 1/ }).click();
  await page.waitForURL(/#\/workflows\/unheard\/runs\/1$/, WAIT);
  const ofRun = page.getByRole('table', { name: 'Notifications of run 1' });
  await ofRun.getByText(/ECONNREFUSED/).waitFor(WAIT);
  assert.match((await ofRun.textContent()) ?? '', /pending|delivering/);
  await page.goto(`${stack.url}/#/workflows/shipped`);
  await page.getByRole('table', { name: 'Notifications of run 1' }).locator('tr[data-status="delivered"]').waitFor(WAIT);
  assert.deepEqual(errors, []);

  // On a phone the webhook column is left out and nothing spills sideways.
  const phone = await stack.newPage(390, 844);
  await phone.page.goto(`${stack.url}/#/notifications`);
  await phone.page.getByRole('table', { name: 'Notifications' }).getByText(/ECONNREFUSED/).waitFor(WAIT);
  const spill = await phone.page.evaluate(() => (document.documentElement.scrollWidth as number) - (document.documentElement.clientWidth as number));
  assert.ok(spill <= 1, `the page is ${spill}px wider than the phone`);
  await screenshot(phone.page, 'notifications-phone');
  assert.deepEqual(phone.errors, []);
});
