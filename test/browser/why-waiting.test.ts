/**
 * The dashboard says why a queued job is not running (README "Dashboard"), in a real Chromium against a
 * real `weft server`; the test plays the workers over HTTP: no connected worker has the job's labels
 * (with the command that starts one), a retry waits out its backoff, every fitting worker is busy. An
 * empty Workers page says how to start a worker.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardStack, screenshot } from '../helpers/browser.js';

const WAIT = { timeout: 60_000 };

const stack = dashboardStack('weft-dash-why-');

test('an empty Workers page gives the command that starts a worker', async () => {
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workers`);
  await page.getByText('No worker has registered yet').waitFor(WAIT);
  assert.equal(await page.locator('pre.command').textContent(), `SERVER_URL=${stack.url} weft worker`);
  assert.deepEqual(errors, []);
});

test('a queued job says why it waits: no worker with its labels, a retry backoff, or every fitting worker busy', async () => {
  await stack.api.createWorkflow({
    id: 'why',
    jobs: {
      lonely: { run: 'true', labels: ['nobody-has-this'] },
      flaky: { run: 'true', labels: ['whyretry'], retries: 1, backoff: { fixed: { delay_secs: 600 } } },
      first: { run: 'true', labels: ['whybusy'] },
      second: { run: 'true', labels: ['whybusy'] },
    },
  });
  await stack.api.run('why');
  const { page, errors } = await stack.newPage();
  const why = page.getByRole('status');

  // No worker at all has the label.
  await page.goto(`${stack.url}/#/workflows/why/jobs/lonely`);
  await why.getByText('No connected worker has the labels this job needs (nobody-has-this)').waitFor(WAIT);
  assert.equal(await why.locator('pre').textContent(), `SERVER_URL=${stack.url} WORKER_LABELS=nobody-has-this weft worker`);

  // A retry waiting out its backoff.
  const flaky = await stack.api.claim('w-retry', ['whyretry']);
  assert.equal(flaky?.job.job_id, 'flaky');
  assert.equal((await stack.api.post(`/api/jobs/${flaky!.lease.lease_id}/fail`, { error: 'flaky', retryable: true })).status, 200);
  await page.goto(`${stack.url}/#/workflows/why/jobs/flaky`);
  await why.getByText(/Waiting out its retry backoff: claimable in \d+m/).waitFor(WAIT);

  // The one fitting worker holds the other job.
  const first = await stack.api.claim('w-busy', ['whybusy']);
  assert.equal(first?.job.job_id, 'first');
  await page.goto(`${stack.url}/#/workflows/why/jobs/second`);
  await why.getByText('Waiting for a free worker: the one fitting worker is busy.').waitFor(WAIT);
  await screenshot(page, 'why-waiting');

  // A running job says nothing of the kind.
  await page.locator('[data-job-id="first"][data-state="running"]').waitFor(WAIT);
  await page.goto(`${stack.url}/#/workflows/why/jobs/first`);
  await page.getByRole('complementary', { name: 'Job first' }).waitFor(WAIT);
  assert.equal(await why.count(), 0);
  assert.deepEqual(errors, []);
});

test('a wide run is triaged: names cut in the middle stay apart, a state count lists those jobs, a row opens the job', async () => {
  const jobs: Record<string, unknown> = { prepare: { run: 'true', labels: ['wide'] } };
  for (let i = 1; i <= 60; i++) jobs[`shard-${i}`] = { name: `Integration tests shard ${i}`, needs: 'prepare', run: 'true', labels: ['wide'] };
  await stack.api.createWorkflow({ id: 'wide-run', jobs });
  await stack.api.run('wide-run');
  for (let i = 0; i <= 60; i++) {
    const c = await stack.api.claim('w-wide', ['wide']);
    assert.ok(c, `job ${i} is claimable`);
    const body = c.job.job_id === 'shard-37' ? { error: 'assertion failed in shard 37', retryable: false } : { outputs: {} };
    const r = await stack.api.post(`/api/jobs/${c.lease.lease_id}/${c.job.job_id === 'shard-37' ? 'fail' : 'complete'}`, body);
    assert.equal(r.status, 200, r.text);
  }
  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/wide-run`);
  await page.locator('[data-job-id="shard-37"][data-state="failed"]').waitFor(WAIT);
  // The graph cuts long names in the middle, so the shard numbers stay visible.
  assert.match((await page.locator('[data-job-id="shard-37"] text.name').textContent()) ?? '', /^Integration.*….*shard 37$/);

  // The failed count lists the failed jobs; the row opens the job.
  await page.getByRole('button', { name: '1 failed: list them' }).click();
  const list = page.getByRole('region', { name: 'Jobs' });
  await list.waitFor(WAIT);
  assert.equal(await list.locator('tbody tr').count(), 1, 'only the failed job is listed');
  assert.match((await list.locator('tbody tr').first().textContent()) ?? '', /^Integration tests shard 37 shard-37.*failed/);
  await list.getByRole('link', { name: 'Integration tests shard 37' }).click();
  await page.getByRole('complementary', { name: 'Job shard-37' }).getByText('assertion failed in shard 37').waitFor(WAIT);

  // All states, narrowed by name.
  await list.getByLabel('State').selectOption('');
  await list.getByRole('searchbox', { name: 'Filter jobs by name' }).fill('shard 1');
  await page.getByText('11 of 61 jobs').waitFor(WAIT);
  // And back to the graph.
  await page.getByRole('button', { name: 'Graph', exact: true }).click();
  await page.locator('[data-job-id="prepare"]').waitFor(WAIT);
  await screenshot(page, 'wide-run-list');
  assert.deepEqual(errors, []);
});

test('the timeline shows each job queued and running on one axis, by need level, with the critical path marked', async () => {
  // a → (slow, fast) → join: slow finishes after fast, so the path that decided the run is a, slow, join.
  await stack.api.createWorkflow({
    id: 'timed',
    jobs: {
      a: { run: 'true', labels: ['timed'] },
      slow: { needs: 'a', run: 'true', labels: ['timed'] },
      fast: { needs: 'a', run: 'true', labels: ['timed'] },
      join: { needs: ['slow', 'fast'], run: 'true', labels: ['timed'] },
    },
  });
  await stack.api.run('timed');
  const take = async (id: string) => {
    const c = await stack.api.claim('w-timed', ['timed']);
    assert.equal(c?.job.job_id, id);
    return c!.lease.lease_id;
  };
  const done = async (lease: string) => assert.equal((await stack.api.post(`/api/jobs/${lease}/complete`, { outputs: {} })).status, 200);
  await done(await take('a'));
  const slow = await take('slow');
  await done(await take('fast'));
  await done(slow);
  await done(await take('join'));

  const { page, errors } = await stack.newPage();
  await page.goto(`${stack.url}/#/workflows/timed`);
  await page.locator('[data-job-id="join"][data-state="success"]').waitFor(WAIT);
  // Arrow keys walk the graph: right to the next stage, up and down within one, left back.
  const focused = () => page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('data-job-id'));
  await page.locator('[data-job-id="a"]').focus();
  await page.keyboard.press('ArrowRight');
  const middle = await focused();
  assert.ok(middle === 'slow' || middle === 'fast', `ArrowRight from a goes to the next stage (got ${middle})`);
  const [upper, lower] = (await page.locator('[data-job-id="slow"]').boundingBox())!.y < (await page.locator('[data-job-id="fast"]').boundingBox())!.y ? ['slow', 'fast'] : ['fast', 'slow'];
  await page.locator(`[data-job-id="${upper}"]`).focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await focused(), lower, 'down moves within the stage');
  await page.keyboard.press('ArrowUp');
  assert.equal(await focused(), upper, 'up moves back');
  await page.keyboard.press('ArrowRight');
  assert.equal(await focused(), 'join');
  await page.keyboard.press('ArrowLeft');
  assert.ok(['slow', 'fast'].includes((await focused()) ?? ''), 'ArrowLeft goes back a stage');
  await page.getByRole('button', { name: 'Timeline', exact: true }).click();
  const timeline = page.getByRole('region', { name: 'Timeline' });
  await timeline.waitFor(WAIT);
  const rows = timeline.locator('[data-timeline-job]');
  assert.equal(await rows.count(), 4);
  // By need level: a, then slow and fast (in the order they started), then join.
  assert.deepEqual(await rows.evaluateAll((els: any[]) => els.map((e) => `${e.dataset.timelineJob}@${e.dataset.level}`)), ['a@0', 'slow@1', 'fast@1', 'join@2']);
  assert.deepEqual(await timeline.locator('[data-critical="true"]').evaluateAll((els: any[]) => els.map((e) => e.dataset.timelineJob)), ['a', 'slow', 'join']);
  // Every job has its run bar; the bars follow one another on the axis.
  const left = async (job: string) => Number.parseFloat((await timeline.locator(`[data-timeline-job="${job}"] .bar.run`).getAttribute('style'))!.match(/left: ([\d.]+)%/)![1]!);
  assert.ok((await left('a')) <= (await left('slow')) && (await left('slow')) <= (await left('join')), 'a, then slow, then join');
  await screenshot(page, 'timeline');
  assert.deepEqual(errors, []);
});
