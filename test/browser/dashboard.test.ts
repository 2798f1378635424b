/**
 * The dashboard (README "Dashboard") in a real Chromium against a real `weft server` and real
 * `weft worker` processes: the list, a run's graph turning live, a job's live log, Cancel, past runs,
 * workers, tokens, a 500-job graph, and the weight of the built page.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import Fastify from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, pageErrors, screenshot } from '../helpers/browser.js';
import { request } from '../helpers/http.js';
import { makeSandbox, ROOT, spawnWeft, type Sandbox, type SpawnedProcess } from '../helpers/server.js';
import { dashboardRoutes, DASHBOARD_DIR } from '../../src/http/routes/dashboard.js';

const WAIT = { timeout: 30_000 };

// Functions passed to page.evaluate run in the page, where these exist; the tests' own lib has no DOM.
declare const window: any;
declare const document: any;
declare const location: any;

let browser: Browser;
let sb: Sandbox;
let server: SpawnedProcess & { url: string };
let worker: SpawnedProcess;
const procs: SpawnedProcess[] = [];

async function startServer(box: Sandbox, env: Record<string, string | undefined> = {}) {
  const p = spawnWeft(['server'], { PORT: '0', ...box.env, ...env }, box.dir);
  procs.push(p);
  const m = await p.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
  return Object.assign(p, { url: m[1]! });
}

before(async () => {
  browser = await launchChromium();
  sb = makeSandbox('weft-dash-');
  // `talk` prints over a couple of seconds (stdout, stderr, colours) and hands an output downstream.
  fs.writeFileSync(
    path.join(sb.workflowsDir, 'pipeline.yml'),
    [
      'name: Pipeline',
      'on: push',
      'jobs:',
      '  talk:',
      '    steps:',
      '      - run: for i in 1 2 3 4 5; do echo "line $i"; sleep 0.5; done',
      "      - run: printf '\\033[32mgreen text\\033[0m\\n'; echo 'to stderr' >&2",
      '      - run: echo "::set-output artifact=talk.tgz"',
      '  left: { needs: talk, run: "true" }',
      '  right: { needs: talk, run: "true" }',
      '  join: { needs: [left, right], run: "echo joined" }',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(sb.workflowsDir, 'slow.yml'), 'jobs:\n  long: { run: "sleep 60" }\n  after: { needs: long, run: "true" }\n');
  server = await startServer(sb);
  worker = spawnWeft(['worker'], { SERVER_URL: server.url, WORKER_ID: 'dash-worker', LONG_POLL_SECS: '1', CONCURRENCY: '2', KILL_GRACE_SECS: '1' }, sb.dir);
  procs.push(worker);
});

after(async () => {
  await browser?.close();
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  if (sb) fs.rmSync(sb.dir, { recursive: true, force: true });
});

async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  return { page, errors: pageErrors(page) };
}

const node = (job: string, state?: string) => `[data-job-id="${job}"]${state ? `[data-state="${state}"]` : ''}`;

test('the search box finds workflows by id or name through the server, and the status filter narrows them', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/`);
  await page.getByRole('link', { name: 'slow', exact: true }).waitFor(WAIT);
  await page.getByRole('searchbox').fill('PIPE');
  await page.getByRole('searchbox').press('Enter');
  // `Pipeline` matches by name as well as by id; `slow` matches neither.
  await page.getByRole('link', { name: 'slow', exact: true }).waitFor({ state: 'detached', ...WAIT });
  await page.getByRole('link', { name: 'pipeline', exact: true }).waitFor(WAIT);
  assert.match(page.url(), /q=PIPE/, 'the search is part of the URL');
  await page.goto(`${server.url}/#/?q=nothing-like-this`);
  await page.getByText('No workflows match').waitFor(WAIT);
  assert.deepEqual(errors, []);
});

test('Run asks for the inputs a workflow declares, and the run gets them', async () => {
  const created = await request('POST', `${server.url}/api/workflows`, {
    id: 'with-inputs',
    inputs: { branch: { default: 'main' }, sha: { required: true, description: 'commit to build' } },
    jobs: { show: { run: 'echo "building $WEFT_INPUT_BRANCH at $WEFT_INPUT_SHA"' } },
  });
  assert.equal(created.status, 201, created.text);
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workflows/with-inputs`);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const form = page.getByRole('form', { name: 'Run inputs' });
  await form.waitFor(WAIT);
  assert.equal(await form.getByLabel(/branch/).inputValue(), 'main', 'prefilled with the default');
  await form.getByLabel(/sha/).fill('abc123');
  await screenshot(page, 'run-inputs');
  await form.getByRole('button', { name: 'Start run' }).click();
  await form.waitFor({ state: 'detached', ...WAIT });
  await page.locator(node('show', 'success')).waitFor({ timeout: 60_000 });
  await page.getByText('inputs: branch=main, sha=abc123').waitFor(WAIT);
  const logs = await request('GET', `${server.url}/api/workflows/with-inputs/jobs/show/logs`);
  assert.match(logs.body.map((c: { data: string }) => c.data).join(''), /building main at abc123/);
  assert.deepEqual(errors, []);
});

test('Run stays available while a run is active when the workflow allows concurrent runs', async () => {
  // Jobs no worker fits keep each run active for as long as the test needs.
  const created = await request('POST', `${server.url}/api/workflows`, {
    id: 'parallel',
    concurrency: { max_runs: 2 },
    jobs: { wait: { run: 'true', labels: ['no-such-worker'] } },
  });
  assert.equal(created.status, 201, created.text);
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workflows/parallel`);
  const run = page.getByRole('button', { name: 'Run', exact: true });
  await run.click();
  await page.locator(node('wait', 'queued')).waitFor(WAIT);
  // Enabled although run 1 is active: the definition allows two at once.
  await page.waitForFunction(
    () => [...document.querySelectorAll('button')].some((b: any) => b.textContent.trim() === 'Run' && !b.disabled),
    undefined,
    WAIT,
  );
  await run.click();
  await page.locator('option', { hasText: 'Run 2' }).waitFor({ state: 'attached', ...WAIT });
  const runs = await request('GET', `${server.url}/api/workflows/parallel/runs`);
  assert.deepEqual(
    runs.body.map((r: { run_number: number; status: string }) => [r.run_number, r.status]),
    [
      [2, 'running'],
      [1, 'running'],
    ],
  );
  assert.equal((await request('POST', `${server.url}/api/workflows/parallel/cancel`)).status, 202);
  assert.deepEqual(errors, []);
});

test('the list links each workflow; its graph turns live to success after Run; a job log arrives live; a past run is one click away', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/`);
  await page.getByRole('link', { name: 'pipeline', exact: true }).waitFor(WAIT);
  await screenshot(page, 'workflows');
  await page.getByRole('link', { name: 'pipeline', exact: true }).click();

  await page.locator(node('join')).waitFor(WAIT);
  // One node per job, and nothing else carries the markers.
  assert.equal(await page.locator('[data-job-id]').count(), 4);
  assert.equal(await page.locator('[data-state]').count(), 4);
  assert.equal(await page.locator('[data-state="pending"]').count(), 4);
  // The page is never reloaded: a value set now must still be there at the end.
  await page.evaluate(() => ((window as any).stillHere = true));

  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.locator(node('talk', 'running')).waitFor(WAIT);
  // Keyboard: the node is focusable and Enter opens its panel.
  await page.locator(node('talk')).focus();
  await page.keyboard.press('Enter');
  const log = page.getByRole('log');
  await log.waitFor(WAIT);
  // The keyboard's focus moved to the panel it opened.
  await page.waitForFunction(() => document.activeElement?.closest('[aria-label="Job talk"]') !== null, undefined, WAIT);
  // The first lines are shown while the job still runs: the log is live, not read at the end.
  await page.waitForFunction(
    () => document.querySelector('[role=log]')?.textContent?.includes('line 2') && document.querySelector('[data-job-id=talk]')?.getAttribute('data-state') === 'running',
    undefined,
    WAIT,
  );
  await page.locator(node('talk', 'success')).waitFor(WAIT);
  await page.locator('[role=log] .chunk.stderr', { hasText: 'to stderr' }).waitFor(WAIT);
  await page.locator('[role=log] .ansi-green-fg', { hasText: 'green text' }).waitFor(WAIT);
  assert.match((await log.textContent()) ?? '', /line 1[\s\S]*line 5/);
  assert.equal(await page.locator('[role=log] .chunk.stdout', { hasText: 'to stderr' }).count(), 0, 'stderr is told apart');
  // Each step of the `steps:` job is a heading.
  await page.locator('[role=log] .chunk.step', { hasText: 'step 3/3: echo "::set-output artifact=talk.tgz"' }).waitFor(WAIT);
  assert.equal(await page.locator('[role=log] .chunk.step').count(), 3);
  for (const j of ['left', 'right', 'join']) await page.locator(node(j, 'success')).waitFor(WAIT);
  // The header follows the run's end live: how long it took, not "running".
  await page.waitForFunction(() => /success in \d/.test(document.querySelector('.wf-head')?.textContent ?? ''), undefined, WAIT);
  assert.match((await page.locator('.wf-head').textContent()) ?? '', /success in [\d.]+s · started /);
  await screenshot(page, 'workflow-job-log');

  // The downstream job's panel shows what its needs handed over.
  await page.locator(node('left')).click();
  await page.getByRole('complementary', { name: 'Job left' }).locator('.upstream').getByText('talk.tgz', { exact: true }).waitFor(WAIT);
  await page.getByRole('link', { name: 'Close job panel' }).click();
  await page.locator('.panel').waitFor({ state: 'detached', ...WAIT });
  await screenshot(page, 'workflow');

  // The definition as the server stores it, in the workflow-file form.
  await page.getByRole('link', { name: 'Definition', exact: true }).click();
  const definition = page.getByRole('region', { name: 'Definition' });
  await definition.getByText('needs:', { exact: false }).first().waitFor(WAIT);
  const yaml = (await definition.locator('pre').textContent()) ?? '';
  assert.match(yaml, /^name: Pipeline$/m);
  assert.match(yaml, /^ {2}join:\n {4}needs:\n {6}- left\n {6}- right\n {4}run: echo joined$/m);
  await screenshot(page, 'workflow-definition');
  await page.getByRole('button', { name: 'Graph', exact: true }).click();
  await page.locator(node('join')).waitFor(WAIT);

  // A second run; the first stays reachable through the run selector.
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.locator('option', { hasText: 'Run 2' }).waitFor({ state: 'attached', ...WAIT });
  for (const j of ['talk', 'left', 'right', 'join']) await page.locator(node(j, 'success')).waitFor({ timeout: 60_000 });
  await page.getByLabel('Showing').selectOption({ value: '1' });
  await page.waitForFunction(() => location.hash.includes('/runs/1'), undefined, WAIT);
  await page.waitForFunction(
    () => document.querySelector('select')?.value === '1' && document.querySelectorAll('[data-state="success"]').length === 4,
    undefined,
    WAIT,
  );
  await page.locator(node('talk')).click();
  await page.locator('[role=log]', { hasText: 'line 5' }).waitFor(WAIT);
  await screenshot(page, 'past-run');
  assert.equal(await page.evaluate(() => (window as any).stillHere), true, 'the page was not reloaded');

  await page.getByRole('link', { name: 'Workers', exact: true }).click();
  await page.locator('[data-worker-id="dash-worker"]').waitFor(WAIT);
  await screenshot(page, 'workers');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a matrix job is one node showing n/N done and its state counts, and opens to its instances', async () => {
  // Instances labelled for pools the test plays itself: two are completed, two stay queued.
  const created = await request('POST', `${server.url}/api/workflows`, {
    id: 'grid',
    jobs: {
      test: { strategy: { matrix: { os: ['linux', 'mac'], node: [20, 22] } }, labels: ['${{ matrix.os }}-pool'], run: 'true' },
      report: { needs: ['test'], run: 'true' },
    },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal((await request('POST', `${server.url}/api/workflows/grid/run`)).status, 202);
  for (let done = 0; done < 2; ) {
    const c = await request('POST', `${server.url}/api/jobs/claim`, { worker_id: 'grid-linux', labels: ['linux-pool'] });
    assert.equal(c.status, 200, c.text);
    if (!c.body) continue;
    assert.equal((await request('POST', `${server.url}/api/jobs/${c.body.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    done++;
  }
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workflows/grid`);
  const group = page.locator('[data-job-id="test"][data-instances="4"][data-done="2"][data-state="queued"]');
  await group.waitFor(WAIT);
  assert.match(await group.textContent() ?? '', /2\/4 done/);
  assert.equal(await page.locator('[data-job-id^="test~"]').count(), 0, 'the instances are folded into their group');
  await page.locator(node('report', 'pending')).waitFor(WAIT);
  assert.equal(await page.locator('.edges path').count(), 1, 'one edge, from the group to the job below');
  await screenshot(page, 'matrix-group');

  await group.click();
  const panel = page.getByRole('complementary', { name: 'Job test' });
  await panel.waitFor(WAIT);
  assert.deepEqual(
    await panel.locator('[data-instance]').evaluateAll((rows: any[]) => rows.map((r) => r.getAttribute('data-instance'))),
    ['test~0', 'test~1', 'test~2', 'test~3'],
  );
  await panel.getByRole('link', { name: 'test (mac, 20)' }).click();
  await page.getByRole('complementary', { name: 'Job test~2' }).waitFor(WAIT);
  assert.match(page.url(), /jobs\/test~2$/);
  assert.equal((await request('POST', `${server.url}/api/workflows/grid/cancel`)).status, 202);
  assert.deepEqual(errors, []);
});

test("a fan-out's instances appear live in place of the job standing for them", async () => {
  const created = await request('POST', `${server.url}/api/workflows`, {
    id: 'spread',
    jobs: {
      plan: { run: `echo '::set-output items=["a","b","c"]'` },
      // No worker has the label: the instances stay queued for the test to look at.
      shard: { needs: ['plan'], for_each: '${{ needs.plan.outputs.items }}', labels: ['nobody'], run: 'true' },
    },
  });
  assert.equal(created.status, 201, created.text);
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workflows/spread`);
  await page.locator(node('shard', 'pending')).waitFor(WAIT);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  // Without a reload: the page hears the instances made when plan succeeded.
  await page.locator('[data-job-id="shard"][data-instances="3"][data-state="queued"]').waitFor({ timeout: 60_000 });
  await page.locator(node('plan', 'success')).waitFor(WAIT);
  assert.equal((await request('POST', `${server.url}/api/workflows/spread/cancel`)).status, 202);
  assert.deepEqual(errors, []);
});

test('Cancel stops a running workflow and its nodes turn cancelled live', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workflows/slow`);
  await page.locator(node('after', 'pending')).waitFor(WAIT);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.locator(node('long', 'running')).waitFor(WAIT);
  await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  await page.locator(node('long', 'cancelled')).waitFor(WAIT);
  await page.locator(node('after', 'cancelled')).waitFor(WAIT);
  assert.equal((await request('GET', `${server.url}/api/workflows/slow/status`)).body.status, 'cancelled');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a 500-job workflow is laid out and drawn whole, every node in the page', async () => {
  const jobs = [];
  // 25 ranks of 20; each job needs two of the rank before it.
  for (let r = 0; r < 25; r++) {
    for (let i = 0; i < 20; i++) {
      const needs = r === 0 ? [] : [`j${r - 1}-${i}`, `j${r - 1}-${(i + 7) % 20}`];
      jobs.push({ id: `j${r}-${i}`, command: 'true', depends_on: needs });
    }
  }
  const created = await request('POST', `${server.url}/api/workflows`, { id: 'big', name: 'big', jobs });
  assert.equal(created.status, 201, created.text);
  const { page, errors } = await newPage();
  await page.goto(`${server.url}/#/workers`);
  await page.getByRole('heading', { name: 'Workers' }).waitFor(WAIT);
  // From the hash change to all 500 nodes in the page: status document, layout and drawing.
  // A string, not a function: the page must not see helpers the test's compiler adds to named functions.
  const ms = await page.evaluate<number>(`new Promise((resolve) => {
    const t0 = performance.now();
    location.hash = '#/workflows/big';
    const check = () => document.querySelectorAll('[data-job-id]').length === 500 ? resolve(performance.now() - t0) : requestAnimationFrame(check);
    check();
  })`);
  const layoutMs = await page.evaluate<number>(`globalThis.weftLayoutMs`);
  console.log(`dashboard: a 500-job workflow rendered in ${ms.toFixed(0)} ms (dagre layout ${layoutMs.toFixed(0)} ms of it)`);
  assert.equal(await page.locator('[data-job-id]').count(), 500);
  // It opens at a size one can read (its first stages), not shrunk to fit; Fit shows it all.
  const scale = () => page.evaluate<number>(`Number(/scale\\(([\\d.]+)\\)/.exec(document.querySelector('.graph-canvas > g').getAttribute('transform'))[1])`);
  assert.ok((await scale()) >= 0.45, `the first view is readable (scale ${await scale()})`);
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  assert.ok((await scale()) < 0.45, `Fit shows the whole graph (scale ${await scale()})`);
  // Panning redraws nothing but one transform: a frame after a zoom comes quickly.
  const zoomMs = await page.evaluate<number>(`new Promise((resolve) => {
    const t0 = performance.now();
    document.querySelector('[aria-label="Zoom in"]').click();
    requestAnimationFrame(() => resolve(performance.now() - t0));
  })`);
  console.log(`dashboard: a zoom of the 500-job graph took ${zoomMs.toFixed(0)} ms to the next frame`);
  await screenshot(page, 'workflow-500');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('with tokens configured the page asks for one, keeps it for the tab, and works with it', async () => {
  const box = makeSandbox('weft-dash-auth-');
  try {
    fs.writeFileSync(path.join(box.workflowsDir, 'guarded.yml'), 'jobs:\n  only: { run: "echo guarded" }\n');
    const admin = 'dashboard-admin-token-0123456789';
    const s = await startServer(box, { WEFT_ADMIN_TOKEN: admin });
    const w = spawnWeft(['worker'], { SERVER_URL: s.url, WEFT_TOKEN: admin, LONG_POLL_SECS: '1' }, box.dir);
    procs.push(w);
    const { page, errors } = await newPage();
    await page.goto(`${s.url}/`);
    const input = page.getByRole('textbox', { name: 'Token', exact: true });
    await input.waitFor(WAIT);
    await screenshot(page, 'token');
    await input.fill('not-the-token-at-all');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByText('did not accept').waitFor(WAIT);
    await page.getByRole('textbox', { name: 'Token', exact: true }).fill(admin);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('link', { name: 'guarded', exact: true }).click();
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator(node('only', 'success')).waitFor(WAIT);
    // Kept for the tab: a reload asks nothing.
    await page.reload();
    await page.locator(node('only', 'success')).waitFor(WAIT);
    assert.equal(await page.getByRole('textbox', { name: 'Token', exact: true }).count(), 0);
    assert.deepEqual(errors, []);
    await page.context().close();
  } finally {
    fs.rmSync(box.dir, { recursive: true, force: true });
  }
});

test('the built page weighs under 300 KB gzipped, and a server without it says to build it', async () => {
  const assets = path.join(DASHBOARD_DIR, 'assets');
  const files = fs.readdirSync(assets).filter((f) => /\.(js|css)$/.test(f));
  assert.ok(files.some((f) => f.endsWith('.js')) && files.some((f) => f.endsWith('.css')), `built files: ${files.join(', ')}`);
  const gz = files.reduce((n, f) => n + gzipSync(fs.readFileSync(path.join(assets, f))).length, 0);
  console.log(`dashboard: ${files.join(' + ')} = ${(gz / 1024).toFixed(1)} KB gzipped`);
  assert.ok(gz < 300 * 1024, `${gz} bytes gzipped`);

  const html = fs.readFileSync(path.join(DASHBOARD_DIR, 'index.html'), 'utf8');
  assert.doesNotMatch(html, /https?:\/\//, 'no CDN: everything comes from the server');

  const app = Fastify();
  await dashboardRoutes(app, path.join(ROOT, 'no-such-dir'));
  await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const addr = app.server.address();
    const r = await request('GET', `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`);
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'not_found');
    assert.match(r.body.message, /npm run build/);
  } finally {
    await app.close();
  }
});
