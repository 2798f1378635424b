/**
 * A page of another site in a real Chromium against a token-less `weft server` (the quick start),
 * README "Browsers and origins". `evil.test` is mapped to 127.0.0.1 inside Chromium, so a page served
 * from it has a non-loopback origin while everything stays on this machine. The page tries what the
 * issue's report did (create a workflow, run one, cancel one, delete one), both straight at
 * 127.0.0.1 (cross-origin) and through its own name rebound to weft (DNS rebinding); afterwards the
 * API shows nothing happened. The dashboard on its own origin and a page on another loopback port
 * still work.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, pageErrors } from '../helpers/browser.js';
import { request } from '../helpers/http.js';
import { blankSite, type Site } from '../helpers/pages.js';
import { makeSandbox, spawnWeft, type Sandbox, type SpawnedProcess } from '../helpers/server.js';

const WAIT = { timeout: 30_000 };

declare const document: any;
declare const location: any;

let browser: Browser;
let sb: Sandbox;
let weft: SpawnedProcess & { url: string; port: number };
let site: Site;

/** No worker has this label: a run of such a job stays active for as long as the test needs. */
const definition = (id: string) => ({ id, jobs: [{ id: 'a', command: 'true', required_labels: ['nobody-has-this'] }] });

before(async () => {
  browser = await launchChromium(['--host-resolver-rules=MAP evil.test 127.0.0.1']);
  sb = makeSandbox('weft-origins-');
  weft = spawnWeft(['server'], { PORT: '0', ...sb.env }, sb.dir) as typeof weft;
  const m = await weft.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
  Object.assign(weft, { url: m[1]!, port: Number(m[2]) });
  site = await blankSite();
  for (const id of ['victim', 'busy', 'mine']) assert.equal((await request('POST', `${weft.url}/api/workflows`, definition(id))).status, 201);
  assert.equal((await request('POST', `${weft.url}/api/workflows/busy/run`)).status, 202);
});

after(async () => {
  await browser?.close();
  await site?.close();
  weft?.kill('SIGKILL');
  await weft?.exited;
  if (sb) fs.rmSync(sb.dir, { recursive: true, force: true });
});

async function open(url: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

/**
 * What the page's own scripts can do against `base`: a preflighted PUT and DELETE, and simple POSTs
 * (no body, `no-cors`) that a browser sends without asking first. Each result is the status the page
 * could read, `opaque` for a no-cors answer it cannot, or `blocked` when the browser refused.
 */
function attack(page: Page, base: string): Promise<Record<string, string | number>> {
  // A string, not a function: the page must not see helpers the test's compiler adds to named functions.
  return page.evaluate<Record<string, string | number>>(`(async () => {
    const base = ${JSON.stringify(base)};
    const out = {};
    const attempt = async (name, url, init) => {
      try {
        const r = await fetch(url, init);
        out[name] = r.type === 'opaque' ? 'opaque' : r.status;
      } catch {
        out[name] = 'blocked';
      }
    };
    const body = JSON.stringify({ id: 'drive-by', jobs: [{ id: 'pwn', command: 'touch /tmp/pwned' }] });
    await attempt('put', base + '/api/workflows/drive-by', { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    await attempt('run', base + '/api/workflows/victim/run', { method: 'POST', mode: 'no-cors' });
    await attempt('cancel', base + '/api/workflows/busy/cancel', { method: 'POST', mode: 'no-cors' });
    await attempt('create', base + '/api/workflows', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body });
    await attempt('delete', base + '/api/workflows/victim', { method: 'DELETE' });
    await attempt('read', base + '/api/workflows', {});
    return out;
  })()`);
}

/** The server's own view: nothing the page asked for happened. */
async function nothingHappened(): Promise<void> {
  const ids = (await request('GET', `${weft.url}/api/workflows`)).body.map((w: { id: string }) => w.id).sort();
  assert.ok(!ids.includes('drive-by'), `created: ${ids}`);
  assert.ok(ids.includes('victim'), 'victim was not deleted');
  assert.deepEqual((await request('GET', `${weft.url}/api/workflows/victim/runs`)).body, [], 'victim was never run');
  assert.equal((await request('GET', `${weft.url}/api/workflows/busy/status`)).body.status, 'running', 'busy was not cancelled');
}

test('a page of another site cannot create, run, cancel or delete through 127.0.0.1, nor read the answers', async () => {
  const page = await open(`http://evil.test:${site.port}/`);
  assert.equal(await page.evaluate(() => location.origin), `http://evil.test:${site.port}`);
  const results = await attack(page, weft.url);
  // The preflighted calls are stopped by the browser; the simple POSTs are sent, and refused by weft.
  assert.deepEqual(results, { put: 'blocked', run: 'opaque', cancel: 'opaque', create: 'opaque', delete: 'blocked', read: 'blocked' });
  await weft.waitFor(/request refused: origin not allowed[\s\S]*request refused: origin not allowed/);
  await nothingHappened();
  await page.context().close();
});

test('a page whose own name is rebound to weft (DNS rebinding) is refused: weft does not answer to that name', async () => {
  // The page's origin is evil.test on weft's port: for the browser, every call below is same-origin.
  const page = await open(`http://evil.test:${weft.port}/`);
  const results = await attack(page, '');
  // Same-origin answers are readable, even no-cors ones: the page learns nothing but the refusal.
  assert.deepEqual(results, { put: 421, run: 421, cancel: 421, create: 421, delete: 421, read: 421 });
  const refusal = await page.evaluate<any>(async () => (await fetch('/api/workflows', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).json());
  assert.equal(refusal.error, 'forbidden_host');
  assert.match(await page.evaluate(() => document.body.textContent), /forbidden_host/, 'the page itself was refused too');
  await nothingHappened();
  await page.context().close();
});

test('the dashboard on its own origin still runs and cancels', async () => {
  const page = await open(`${weft.url}/#/workflows/mine`);
  const errors = pageErrors(page);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.locator('[data-job-id="a"][data-state="queued"]').waitFor(WAIT);
  await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  await page.locator('[data-job-id="a"][data-state="cancelled"]').waitFor(WAIT);
  assert.equal((await request('GET', `${weft.url}/api/workflows/mine/status`)).body.status, 'cancelled');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a page on another loopback port (a local dev server) still uses the API and reads its answers', async () => {
  const page = await open(`http://localhost:${site.port}/`);
  const result = await page.evaluate<any, string>(async (base: string) => {
    const body = JSON.stringify({ id: 'from-local', jobs: [{ id: 'a', command: 'true', required_labels: ['nobody-has-this'] }] });
    const put = await fetch(`${base}/api/workflows/from-local`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    const run = await fetch(`${base}/api/workflows/from-local/run`, { method: 'POST' });
    const cancel = await fetch(`${base}/api/workflows/from-local/cancel`, { method: 'POST' });
    return { put: put.status, outcome: ((await put.json()) as { outcome: string }).outcome, run: run.status, cancel: cancel.status };
  }, weft.url);
  assert.deepEqual(result, { put: 201, outcome: 'created', run: 202, cancel: 202 });
  assert.equal((await request('GET', `${weft.url}/api/workflows/from-local/status`)).body.status, 'cancelled');
  await page.context().close();
});
