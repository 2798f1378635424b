/**
 * The dashboard's Secrets page (README "Secrets"), in a real Chromium against a real `weft server`
 * with tokens and a key: an admin sets, lists and removes secrets; no value is ever on the page after
 * it was sent; a read token is told it cannot see them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { dashboardStack, screenshot } from '../helpers/browser.js';

const WAIT = { timeout: 60_000 };
const ADMIN = 'admin-token-dashboard-01';
const READ = 'read-token-dashboard-01';
const stack = dashboardStack('weft-dash-secrets-', {
  WEFT_SECRET_KEY: randomBytes(32).toString('base64'),
  WEFT_ADMIN_TOKEN: ADMIN,
  WEFT_READ_TOKEN: READ,
});

async function signIn(page: import('playwright-core').Page, token: string) {
  await page.locator('input[name="token"]').fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
}

test('an admin sets a secret for every workflow and one for a workflow, sees names only, and removes one', async () => {
  const auth = { authorization: `Bearer ${ADMIN}` };
  assert.equal((await stack.api.post('/api/workflows', { id: 'deploy', jobs: { a: { run: 'true' } } }, auth)).status, 201);
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/secrets`);
  await signIn(page, ADMIN);
  await page.getByText('No secrets yet.').waitFor(WAIT);

  const VALUE = `v-${randomBytes(8).toString('hex')}`;
  const form = page.getByRole('form', { name: 'Set a secret' });
  await form.getByLabel('Name').fill('DEPLOY_KEY');
  await form.getByLabel('Value').fill(VALUE);
  await form.getByRole('button', { name: 'Set' }).click();
  await page.getByText('Secret DEPLOY_KEY set for every workflow.').waitFor(WAIT);
  assert.equal(await form.getByLabel('Value').inputValue(), '', 'the value is not kept in the page');

  await form.getByLabel('Name').fill('DEPLOY_KEY');
  await form.getByLabel('Workflow').fill('deploy');
  await form.getByLabel('Value').fill(`${VALUE}-own`);
  await form.getByRole('button', { name: 'Set' }).click();
  await page.getByText('Secret DEPLOY_KEY set for workflow deploy.').waitFor(WAIT);
  const rows = page.locator('tr[data-secret="DEPLOY_KEY"]');
  await page.locator('tr[data-secret="DEPLOY_KEY"][data-scope="deploy"]').waitFor(WAIT);
  assert.equal(await rows.count(), 2);
  assert.match((await page.locator('tr[data-scope=""]').textContent()) ?? '', /every workflow.*WEFT_ADMIN_TOKEN/);
  assert.ok(!(await page.content()).includes(VALUE), 'no value anywhere in the page');
  await screenshot(page, 'secrets');

  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Remove DEPLOY_KEY of deploy' }).click();
  await page.getByText('Secret DEPLOY_KEY removed for workflow deploy.').waitFor(WAIT);
  await page.locator('tr[data-scope="deploy"]').waitFor({ state: 'detached', ...WAIT });
  const left = await stack.api.get('/api/secrets', auth);
  assert.deepEqual(left.body.secrets.map((s: any) => [s.name, s.workflow_id]), [['DEPLOY_KEY', null]]);

  // A bad name is caught by the form; the server's own refusal would be shown the same way as others.
  await form.getByLabel('Name').fill('9bad');
  await form.getByLabel('Value').fill('x');
  await form.getByRole('button', { name: 'Set' }).click();
  assert.equal(await form.getByLabel('Name').evaluate((el) => (el as unknown as { validity: { valid: boolean } }).validity.valid), false);
  assert.deepEqual(errors, []);
});

test('a read token is told that only an admin may see secrets', async () => {
  const { page } = await stack.newPage();
  await page.goto(`${stack.url}/#/secrets`);
  await signIn(page, READ);
  await page.getByRole('alert').getByText('Only an admin token may see or change secrets.').waitFor(WAIT);
});
