/**
 * The batched worker paths (docs/api.md "Batches") against a real server over real HTTP: claim many,
 * report many (each on its own, in order, with an optional claim in the same round trip), renew many.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, request, until } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';
import { reportClaimsBeforeWaiters } from '../helpers/report-claims.js';

async function serve(t: TestContext) {
  const s = await startInProcess();
  t.after(() => s.close());
  return Object.assign(s, { c: client(s.url) });
}

function jobsOf(n: number, label: string, extra: Record<string, unknown> = {}) {
  const jobs: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) jobs[`j${i}`] = { run: 'true', labels: [label], ...extra };
  return jobs;
}

describe('POST /api/jobs/claim-batch', () => {
  test('hands out up to max_jobs distinct jobs, oldest first, each exactly as a single claim would', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'cb', jobs: jobsOf(5, 'cb') });
    await s.c.run('cb');
    const first = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['cb'], lease_ttl_secs: 20, max_jobs: 3 });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.claims.map((c: any) => c.job.job_id), ['j0', 'j1', 'j2']);
    for (const c of first.body.claims) {
      assert.equal(c.lease.ttl_secs, 20);
      assert.equal(c.lease.job_id, c.job.job_id);
      assert.equal(c.lease.worker_id, 'w');
      assert.deepEqual(c.job.retry_policy, { max_retries: 0, backoff: 'None' });
    }
    assert.equal(new Set(first.body.claims.map((c: any) => c.lease.lease_id)).size, 3);
    const rest = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['cb'], max_jobs: 10 });
    assert.deepEqual(rest.body.claims.map((c: any) => c.job.job_id), ['j3', 'j4']);
    const none = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['cb'], max_jobs: 10 });
    assert.deepEqual(none.body, { claims: [] });
  });

  test('with wait_secs it waits for jobs, and answers [] at its deadline', async (t) => {
    const s = await serve(t);
    const empty = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['none'], max_jobs: 5, wait_secs: 0.2 });
    assert.deepEqual(empty.body, { claims: [] });
    await s.c.createWorkflow({ id: 'cw', jobs: jobsOf(2, 'cw') });
    const pending = s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['cw'], max_jobs: 5, wait_secs: 30 });
    await until(() => s.engine.waitingClaims === 1, 'the batch claim to wait', 5000, 5);
    await s.c.run('cw');
    const got = await pending;
    assert.deepEqual(got.body.claims.map((c: any) => c.job.job_id).sort(), ['j0', 'j1']);
  });

  test('bad bodies are 400 with the field named', async (t) => {
    const s = await serve(t);
    for (const body of [{ worker_id: 'w', max_jobs: 0 }, { worker_id: 'w', max_jobs: 1001 }, { worker_id: 'w', max_jobs: 2.5 }, { max_jobs: 1 }]) {
      const r = await s.c.post('/api/jobs/claim-batch', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error, 'invalid_request');
    }
  });
});

describe('POST /api/jobs/report-batch', () => {
  test('every report succeeds or fails on its own, answered in order; a stale lease spoils nothing', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'rb', jobs: jobsOf(3, 'rb', { retries: 1 }) });
    await s.c.run('rb');
    const { body } = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['rb'], max_jobs: 3 });
    const [a, b, c] = body.claims.map((x: any) => x.lease.lease_id);
    // c completes first on its own, so its report in the batch is stale.
    assert.equal((await s.c.post(`/api/jobs/${c}/complete`, { outputs: {} })).status, 200);
    const r = await s.c.post('/api/jobs/report-batch', {
      reports: [
        { lease_id: a, outcome: 'complete', outputs: { k: 'v' } },
        { lease_id: c, outcome: 'complete' },
        { lease_id: 'no-such-lease', outcome: 'fail', error: 'x' },
        { lease_id: b, outcome: 'fail', error: 'flaky', retryable: true },
      ],
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.results.map((x: any) => [x.lease_id, x.status, x.error?.error ?? null]),
      [
        [a, 200, null],
        [c, 409, 'lease_completed'],
        ['no-such-lease', 409, 'lease_not_found'],
        [b, 200, null],
      ],
    );
    assert.equal(r.body.results[3].result.status, 'queued');
    assert.equal(r.body.results[3].result.attempt, 1);
    assert.deepEqual(r.body.claims, []);
    const doc = await s.c.status('rb');
    const state = Object.fromEntries(doc.jobs.map((j: any) => [j.id, [j.state, j.attempt]]));
    assert.deepEqual(state, { j0: ['success', 0], j1: ['queued', 1], j2: ['success', 0] });
    assert.deepEqual(doc.jobs[0].outputs, { k: 'v' });
  });

  test('with claim, the jobs a completion unblocks come back in the same round trip', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'next', jobs: { a: { run: 'true', labels: ['nx'] }, b: { run: 'true', needs: 'a', labels: ['nx'] } } });
    await s.c.run('next');
    const a = (await s.c.claim('w', ['nx']))!;
    const r = await s.c.post('/api/jobs/report-batch', {
      reports: [{ lease_id: a.lease.lease_id, outcome: 'complete', outputs: { x: '1' } }],
      claim: { worker_id: 'w', labels: ['nx'], max_jobs: 4 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results[0].status, 200);
    assert.deepEqual(r.body.claims.map((c: any) => c.job.job_id), ['b']);
    assert.deepEqual(r.body.claims[0].job.upstream_outputs, { a: { x: '1' } });
  });

  test("with claim, the job a completion enqueues goes to the report's claim, not to a waiting claim of the same worker or another", async (t) => {
    const s = await serve(t);
    await reportClaimsBeforeWaiters(s.url);
  });

  test('malformed reports are 400 and nothing is applied', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'bad', jobs: jobsOf(1, 'bad') });
    await s.c.run('bad');
    const a = (await s.c.claim('w', ['bad']))!;
    for (const reports of [
      [{ lease_id: a.lease.lease_id, outcome: 'fail' }],
      [{ lease_id: a.lease.lease_id, outcome: 'complete', error: 'x' }],
      [{ lease_id: a.lease.lease_id, outcome: 'finish' }],
      [{ lease_id: a.lease.lease_id, outcome: 'complete', outputs: { n: 1 } }],
    ]) {
      const r = await s.c.post('/api/jobs/report-batch', { reports });
      assert.equal(r.status, 400, `${JSON.stringify(reports)}: ${r.text}`);
      assert.match(r.body.message, /reports/);
    }
    assert.equal((await s.c.jobState('bad', 'j0')).state, 'running');
  });
});

describe('POST /api/jobs/heartbeat-batch', () => {
  test('renews every live lease; a settled one answers as its own heartbeat would', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'hb', jobs: jobsOf(3, 'hb') });
    await s.c.run('hb');
    const { body } = await s.c.post('/api/jobs/claim-batch', { worker_id: 'w', labels: ['hb'], lease_ttl_secs: 5, max_jobs: 3 });
    const ids = body.claims.map((x: any) => x.lease.lease_id);
    const before = body.claims.map((x: any) => x.lease.expires_at_ms);
    await s.c.post(`/api/jobs/${ids[2]}/complete`, { outputs: {} });
    await until(() => Date.now() > before[0] - 4990, 'time to pass', 1000, 2);
    const r = await request('POST', `${s.url}/api/jobs/heartbeat-batch`, { lease_ids: ids });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.results.map((x: any) => x.status), [200, 200, 409]);
    assert.ok(r.body.results[0].lease.expires_at_ms > before[0]);
    assert.equal(r.body.results[2].error.error, 'lease_completed');
  });

  test('a cancelled job answers job_cancelled in its place', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'hc', jobs: jobsOf(1, 'hc') });
    await s.c.run('hc');
    const a = (await s.c.claim('w', ['hc']))!;
    assert.equal((await s.c.post('/api/workflows/hc/cancel')).status, 202);
    const r = await s.c.post('/api/jobs/heartbeat-batch', { lease_ids: [a.lease.lease_id] });
    assert.equal(r.body.results[0].status, 409);
    assert.equal(r.body.results[0].error.error, 'job_cancelled');
  });
});
