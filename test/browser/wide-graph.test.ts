/**
 * A wide run in the dashboard's graph (README "Dashboard"), in a real Chromium against a real `weft
 * server`, the test playing the workers over HTTP: one root, 249 jobs needing it, and 10 of those each
 * starting a chain of 25 jobs, 500 jobs in all. The level of 249 is one folded node with its count
 * and state counts, its failed and running jobs drawn on their own; each chain is one node; the first
 * view (Fit) reads at a legible size; a fold expands on a click or Enter and folds again; a folded
 * job's address shows it selected.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack, screenshot } from '../helpers/browser.js';
import { until } from '../helpers/http.js';

const WAIT = { timeout: 60_000 };
const WF = 'wide500';
const LEVEL = '[data-fold="level"]';

declare const document: any;

const stack = dashboardStack('weft-dash-wide-');

/** Claims the next job of label `label` as the test's own worker, with a lease long enough for the test. */
async function claimNext(label: string) {
  return until(() => stack.api.claim('wide-worker', [label], 600), `a job with label ${label} to be claimable`, 60_000);
}

async function complete(leaseId: string): Promise<void> {
  const r = await stack.api.post(`/api/jobs/${leaseId}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

test('a run with a level of 249 jobs opens folded and readable; folds expand, fold again, and open to a selected job', async () => {
  // Labels only this test plays: w20 is the job that fails, w21 the one left running.
  const jobs: Record<string, unknown> = { root: { run: 'true', labels: ['wide-root'] } };
  for (let i = 0; i < 249; i++) jobs[`w${i}`] = { needs: 'root', run: 'true', labels: [i === 20 ? 'wide-fail' : i === 21 ? 'wide-run' : 'wide'] };
  for (let c = 0; c < 10; c++) {
    for (let k = 0; k < 25; k++) jobs[`c${c}-${k}`] = { needs: k === 0 ? `w${c}` : `c${c}-${k - 1}`, run: 'true', labels: ['wide'] };
  }
  assert.equal(Object.keys(jobs).length, 500);
  await stack.api.createWorkflow({ id: WF, jobs });
  await stack.api.run(WF);
  await complete((await claimNext('wide-root')).lease.lease_id);
  const failing = await claimNext('wide-fail');
  assert.equal(failing.job.job_id, 'w20');
  const failed = await stack.api.post(`/api/jobs/${failing.lease.lease_id}/fail`, { error: 'broken', retryable: false });
  assert.equal(failed.status, 200, failed.text);
  assert.equal((await claimNext('wide-run')).job.job_id, 'w21');

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workers`);
  await page.getByRole('heading', { name: 'Workers' }).waitFor(WAIT);
  // From the hash change to the graph drawn (status document, folding, layout and drawing), for the
  // notes: a string, not a function, so that the page sees no helper the test's compiler adds.
  const openMs = await page.evaluate<number>(`new Promise((resolve) => {
    const t0 = performance.now();
    location.hash = '#/workflows/${WF}';
    const check = () => document.querySelectorAll('.graph-canvas [data-fold="chain"]').length === 10 && document.querySelector('[data-job-id="w21"][data-state="running"]')
      ? resolve(performance.now() - t0) : requestAnimationFrame(check);
    check();
  })`);
  const layoutMs = await page.evaluate<number>(`globalThis.weftLayoutMs`);
  const nodes = page.locator('.graph-canvas .node');
  const drawn = await nodes.count();
  console.log(`wide graph: 500 jobs drawn as ${drawn} nodes in ${openMs.toFixed(0)} ms (dagre layout ${layoutMs.toFixed(0)} ms of it)`);
  assert.ok(drawn < 60, `a bounded number of nodes is drawn (${drawn})`);

  // The level: one node with its count and state counts; its failed and running jobs on their own.
  const level = page.locator(LEVEL);
  assert.equal(await level.count(), 1);
  assert.equal(await level.getAttribute('data-instances'), '247');
  assert.equal(await level.getAttribute('data-state'), 'queued');
  const text = (await level.textContent()) ?? '';
  assert.match(text, /×247/);
  assert.match(text, /0\/247 done/);
  assert.match(text, /◔247/, 'the state counts: 247 queued');
  // Hovering names the folded jobs in full.
  assert.match((await level.locator('title').textContent()) ?? '', /^247 jobs needing root:\nw0: queued\nw1: queued\n/);
  await page.locator('[data-job-id="w20"][data-state="failed"]').waitFor(WAIT);
  assert.equal(await page.locator('[data-job-id="root"][data-state="success"]').count(), 1);
  assert.equal(await page.locator('[data-fold="chain"][data-instances="25"]').count(), 10, 'each chain is one node of 25');
  assert.equal(await page.locator('[data-job-id^="w"]').count(), 2, 'only the failed and the running job of the level are drawn on their own');

  // The first view is the whole graph (what Fit shows), its names at a legible size.
  const transform = () => page.evaluate<string>(`document.querySelector('.graph-canvas > g').getAttribute('transform')`);
  const first = await transform();
  const label = await page.evaluate<{ font: number; height: number }>(`(() => {
    const t = document.querySelector('[data-fold="level"] text.name');
    return { font: t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize), height: t.getBoundingClientRect().height };
  })()`);
  console.log(`wide graph: a node's name is drawn ${label.font.toFixed(1)} px (its box ${label.height.toFixed(1)} px high) at the first view`);
  assert.ok(label.font >= 10, `names are at least 10 px at the first view (${label.font} px)`);
  assert.ok(label.height >= 10, `a name's box is at least 10 px high (${label.height} px)`);
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  assert.equal(await transform(), first, 'the first view is Fit');
  await screenshot(page, 'wide-graph-folded');

  // Live: a job of the fold runs (drawn on its own meanwhile), then succeeds, and the counts follow.
  const next = await claimNext('wide');
  await page.locator(`[data-job-id="${next.job.job_id}"][data-state="running"]`).waitFor(WAIT);
  await complete(next.lease.lease_id);
  await page.locator(`${LEVEL}[data-done="1"]`).waitFor(WAIT);
  assert.match((await level.textContent()) ?? '', /✓1/);

  // A click expands the fold: its jobs drawn each on its own, in a box headed by a button that folds them.
  await level.click();
  await page.locator('[data-job-id="w100"]').waitFor(WAIT);
  assert.equal(await page.locator(LEVEL).count(), 0);
  assert.ok((await nodes.count()) > 240, `the fold's jobs are drawn (${await nodes.count()} nodes)`);
  const head = page.locator('.fold-head[aria-expanded="true"]');
  await screenshot(page, 'wide-graph-expanded');
  // The fold's heading keeps the focus: Enter folds it again, and Enter on the fold expands it.
  assert.equal(await page.evaluate<string>(`document.activeElement.getAttribute('class')`), 'fold-head');
  await page.keyboard.press('Enter');
  await level.waitFor(WAIT);
  assert.equal(await page.locator('[data-job-id="w100"]').count(), 0);
  await level.focus();
  await page.keyboard.press('Enter');
  await page.locator('[data-job-id="w100"]').waitFor(WAIT);
  await head.click();
  await level.waitFor(WAIT);

  // A folded job's address: the job is drawn, selected, in view; its panel is open.
  const inView = (sel: string) =>
    page.evaluate<boolean>(`(() => {
      const r = document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect();
      const c = document.querySelector('.graph-canvas').getBoundingClientRect();
      return r.left >= c.left && r.top >= c.top && r.right <= c.right && r.bottom <= c.bottom;
    })()`);
  await page.goto(`${stack.url}/#/workflows/${WF}/jobs/w100`);
  await page.locator('[data-job-id="w100"].selected').waitFor(WAIT);
  await page.getByRole('complementary', { name: 'Job w100' }).waitFor(WAIT);
  assert.ok(await inView('[data-job-id="w100"]'), 'the selected job is in view');
  await page.goto(`${stack.url}/#/workflows/${WF}/jobs/c3-12`);
  await page.locator('[data-job-id="c3-12"].selected').waitFor(WAIT);
  assert.ok(await inView('[data-job-id="c3-12"]'), 'a job of a folded chain is drawn, selected and in view');
  await screenshot(page, 'wide-graph-selected');

  // From the job list: the job picked there is the graph's selected node.
  await page.getByRole('button', { name: 'List', exact: true }).click();
  await page.getByRole('searchbox', { name: 'Filter jobs by name' }).fill('w150');
  await page.locator('[data-job-row="w150"] a').click();
  await page.getByRole('button', { name: 'Graph', exact: true }).click();
  await page.locator('[data-job-id="w150"].selected').waitFor(WAIT);
  assert.ok(await inView('[data-job-id="w150"]'));

  const cancelled = await stack.api.post(`/api/workflows/${WF}/cancel`);
  assert.equal(cancelled.status, 202, cancelled.text);
  assert.deepEqual(errors, []);
  await page.context().close();
});
