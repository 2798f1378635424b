/**
 * GET /metrics (README "Metrics") against a real server with real traffic: claims, completions,
 * failures with and without a retry, a lease the reaper expires and a job it times out, a live log
 * stream and a waiting long-poll claim. The Prometheus text is parsed and every figure checked.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../src/store/index.js';
import { client, request, until } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (format 0.0.4), comments left out. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

class Scrape {
  readonly samples: Sample[];
  constructor(readonly text: string) {
    this.samples = parse(text);
  }

  /** Samples of `name` whose labels include `labels`. */
  all(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The one sample of `name` with these labels; 0 when there is none (a series not yet touched). */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.all(name, labels);
    assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
    return found[0]?.value ?? 0;
  }

  /** weft_jobs by "state/labels", the ones at 0 left out. */
  jobs(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.all('weft_jobs')) if (s.value !== 0) out[`${s.labels.state}/${s.labels.labels}`] = s.value;
    return out;
  }

  counters() {
    return {
      claims: this.value('weft_job_claims_total'),
      completions: this.value('weft_job_completions_total'),
      failures: this.value('weft_job_failures_total'),
      retries: this.value('weft_job_retries_total'),
      expiries: this.value('weft_lease_expiries_total'),
      timeouts: this.value('weft_job_timeouts_total'),
    };
  }
}

async function scrape(url: string): Promise<Scrape> {
  const r = await request('GET', `${url}/metrics`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  return new Scrape(r.text);
}

async function serve(t: TestContext) {
  const s = await startInProcess({ reapIntervalMs: 50 });
  t.after(() => s.close());
  return Object.assign(s, { c: client(s.url) });
}

describe('GET /metrics', () => {
  test('counts what the engine did, times it, and shows the queue by label set', async (t) => {
    const s = await serve(t);
    const other = await serve(t);
    const { c } = s;
    assert.equal((await c.post('/api/workers/register', { worker_id: 'w1', labels: ['linux', 'gpu'] })).status, 200);
    await c.createWorkflow({
      id: 'm',
      jobs: {
        ok: { run: 'true' },
        flaky: { run: 'x', labels: ['linux', 'gpu'], retries: 1 },
        bad: { run: 'x', labels: ['bad'], retries: 3 },
        lost: { run: 'x', labels: ['lost'], retries: 1 },
        slow: { run: 'x', labels: ['slow'], timeout_secs: 1 },
        gate: { approval: { message: 'go?' }, labels: ['ops'] },
      },
    });
    await c.run('m');

    let m = await scrape(s.url);
    assert.deepEqual(m.counters(), { claims: 0, completions: 0, failures: 0, retries: 0, expiries: 0, timeouts: 0 });
    assert.deepEqual(m.jobs(), { 'queued/': 1, 'queued/gpu,linux': 1, 'queued/bad': 1, 'queued/lost': 1, 'queued/slow': 1, 'awaiting_approval/ops': 1 });
    // Approved, an approval alone ends at once: it is no longer counted anywhere.
    assert.equal((await c.post('/api/workflows/m/runs/1/jobs/gate/approve', {})).status, 200);

    const ok = (await c.claim('w1', []))!;
    assert.equal(ok.job.job_id, 'ok');
    m = await scrape(s.url);
    assert.deepEqual(m.jobs(), { 'running/': 1, 'queued/gpu,linux': 1, 'queued/bad': 1, 'queued/lost': 1, 'queued/slow': 1 });
    assert.deepEqual(m.all('weft_jobs', { state: 'awaiting_approval', labels: 'ops' }).map((x) => x.value), [0]);
    const drained = m.all('weft_jobs', { state: 'queued', labels: '' }).map((x) => x.value);
    assert.deepEqual(drained, [0], 'a drained queue reads 0, not a gap');
    assert.equal((await c.post(`/api/jobs/${ok.lease.lease_id}/complete`, { outputs: {} })).status, 200);

    // A retried failure, then the retry succeeds.
    const flaky = (await c.claim('w1', ['linux', 'gpu']))!;
    assert.equal(flaky.job.job_id, 'flaky');
    const failed = await c.post(`/api/jobs/${flaky.lease.lease_id}/fail`, { error: 'flaky', retryable: true });
    assert.equal(failed.body.status, 'queued', failed.text);
    const again = (await c.claim('w1', ['linux', 'gpu']))!;
    assert.equal(again.job.attempt, 1);
    assert.equal((await c.post(`/api/jobs/${again.lease.lease_id}/complete`, { outputs: {} })).status, 200);

    // A failure that is not retried, whatever the budget.
    const bad = (await c.claim('w1', ['bad']))!;
    assert.equal((await c.post(`/api/jobs/${bad.lease.lease_id}/fail`, { error: 'no', retryable: false })).body.status, 'failed');

    // The reaper: a lease that runs out (retried) and an attempt past its timeout (no budget: failed).
    const lost = (await c.claim('w1', ['lost'], 1))!;
    const slow = (await c.claim('w1', ['slow'], 600))!;
    assert.deepEqual([lost.job.job_id, slow.job.job_id], ['lost', 'slow']);
    m = await scrape(s.url);
    assert.deepEqual(m.jobs(), { 'running/lost': 1, 'running/slow': 1 });
    m = await until(async () => {
      const now = await scrape(s.url);
      return now.value('weft_lease_expiries_total') + now.value('weft_job_timeouts_total') === 2 ? now : null;
    }, 'the reaper to expire one lease and time out one job');

    assert.deepEqual(m.counters(), { claims: 6, completions: 2, failures: 2, retries: 2, expiries: 1, timeouts: 1 });
    assert.deepEqual(m.jobs(), { 'queued/lost': 1 }, 'the expired job waits for its retry; the timed-out one failed');
    assert.equal(m.value('weft_job_duration_seconds_count', { outcome: 'success' }), 2);
    assert.equal(m.value('weft_job_duration_seconds_count', { outcome: 'failure' }), 2);
    assert.equal(m.value('weft_job_duration_seconds_bucket', { outcome: 'success', le: '+Inf' }), 2);
    assert.equal(m.value('weft_job_queue_wait_seconds_count'), 6, 'one queue wait per claim');
    assert.ok(m.value('weft_job_queue_wait_seconds_sum') >= 0);
    assert.ok(m.value('weft_store_commit_duration_seconds_count') > 0, 'store commits are timed');

    // HTTP requests by route pattern: never a lease id in a label.
    const completes = m.all('weft_http_request_duration_seconds_count', { route: '/api/jobs/:lease_id/complete' });
    assert.deepEqual(completes.map((x) => [x.labels.method, x.labels.status_code, x.value]), [['POST', '200', 2]]);
    assert.equal(m.value('weft_http_request_duration_seconds_count', { route: '/api/jobs/claim', status_code: '200' }), 6);
    for (const lease of [ok, flaky, again, bad, lost, slow].map((x) => x.lease.lease_id)) {
      assert.ok(!m.text.includes(lease), `lease id ${lease} appears in the metrics`);
    }
    await request('GET', `${s.url}/api/workflows/no-such/status`);
    await request('GET', `${s.url}/no/such/route/at/all`);
    m = await scrape(s.url);
    assert.equal(m.value('weft_http_request_duration_seconds_count', { route: '/api/workflows/:id/status', status_code: '404' }), 1);
    assert.equal(m.value('weft_http_request_duration_seconds_count', { route: 'unmatched', status_code: '404' }), 1);

    // The process's own series come along.
    assert.ok(m.all('nodejs_eventloop_lag_seconds').length === 1, 'event-loop delay');
    assert.ok(m.all('nodejs_eventloop_lag_p99_seconds').length === 1);
    assert.ok(m.all('process_cpu_user_seconds_total').length === 1, 'process metrics');
    assert.match(m.text, /^# TYPE weft_job_claims_total counter$/m);
    assert.match(m.text, /^# TYPE weft_job_duration_seconds histogram$/m);

    // Another server in this process counts only its own work.
    assert.deepEqual((await scrape(other.url)).counters(), { claims: 0, completions: 0, failures: 0, retries: 0, expiries: 0, timeouts: 0 });
  });

  test('open log streams and waiting long-poll claims are gauges', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'g', jobs: { j: { run: 'true', labels: ['never'] } } });
    await s.c.run('g');
    const gauge = async (name: string, labels: Record<string, string> = {}) => (await scrape(s.url)).value(name, labels);
    assert.equal(await gauge('weft_sse_streams', { stream: 'logs' }), 0);
    assert.equal(await gauge('weft_sse_streams', { stream: 'events' }), 0);
    assert.equal(await gauge('weft_claim_waiters'), 0);

    const stream = await openSse(`${s.url}/api/workflows/g/jobs/j/logs/stream`);
    t.after(() => stream.close());
    assert.equal(stream.status, 200);
    await until(async () => (await gauge('weft_sse_streams', { stream: 'logs' })) === 1, 'the stream to be counted');
    stream.close();
    await until(async () => (await gauge('weft_sse_streams', { stream: 'logs' })) === 0, 'the closed stream to be uncounted');
    const events = await openSse(`${s.url}/api/workflows/g/events`);
    t.after(() => events.close());
    assert.equal(events.status, 200);
    await until(async () => (await gauge('weft_sse_streams', { stream: 'events' })) === 1, 'the events stream to be counted');
    events.close();
    await until(async () => (await gauge('weft_sse_streams', { stream: 'events' })) === 0, 'the closed events stream to be uncounted');

    const abort = new AbortController();
    const waiting = fetch(`${s.url}/api/jobs/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ worker_id: 'lp', labels: [], wait_secs: 30 }),
      signal: abort.signal,
    }).catch(() => null);
    await until(async () => (await gauge('weft_claim_waiters')) === 1, 'the waiting claim to be counted');
    abort.abort();
    await waiting;
    await until(async () => (await gauge('weft_claim_waiters')) === 0, 'the abandoned claim to be uncounted');
  });

  test('a store that does not answer leaves the job counts out of the scrape, not the rest', async (t) => {
    const s = await serve(t);
    await s.c.createWorkflow({ id: 'd', jobs: { j: { run: 'true' } } });
    await s.c.run('d');
    assert.deepEqual((await scrape(s.url)).jobs(), { 'queued/': 1 });
    const read = s.store.read.bind(s.store);
    s.store.read = () => Promise.reject(new StoreUnavailableError('database unavailable: no connection (ECONNREFUSED)'));
    t.after(() => {
      s.store.read = read;
    });
    const down = await scrape(s.url);
    assert.deepEqual(down.all('weft_jobs'), []);
    assert.equal(down.all('weft_job_claims_total').length, 1);
    s.store.read = read;
    assert.deepEqual((await scrape(s.url)).jobs(), { 'queued/': 1 }, 'back once the store answers');
  });
});
