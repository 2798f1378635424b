/**
 * Artifacts in the dashboard (README "Artifacts"), in a real Chromium against a real `weft server` and
 * `weft worker`: the job panel lists its job's artifacts and the run view all of the run's, each a
 * link that downloads the very bytes; with tokens on, the link downloads with the page's token.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, pageErrors, screenshot } from '../helpers/browser.js';
import { request, until } from '../helpers/http.js';
import { makeSandbox, spawnWeft, type Sandbox, type SpawnedProcess } from '../helpers/server.js';

const WAIT = { timeout: 30_000 };
const ADMIN = 'artifacts-admin-token-0123456789';

let browser: Browser;
const boxes: Sandbox[] = [];
const procs: SpawnedProcess[] = [];

const WORKFLOW = [
  'jobs:',
  '  build:',
  '    run: |',
  '      mkdir -p dist',
  '      head -c 200000 /dev/urandom > dist/app.bin',
  '      echo "release notes" > notes.txt',
  '    artifacts: [dist, notes.txt]',
  '    priority: 5',
  '  check:',
  '    needs: build',
  '    download: build',
  '    run: cmp dist/app.bin dist/app.bin && cp notes.txt checked.txt',
  '    artifacts: [checked.txt]',
  '',
].join('\n');

/** A server and a worker in a sandbox of their own, with the workflow loaded; `env` for the server. */
async function stack(env: Record<string, string> = {}) {
  const box = makeSandbox('weft-dash-art-');
  boxes.push(box);
  fs.writeFileSync(path.join(box.workflowsDir, 'art.yml'), WORKFLOW);
  const server = spawnWeft(['server'], { PORT: '0', ...box.env, ...env }, box.dir);
  procs.push(server);
  const url = (await server.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/))[1]!;
  const worker = spawnWeft(['worker'], { ...box.env, SERVER_URL: url, WEFT_TOKEN: env.WEFT_ADMIN_TOKEN, WORK_DIR: path.join(box.dir, 'work'), LONG_POLL_SECS: '1' }, box.dir);
  procs.push(worker);
  const headers: Record<string, string> = env.WEFT_ADMIN_TOKEN ? { authorization: `Bearer ${env.WEFT_ADMIN_TOKEN}` } : {};
  assert.equal((await request('POST', `${url}/api/workflows/art/run`, undefined, headers)).status, 202);
  await until(async () => (await request('GET', `${url}/api/workflows/art/status`, undefined, headers)).body?.status === 'success', 'the run to succeed', 60_000, 100);
  const list = (await request('GET', `${url}/api/workflows/art/runs/1/artifacts`, undefined, headers)).body.artifacts as Array<{ job_id: string; name: string; sha256: string }>;
  return { url, list };
}

before(async () => {
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  for (const b of boxes) fs.rmSync(b.dir, { recursive: true, force: true });
});

async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  return { page, errors: pageErrors(page) };
}

/** Clicks the link and answers the SHA-256 and name of what the browser saved. */
async function download(page: Page, link: ReturnType<Page['getByRole']>): Promise<{ sha256: string; filename: string }> {
  const [dl] = await Promise.all([page.waitForEvent('download', WAIT), link.click()]);
  const file = await dl.path();
  assert.ok(file, `the download ${dl.suggestedFilename()} was saved`);
  return { sha256: createHash('sha256').update(fs.readFileSync(file)).digest('hex'), filename: dl.suggestedFilename() };
}

test("the job panel lists its job's artifacts and the run view all of the run's; each link downloads the same bytes", async () => {
  const { url, list } = await stack();
  assert.deepEqual(list.map((a) => `${a.job_id}/${a.name}`), ['build/dist/app.bin', 'build/notes.txt', 'check/checked.txt']);
  const sha = Object.fromEntries(list.map((a) => [`${a.job_id}/${a.name}`, a.sha256]));
  const { page, errors } = await newPage();

  // The job panel of `build`: its two artifacts only.
  await page.goto(`${url}/#/workflows/art/jobs/build`);
  const panel = page.getByRole('list', { name: 'Artifacts of build' });
  await panel.waitFor(WAIT);
  assert.deepEqual(await panel.getByRole('link').allTextContents(), ['dist/app.bin', 'notes.txt']);
  // README "Priorities": a job queued with a priority other than 0 says so.
  assert.equal(await page.locator('dl.facts dt:text-is("Priority") + dd').textContent(), '+5');
  await screenshot(page, 'artifacts-job-panel');
  const app = await download(page, panel.getByRole('link', { name: 'dist/app.bin' }));
  assert.deepEqual(app, { sha256: sha['build/dist/app.bin'], filename: 'app.bin' });

  // The run view: every artifact of the run, named with its job.
  const run = page.getByRole('list', { name: 'Artifacts of run 1' });
  await run.waitFor(WAIT);
  assert.deepEqual(await run.getByRole('link').allTextContents(), ['build/dist/app.bin', 'build/notes.txt', 'check/checked.txt']);
  const checked = await download(page, run.getByRole('link', { name: 'check/checked.txt' }));
  assert.deepEqual(checked, { sha256: sha['check/checked.txt'], filename: 'checked.txt' });
  assert.equal(checked.sha256, sha['build/notes.txt'], 'check downloaded notes.txt byte for byte and uploaded it again');

  // A job without artifacts says so.
  await page.goto(`${url}/#/workflows/art/runs/1/jobs/check`);
  const checkPanel = page.getByRole('list', { name: 'Artifacts of check' });
  await checkPanel.waitFor(WAIT);
  assert.deepEqual(await checkPanel.getByRole('link').allTextContents(), ['checked.txt']);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('with tokens on, an artifact link downloads with the token the page holds', async () => {
  const { url, list } = await stack({ WEFT_ADMIN_TOKEN: ADMIN });
  const { page, errors } = await newPage();
  await page.goto(`${url}/#/workflows/art/jobs/build`);
  const input = page.getByRole('textbox', { name: 'Token', exact: true });
  await input.waitFor(WAIT);
  await input.fill(ADMIN);
  await page.getByRole('button', { name: 'Use token' }).click();
  const panel = page.getByRole('list', { name: 'Artifacts of build' });
  await panel.waitFor(WAIT);
  const notes = await download(page, panel.getByRole('link', { name: 'notes.txt' }));
  assert.deepEqual(notes, { sha256: list.find((a) => a.name === 'notes.txt')!.sha256, filename: 'notes.txt' });
  // The plain address alone is refused: the bytes came through the token.
  assert.equal((await fetch(`${url}/api/workflows/art/runs/1/artifacts/build/notes.txt`)).status, 401);
  assert.deepEqual(errors, []);
  await page.context().close();
});
