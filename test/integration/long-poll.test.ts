/**
 * Long-poll claims (docs/api.md "POST /api/jobs/claim", `wait_secs`) against a real server over real
 * HTTP: a waiting claim is answered when a job becomes claimable, by whatever made it so, and with
 * `null` at its deadline; a client that goes away while waiting is never left holding a lease.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, request, until } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';

async function serve(t: TestContext, opts: Parameters<typeof startInProcess>[0] = {}) {
  // No periodic look: a waiting claim must be woken by the event that made a job claimable.
  const s = await startInProcess({ claimSweepMs: 600_000, ...opts });
  t.after(() => s.close());
  return Object.assign(s, { c: client(s.url) });
}

/** A claim that waits; the deadline is long, so an answer before it means the claim was woken. */
function waitingClaim(url: string, worker: string, labels: string[], waitSecs = 30, ttl = 30) {
  return request('POST', `${url}/api/jobs/claim`, { worker_id: worker, labels, lease_ttl_secs: ttl, wait_secs: waitSecs });
}

/** Resolves once the server holds `n` waiting claims, so a test acts only after they are parked. */
async function parked(s: { engine: { waitingClaims: number } }, n: number) {
  await until(() => s.engine.waitingClaims >= n, `${n} waiting claims`, 5000, 5);
}

describe('long-poll claim', () => {
  test('a waiting claim is woken by a run that enqueues a fitting job', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'lp', jobs: { only: { run: 'true', labels: ['lp'] } } });
    const pending = waitingClaim(s.url, 'w', ['lp']);
    await parked(s, 1);
    await s.c.run('lp');
    const r = await pending;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.job.job_id, 'only');
    assert.equal(s.engine.waitingClaims, 0);
  });

  test('the lease of a claim that waited says how long (waited_ms), so the worker does not count the wait against its ttl', async (t) => {
    let clock = 1_000_000;
    const s = await serve(t, { now: () => clock });
    await s.c.createWorkflow({ id: 'lw', jobs: { only: { run: 'true', labels: ['lw'] } } });
    const pending = waitingClaim(s.url, 'w', ['lw'], 30, 5);
    await parked(s, 1);
    clock += 4_000;
    await s.c.run('lw');
    const r = await pending;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.lease.waited_ms, 4_000);
    assert.equal(r.body.lease.expires_at_ms - r.body.lease.granted_at_ms, 5_000, 'the ttl runs from the grant');
  });

  test('woken by a completion that unblocks a dependent', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'chain', jobs: { a: { run: 'true', labels: ['ch'] }, b: { run: 'true', needs: 'a', labels: ['ch'] } } });
    await s.c.run('chain');
    const a = (await s.c.claim('w1', ['ch']))!;
    const pending = waitingClaim(s.url, 'w2', ['ch']);
    await parked(s, 1);
    assert.equal((await s.c.post(`/api/jobs/${a.lease.lease_id}/complete`, { outputs: { x: '1' } })).status, 200);
    const r = await pending;
    assert.equal(r.body.job.job_id, 'b');
    assert.deepEqual(r.body.job.upstream_outputs, { a: { x: '1' } });
  });

  test("woken when a retry's backoff ends", async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'retry', jobs: { j: { run: 'x', labels: ['rt'], retries: 1, backoff: { fixed: { delay_secs: 1 } } } } });
    await s.c.run('retry');
    const first = (await s.c.claim('w', ['rt']))!;
    const before = Date.now();
    const failed = await s.c.post(`/api/jobs/${first.lease.lease_id}/fail`, { error: 'flaky', retryable: true });
    assert.equal(failed.body.status, 'queued');
    assert.ok(failed.body.delayed_until_ms >= before + 1000, JSON.stringify(failed.body));
    const r = await waitingClaim(s.url, 'w', ['rt']);
    assert.equal(r.body.job.job_id, 'j');
    assert.equal(r.body.job.attempt, 1);
    assert.ok(Date.now() >= failed.body.delayed_until_ms, 'not handed out before its backoff ended');
  });

  test('woken when the reaper re-queues a lost lease', async (t) => {
    const s = await serve(t, { reapIntervalMs: 100 });
    await s.c.createWorkflow({ id: 'lost', jobs: { j: { run: 'x', labels: ['rp'], retries: 1 } } });
    await s.c.run('lost');
    const gone = (await s.c.claim('dead-worker', ['rp'], 1))!;
    const r = await waitingClaim(s.url, 'w', ['rp']);
    assert.equal(r.body.job.job_id, 'j');
    assert.equal(r.body.job.attempt, 1);
    assert.notEqual(r.body.lease.lease_id, gone.lease.lease_id);
  });

  test('answers null at its deadline when nothing comes', async (t) => {
    const s = await serve(t);
    const r = await waitingClaim(s.url, 'w', ['nothing-here'], 0.3);
    assert.equal(r.status, 200);
    assert.equal(r.text, 'null');
    assert.equal(s.engine.waitingClaims, 0);
  });

  test('many waiters each get a distinct job', async (t) => {
    const s = await serve(t);
    const n = 20;
    const jobs: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) jobs[`j${i}`] = { run: 'true', labels: ['many'] };
    await s.c.createWorkflow({ id: 'many', jobs });
    const waits = Array.from({ length: n + 3 }, (_, i) => waitingClaim(s.url, `w${i}`, ['many', `own-${i}`], 2));
    await parked(s, n + 3);
    await s.c.run('many');
    const answers = await Promise.all(waits);
    const got = answers.filter((r) => r.body !== null).map((r) => r.body.job.job_id as string);
    assert.equal(got.length, n, 'every job handed out');
    assert.equal(new Set(got).size, n, 'no job handed out twice');
    assert.equal(answers.filter((r) => r.text === 'null').length, 3);
  });

  test('a client that disconnects while waiting is never left holding a lease', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'dc', jobs: { j: { run: 'true', labels: ['dc'] } } });
    const abort = new AbortController();
    const sentAt = Date.now();
    const pending = fetch(`${s.url}/api/jobs/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ worker_id: 'leaver', labels: ['dc'], wait_secs: 60 }),
      signal: abort.signal,
    }).catch(() => 'aborted');
    await parked(s, 1);
    abort.abort();
    assert.equal(await pending, 'aborted');
    await until(() => s.engine.waitingClaims === 0, 'the waiter to be dropped', 5000, 5);
    // Dropped because its client left, not because its wait ran out (the longest a claim may wait,
    // which a deadline raised to MIN_DEADLINE_MS would otherwise sit out and pass).
    assert.ok(Date.now() - sentAt < 60_000, 'the waiter stayed until its wait ran out');
    await s.c.run('dc');
    const c = await s.c.claim('stayer', ['dc']);
    assert.equal(c?.job.job_id, 'j', 'the job went to a worker that is still there');
    const leaver = (await s.c.get('/api/workers')).body.find((w: any) => w.worker_id === 'leaver');
    assert.equal(leaver.current_job, null);
  });

  test('wait_secs must be a number from 0 to 60', async (t) => {
    const s = await serve(t);
    for (const bad of [61, -1, '5', null]) {
      const r = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'w', wait_secs: bad });
      assert.equal(r.status, 400, `wait_secs ${JSON.stringify(bad)}: ${r.text}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /wait_secs/);
    }
    const zero = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'w', wait_secs: 0 });
    assert.equal(zero.status, 200);
  });

  test('a waiting claim is a sign of life when it arrives, when it takes a job, and every 10 s while it waits; its other tries write nothing', async (t) => {
    let clock = 1_000_000;
    // A sweep every 20 ms retries each queue's head, as the wake-ups do.
    const s = await serve(t, { now: () => clock, claimSweepMs: 20 });
    const seen = async (worker: string) => {
      const r = await request('GET', `${s.url}/api/workers`);
      return (r.body as Array<{ worker_id: string; last_seen_ms: number }>).find((w) => w.worker_id === worker)?.last_seen_ms;
    };
    await s.c.createWorkflow({ id: 'other', jobs: { o: { run: 'true', labels: ['other'] } } });
    const idle = waitingClaim(s.url, 'idle', ['idle'], 60);
    await parked(s, 1);
    assert.equal(await seen('idle'), 1_000_000, 'its call counts as seen');

    // Within 10 s, its tries record nothing. Its queue is served before the other waiter's, whose
    // answer therefore comes after at least one try of it at this time.
    clock = 1_009_000;
    const other = waitingClaim(s.url, 'taker', ['other']);
    await parked(s, 2);
    clock = 1_009_500;
    await s.c.run('other');
    assert.equal((await other).body.job.job_id, 'o');
    assert.equal(await seen('idle'), 1_000_000, 'a try that took nothing within 10 s wrote nothing');
    assert.equal(await seen('taker'), 1_009_500, 'a try that took a job recorded its worker');

    // 10 s on, a try records it again, so that a worker waiting in a long poll never looks offline.
    clock = 1_010_000;
    await until(async () => (await seen('idle')) === 1_010_000, 'a try of the waiting claim 10 s after its call records its worker', 10_000, 10);
    assert.equal(s.engine.waitingClaims, 1);
    await s.close();
    assert.equal((await idle).text, 'null');
  });

  test('a graceful close answers waiting claims with null at once', async (t) => {
    const s = await startInProcess();
    const pending = waitingClaim(s.url, 'w', ['never'], 60);
    await parked(s, 1);
    await s.close();
    const r = await pending;
    assert.equal(r.text, 'null');
    t.diagnostic('closed while a claim waited');
  });
});
