/**
 * Every view of the dashboard (README "Dashboard") on a desktop and a phone, light and dark, from a
 * real `weft server` and a real `weft worker` running the repository's own workflows/ci.yml, one of
 * whose jobs fails once and is retried. Each screenshot is written to test-results/screenshots; the
 * README's images are these (WEFT_README_IMAGES=1 writes docs/images/ again). Each view is checked:
 * the theme the page asked for is the one drawn, nothing spills sideways, and the page logged no error.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, pageErrors, screenshot } from '../helpers/browser.js';
import { client, until } from '../helpers/http.js';
import { makeSandbox, ROOT, spawnWeft, type Sandbox, type SpawnedProcess } from '../helpers/server.js';

const WAIT = { timeout: 60_000 };
const README_IMAGES = path.join(ROOT, 'docs', 'images');
/** The job view in these looks is what the README shows (README "Dashboard"). */
const README_SHOWS: Record<string, string> = { desktop: 'dashboard-workflow.png', 'desktop-dark': 'dashboard-dark.png', phone: 'dashboard-phone.png' };

// Functions passed to page.evaluate run in the page, where these exist; the tests' own lib has no DOM.
declare const document: any;
declare const getComputedStyle: any;

let browser: Browser;
let sb: Sandbox;
let server: SpawnedProcess & { url: string };
let worker: SpawnedProcess;

before(async () => {
  browser = await launchChromium();
  sb = makeSandbox('weft-dash-shots-');
  fs.copyFileSync(path.join(ROOT, 'workflows', 'ci.yml'), path.join(sb.workflowsDir, 'ci.yml'));
  fs.copyFileSync(path.join(ROOT, 'workflows', 'nightly-report.yaml'), path.join(sb.workflowsDir, 'nightly-report.yaml'));
  server = Object.assign(spawnWeft(['server'], { PORT: '0', ...sb.env }, sb.dir), { url: '' });
  server.url = (await server.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/))[1]!;
  // SIMULATE_FLAKE: unit-tests fails its first attempt and is retried (workflows/ci.yml).
  worker = spawnWeft(['worker'], { SERVER_URL: server.url, WORKER_LABELS: 'linux', WORKER_ID: 'builder-1', CONCURRENCY: '3', POLL_SECS: '0.2', SIMULATE_FLAKE: '1' }, sb.dir);
  await worker.waitFor(/weft worker \S+ started/);
  const api = client(server.url);
  for (let run = 1; run <= 2; run++) {
    assert.equal((await api.post('/api/workflows/ci/run', {})).status, 202);
    await until(async () => ((await api.status('ci')).status === 'success' ? true : null), `ci run ${run} to succeed`, 120_000, 200);
  }
});

after(async () => {
  await browser?.close();
  for (const p of [worker, server]) p?.kill('SIGKILL');
  await Promise.all([worker?.exited, server?.exited]);
  if (sb) fs.rmSync(sb.dir, { recursive: true, force: true });
});

interface Look {
  name: string;
  width: number;
  height: number;
  scheme: 'light' | 'dark';
  /** The page background the theme draws (styles.css --bg). */
  bg: string;
}

const LOOKS: Look[] = [
  { name: 'desktop', width: 1440, height: 900, scheme: 'light', bg: 'rgb(247, 247, 248)' },
  { name: 'desktop-dark', width: 1440, height: 900, scheme: 'dark', bg: 'rgb(21, 23, 27)' },
  { name: 'phone', width: 390, height: 844, scheme: 'light', bg: 'rgb(247, 247, 248)' },
  { name: 'phone-dark', width: 390, height: 844, scheme: 'dark', bg: 'rgb(21, 23, 27)' },
];

/** Each view: its address, what shows it is drawn, and a step to take there first. */
const VIEWS: Array<{ name: string; hash: string; ready: (p: Page) => Promise<unknown>; step?: (p: Page) => Promise<unknown> }> = [
  {
    name: 'workflows',
    hash: '#/',
    // A schedule reads as its cron and when it next fires, not as the mapping the server keeps as text.
    // (On a phone the column is left out: attached, not visible.)
    ready: (p) => p.locator('td.trigger', { hasText: /^schedule 0 2 \* \* \*next in \d/ }).waitFor({ ...WAIT, state: 'attached' }),
  },
  {
    name: 'workflow-job',
    hash: '#/workflows/ci/jobs/unit-tests',
    ready: (p) => p.locator('.log').getByText('42 passed').first().waitFor(WAIT),
  },
  { name: 'workflow-list', hash: '#/workflows/ci', ready: (p) => p.locator('table').first().waitFor(WAIT), step: (p) => p.getByRole('button', { name: 'List', exact: true }).click(WAIT) },
  { name: 'timeline', hash: '#/workflows/ci', ready: (p) => p.locator('.timeline').first().waitFor(WAIT), step: (p) => p.getByRole('button', { name: 'Timeline', exact: true }).click(WAIT) },
  { name: 'history', hash: '#/workflows/ci/runs', ready: (p) => p.locator('table[aria-label="Runs of ci"] td.trigger').first().waitFor(WAIT) },
  { name: 'definition', hash: '#/workflows/ci/definition', ready: (p) => p.locator('section.definition pre', { hasText: 'checkout' }).waitFor(WAIT) },
  { name: 'workers', hash: '#/workers', ready: (p) => p.getByText('builder-1').first().waitFor(WAIT) },
];

for (const look of LOOKS) {
  test(`every view, ${look.name}: drawn in its theme, nothing spilling sideways, no error`, async () => {
    const context = await browser.newContext({ viewport: { width: look.width, height: look.height }, colorScheme: look.scheme });
    try {
      const page = await context.newPage();
      const errors = pageErrors(page);
      for (const view of VIEWS) {
        await page.goto(`${server.url}/${view.hash}`);
        // The step's click waits for its button to be drawn.
        if (view.step) await view.step(page);
        await view.ready(page);
        const drawn = await page.evaluate(() => ({
          bg: getComputedStyle(document.body).backgroundColor as string,
          spill: (document.documentElement.scrollWidth as number) - (document.documentElement.clientWidth as number),
        }));
        assert.equal(drawn.bg, look.bg, `${view.name}: the ${look.scheme} theme`);
        assert.ok(drawn.spill <= 1, `${view.name} is ${drawn.spill}px wider than the ${look.width}px screen`);
        const file = await screenshot(page, `view-${view.name}-${look.name}`);
        assert.ok(fs.statSync(file).size > 5_000, `${file} holds a picture`);
        const readme = README_SHOWS[look.name];
        if (process.env.WEFT_README_IMAGES === '1' && view.name === 'workflow-job' && readme) fs.copyFileSync(file, path.join(README_IMAGES, readme));
      }
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
}
