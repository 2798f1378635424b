/**
 * The dashboard's choice of server and what it does with links (README "Dashboard"), in a real
 * Chromium against a real `weft server` with tokens: a `?server=` link only asks, and no request (let
 * alone a token) reaches the server it names before the person confirms it; a bad address shows a
 * not-found view instead of a blank page; links in logs open apart from the dashboard.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, pageErrors, screenshot } from '../helpers/browser.js';
import { request } from '../helpers/http.js';
import { recordingServer, type Recorder } from '../helpers/pages.js';
import { makeSandbox, spawnWeft, type Sandbox, type SpawnedProcess } from '../helpers/server.js';

const WAIT = { timeout: 30_000 };
const ADMIN = 'dashboard-server-admin-token-0123';
const auth = { authorization: `Bearer ${ADMIN}` };

declare const localStorage: any;
declare const location: any;
declare const getComputedStyle: any;

let browser: Browser;
let sb: Sandbox;
let weft: SpawnedProcess & { url: string };
let other: Recorder;

before(async () => {
  browser = await launchChromium();
  sb = makeSandbox('weft-dash-server-');
  fs.writeFileSync(path.join(sb.workflowsDir, 'guarded.yml'), 'jobs:\n  only: { run: "true", labels: [nobody-has-this] }\n');
  weft = spawnWeft(['server'], { PORT: '0', ...sb.env, WEFT_ADMIN_TOKEN: ADMIN }, sb.dir) as typeof weft;
  weft.url = (await weft.waitFor(/listening on (http:\/\/[^:\s"]+:\d+)/))[1]!;
  other = await recordingServer();
});

after(async () => {
  await browser?.close();
  await other?.close();
  weft?.kill('SIGKILL');
  await weft?.exited;
  if (sb) fs.rmSync(sb.dir, { recursive: true, force: true });
});

async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  return { page, errors: pageErrors(page) };
}

/** Types the admin token into the page's token form, then waits for the list of weft's own workflows. */
async function signInToOwnServer(page: Page): Promise<void> {
  await page.getByRole('textbox', { name: 'Token', exact: true }).fill(ADMIN);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.getByRole('link', { name: 'guarded', exact: true }).waitFor(WAIT);
}

test('a ?server= link is not followed without asking: nothing reaches that server, the token typed later stays home, a plain / is the page’s own server', async () => {
  const { page, errors } = await newPage();
  const link = `${weft.url}/?server=${encodeURIComponent(other.url)}`;
  const dialog = page.getByRole('dialog', { name: 'Connect to another server?' });
  const guarded = page.getByRole('link', { name: 'guarded', exact: true });
  // The attack: one visit to the crafted link, ...
  await page.goto(link);
  await Promise.race([dialog.waitFor(WAIT), waitFor(() => other.requests.length > 0, 'a first call')]);
  // ... then, later, the dashboard opened plainly and the admin token typed into its form.
  await page.goto(`${weft.url}/`);
  await page.getByRole('textbox', { name: 'Token', exact: true }).fill(ADMIN);
  await page.getByRole('button', { name: 'Use token' }).click();
  await Promise.race([guarded.waitFor(WAIT), waitFor(() => other.requests.some((r) => r.headers.authorization), 'a token sent away')]);
  assert.deepEqual(
    other.requests.map((r) => `${r.method} ${r.url} ${r.headers.authorization ?? ''}`),
    [],
    'the other server got no request at all, and no token',
  );
  assert.equal((await page.locator('header .server').textContent())?.trim(), weft.url);
  assert.equal(await page.locator('.other-server').count(), 0);

  // The link asks instead: a dialog naming the server and what it would receive, and nothing else.
  await page.goto(link);
  await dialog.waitFor(WAIT);
  assert.match((await dialog.textContent()) ?? '', new RegExp(`${other.url.replace(/\./g, '\\.')}.*receive every request.*token`));
  await screenshot(page, 'server-confirm');
  assert.equal(await page.getByRole('textbox', { name: 'Token', exact: true }).count(), 0);
  assert.equal(await guarded.count(), 0);
  assert.equal(await page.evaluate(() => localStorage.getItem('weft.server.confirmed')), null, 'nothing remembered');

  // A value an earlier version stored without asking is not trusted either.
  await page.goto(`${weft.url}/`);
  await page.evaluate((u: string) => localStorage.setItem('weft.server', u), other.url);
  await page.reload();
  await guarded.waitFor(WAIT);
  assert.equal(await page.evaluate(() => localStorage.getItem('weft.server')), null, 'the unconfirmed value is removed');

  assert.deepEqual(other.requests, [], 'the other server got no request at all');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('Stay keeps the page on its server and drops ?server= from the address', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${weft.url}/?server=${encodeURIComponent(other.url)}#/workers`);
  await page.getByRole('button', { name: `Stay on ${weft.url}` }).click();
  await page.getByRole('dialog').waitFor({ state: 'detached', ...WAIT });
  assert.equal(page.url(), `${weft.url}/#/workers`);
  await page.getByRole('textbox', { name: 'Token', exact: true }).fill(ADMIN);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.getByRole('heading', { name: 'Workers' }).waitFor(WAIT);
  assert.deepEqual(other.requests, []);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('once confirmed, the page talks to the other server, says so on every view, remembers it, and can go back', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${weft.url}/?server=${encodeURIComponent(other.url)}/`);
  await page.getByRole('button', { name: 'Connect', exact: true }).click();
  // The other server wants a token; the form says where it goes.
  const form = page.getByRole('form', { name: 'Token' });
  await form.waitFor(WAIT);
  assert.match((await form.textContent()) ?? '', new RegExp(`sent to ${other.url.replace(/\./g, '\\.')}`));
  await form.getByRole('textbox', { name: 'Token', exact: true }).fill('token-meant-for-the-other-server');
  await form.getByRole('button', { name: 'Use token' }).click();
  await page.getByText('No workflows yet.').waitFor(WAIT);
  const banner = page.getByRole('status').filter({ hasText: 'not to the server of this page' });
  await banner.waitFor(WAIT);
  assert.match((await banner.textContent()) ?? '', new RegExp(other.url.replace(/\./g, '\\.')));
  assert.ok(!page.url().includes('server='), page.url());
  await screenshot(page, 'other-server');
  const withToken = other.requests.filter((r) => r.headers.authorization !== undefined);
  assert.ok(withToken.length > 0, 'the confirmed server is talked to');
  assert.ok(withToken.every((r) => r.headers.authorization === 'Bearer token-meant-for-the-other-server'));

  // Remembered: a plain / goes on talking to it.
  const before = other.requests.length;
  await page.goto(`${weft.url}/`);
  await banner.waitFor(WAIT);
  await waitFor(() => other.requests.length > before, 'a request to the remembered server');

  // Back to the page's own server.
  await page.getByRole('link', { name: `Back to ${weft.url}` }).click();
  await page.getByRole('textbox', { name: 'Token', exact: true }).waitFor(WAIT);
  await signInToOwnServer(page);
  assert.equal(await page.locator('.other-server').count(), 0);
  assert.equal(await page.evaluate(() => localStorage.getItem('weft.server.confirmed')), null);
  assert.ok(!other.requests.some((r) => r.headers.authorization === `Bearer ${ADMIN}`), 'the admin token never left its server');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a malformed address (#/workflows/%E0%A4%A) shows the not-found view, not a blank page', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${weft.url}/#/workflows/%E0%A4%A`);
  await page.getByText('No page at', { exact: false }).waitFor(WAIT);
  await page.getByRole('link', { name: 'All workflows' }).waitFor(WAIT);
  // The same when the address changes in a page already open.
  await page.goto(`${weft.url}/#/workers`);
  await page.evaluate(() => (location.hash = '#/workflows/ok/jobs/%ZZ'));
  await page.getByText('No page at', { exact: false }).waitFor(WAIT);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('links in a log (OSC 8) open in a new tab that has no handle on the dashboard and is not told where it came from', async () => {
  // A run whose one job is handed a log through the worker protocol, as a worker would.
  assert.equal((await request('POST', `${weft.url}/api/workflows`, { id: 'links', jobs: [{ id: 'j', command: 'true' }] }, auth)).status, 201);
  assert.equal((await request('POST', `${weft.url}/api/workflows/links/run`, undefined, auth)).status, 202);
  const claim = await request('POST', `${weft.url}/api/jobs/claim`, { worker_id: 'links-worker', labels: [] }, auth);
  assert.equal(claim.body?.job?.job_id, 'j', claim.text);
  const lease = claim.body.lease.lease_id;
  const osc8 = (url: string, text: string) => `\u001b]8;;${url}\u001b\\${text}\u001b]8;;\u001b\\`;
  const data = `see ${osc8('https://docs.example.com/build', 'the docs')}\nlanding ${osc8(`${other.url}/landing`, 'landing page')}\n${osc8('javascript:alert(1)', 'not a link')}\n\u001b[38;2;200;10;20mtruecolor\u001b[0m\n`;
  assert.equal((await request('POST', `${weft.url}/api/jobs/${lease}/logs`, { chunks: [{ sequence: 0, data }] }, auth)).status, 200);
  assert.equal((await request('POST', `${weft.url}/api/jobs/${lease}/complete`, { outputs: {} }, auth)).status, 200);

  const { page, errors } = await newPage();
  await page.goto(`${weft.url}/#/workflows/links/runs/1/jobs/j`);
  await signInToOwnServerOrWait(page);
  const docs = page.locator('[role=log] a', { hasText: 'the docs' });
  await docs.waitFor(WAIT);
  for (const link of [docs, page.locator('[role=log] a', { hasText: 'landing page' })]) {
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');
  }
  assert.equal(await docs.getAttribute('href'), 'https://docs.example.com/build');
  assert.equal(await page.locator('[role=log] a', { hasText: 'not a link' }).count(), 0, 'only http(s) links are links');
  // 24-bit colour comes as a style attribute, which the page's CSP allows (and nothing else inline).
  const colour = await page.locator('[role=log] span', { hasText: 'truecolor' }).last().evaluate((el: any) => getComputedStyle(el).color);
  assert.equal(colour, 'rgb(200, 10, 20)');

  // The latest attempt's log is shown through its live stream, which replays the lines and then says
  // the job ended; until then a replay may draw the rows again, and a click landing on a row as it is
  // redrawn is lost (its press and release meet different elements). Click once the log is final.
  await page.locator('.log-note', { hasText: 'ended: success' }).waitFor(WAIT);
  const dashboard = page.url();
  const before = other.requests.length;
  const [tab] = await Promise.all([page.context().waitForEvent('page'), page.locator('[role=log] a', { hasText: 'landing page' }).click()]);
  await tab.waitForLoadState();
  assert.equal(await tab.evaluate('window.opener'), null, 'the new tab cannot reach the dashboard');
  assert.equal(page.url(), dashboard, 'the dashboard stays where it was');
  await waitFor(() => other.requests.length > before, 'the landing page request');
  const landing = other.requests.slice(before).find((r) => r.url === '/landing');
  assert.ok(landing, JSON.stringify(other.requests.slice(before)));
  assert.equal(landing.headers.referer, undefined, 'no Referer names the dashboard');
  assert.deepEqual(errors, []);
  await page.context().close();
});

/** The token form, when this fresh tab has no token yet. */
async function signInToOwnServerOrWait(page: Page): Promise<void> {
  await page.getByRole('textbox', { name: 'Token', exact: true }).fill(ADMIN);
  await page.getByRole('button', { name: 'Use token' }).click();
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
