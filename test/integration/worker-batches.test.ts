/**
 * The worker's batched paths against a real server: with several slots it claims through
 * claim-batch, reports through report-batch (claiming the next jobs in the same round trip) and keeps
 * every lease with one heartbeat-batch per interval, whose answers also carry cancellations and lost
 * leases. Against a server without the batch endpoints it keeps to the one-job calls.
 *
 * Every request goes through a small HTTP proxy in front of the real server, which records it (and
 * its answer) and can answer 404 for the batch paths, as a server without them does.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { JobAbortedError, PermanentError, Worker, type JobHandler, type WorkerOptions } from '../../src/worker/index.js';
import { client, until } from '../helpers/http.js';
import { sandbox, spawnWeft, startInProcess, track } from '../helpers/server.js';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

interface Seen {
  method: string;
  path: string;
  body: any;
  /** 0 until the answer has come back. */
  status: number;
  answer: any;
}

interface Proxy {
  url: string;
  seen: Seen[];
  /**
   * What to do instead of forwarding: answer a status (404 as a server without the path, 503 as a
   * sick one, 400 as one refusing the body), or forward and then drop the answer ('lose-answer'). 0
   * forwards.
   */
  fake: (path: string) => number | 'lose-answer';
  /** Changes a forwarded JSON answer before the worker sees it; identity by default. */
  rewrite: (path: string, answer: any) => any;
  count(method: string, path: string | RegExp): number;
}

const parse = (b: Buffer) => {
  try {
    return b.length === 0 ? undefined : JSON.parse(b.toString());
  } catch {
    return b.toString();
  }
};

/** Forwards every request to `target` and keeps a record of it; closed when the test ends. */
async function startProxy(t: TestContext, target: string): Promise<Proxy> {
  const seen: Seen[] = [];
  const proxy: Proxy = {
    url: '',
    seen,
    fake: () => 0,
    rewrite: (_path, answer) => answer,
    count: (method, path) => seen.filter((s) => s.method === method && (typeof path === 'string' ? s.path === path : path.test(s.path))).length,
  };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const path = (req.url ?? '/').split('?')[0]!;
      const entry: Seen = { method: req.method ?? 'GET', path, body: parse(body), status: 0, answer: undefined };
      seen.push(entry);
      const fake = proxy.fake(path);
      if (typeof fake === 'number' && fake !== 0) {
        entry.status = fake;
        const body =
          fake === 404
            ? { error: 'not_found', message: `Route ${req.method}:${path} not found` }
            : fake === 400
              ? { error: 'invalid_request', message: 'simulated refusal of the whole body' }
              : { error: 'unavailable', message: 'simulated outage' };
        res.writeHead(fake, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
        return;
      }
      const headers: http.OutgoingHttpHeaders = {};
      if (req.headers['content-type']) headers['content-type'] = req.headers['content-type'];
      const up = http.request(target + req.url, { method: req.method, headers }, (answer) => {
        const out: Buffer[] = [];
        answer.on('data', (c: Buffer) => out.push(c));
        answer.on('end', () => {
          const text = Buffer.concat(out);
          entry.status = answer.statusCode ?? 0;
          entry.answer = parse(text);
          // The server has done the work; the worker never hears of it.
          if (fake === 'lose-answer') return res.destroy();
          const h: http.OutgoingHttpHeaders = {};
          if (answer.headers['content-type']) h['content-type'] = answer.headers['content-type'];
          res.writeHead(entry.status, h);
          const rewritten = proxy.rewrite(path, entry.answer);
          res.end(rewritten === entry.answer ? text : JSON.stringify(rewritten));
        });
      });
      up.on('error', () => res.destroy());
      // The worker gave up on its request (a stopped long poll, say): the server must see it leave too.
      res.on('close', () => {
        if (!res.writableEnded) up.destroy();
      });
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return proxy;
}

const BATCH_PATHS = /^\/api\/jobs\/(claim|report|heartbeat)-batch$/;
/** The interface's one-job calls of the worker protocol. */
const SINGLE_PATHS = /^\/api\/jobs\/(claim|[^/]+\/(heartbeat|complete|fail))$/;
const CANCEL_POLL = /^\/api\/jobs\/[^/]+\/[^/]+\/cancelled$/;

async function setup(t: TestContext, opts: { reapIntervalMs?: number } = {}) {
  const srv = await startInProcess(opts);
  t.after(() => srv.close());
  const proxy = await startProxy(t, srv.url);
  return { srv, proxy, api: client(srv.url) };
}

/** A started worker talking to the server through the proxy, stopped (aborting) when the test ends. */
async function startWorker(t: TestContext, proxy: Proxy, handler: JobHandler, opts: Partial<WorkerOptions> = {}) {
  const w = new Worker({ serverUrl: proxy.url, concurrency: 4, pollSecs: 0.05, logger: silent, handler, ...opts });
  t.after(() => w.stop({ abort: true }));
  await w.start();
  return w;
}

async function createAndRun(api: ReturnType<typeof client>, def: { id: string; [key: string]: unknown }) {
  await api.createWorkflow(def);
  await api.run(def.id);
}

const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

/** Resolves with the signal's reason once it aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

/** The heartbeat-batch answers' elements for `leaseId`, in the order they came back. */
function renewalsOf(proxy: Proxy, leaseId: string): any[] {
  return proxy.seen
    .filter((s) => s.path === '/api/jobs/heartbeat-batch' && s.status === 200)
    .flatMap((s) => s.answer.results.filter((r: any) => r.lease_id === leaseId));
}

/** `workflow/job` → lease id, for every job claimed through claim-batch or report-batch. */
function leasesByJob(proxy: Proxy): Map<string, string> {
  const m = new Map<string, string>();
  for (const s of proxy.seen) {
    for (const c of s.answer?.claims ?? []) m.set(`${c.job.workflow_id}/${c.job.job_id}`, c.lease.lease_id);
  }
  return m;
}

// ------------------------------------------------------------------------------------------ tests

test('with CONCURRENCY 4, claims, reports and lease renewals go through the batch endpoints only', async (t) => {
  const { proxy, api } = await setup(t);
  let running = 0;
  let maxRunning = 0;
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const firstWave = new Set<string>();
  const w = await startWorker(
    t,
    proxy,
    async (job, ctx) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (firstWave.size < 4) firstWave.add(ctx.lease.lease_id);
        await gate;
        return { job: job.job_id };
      } finally {
        running--;
      }
    },
    { heartbeatSecs: 0.2, cancelPollSecs: 0.2 },
  );
  const ids = Array.from({ length: 8 }, (_, i) => `j${i}`);
  await createAndRun(api, { id: 'wide', jobs: Object.fromEntries(ids.map((id) => [id, { run: 'u' }])) });
  // The first four run until each of their leases has been renewed, then finish together.
  await until(
    () => firstWave.size === 4 && [...firstWave].every((id) => renewalsOf(proxy, id).some((r) => r.status === 200)),
    'the first four leases to be renewed',
    5000,
  );
  openGate();
  const doc = await api.settled('wide');
  assert.equal(doc.status, 'success');
  for (const id of ids) assert.deepEqual(jobOf(doc, id).outputs, { job: id });
  await until(() => w.stats.succeeded === 8, 'the worker to count eight successes', 5000, 5);
  assert.deepEqual({ ...w.stats }, { claimed: 8, succeeded: 8, failed: 0, abandoned: 0, running: 0 });
  assert.ok(maxRunning <= 4, `${maxRunning} jobs ran at once`);
  assert.equal(maxRunning, 4, 'all four slots were used');

  const paths = proxy.seen.map((s) => `${s.method} ${s.path}`);
  assert.equal(proxy.seen.filter((s) => SINGLE_PATHS.test(s.path)).length, 0, `one-job calls were made: ${paths.join(', ')}`);
  assert.equal(proxy.count('GET', CANCEL_POLL), 0, 'no cancellation polls: the lease renewals carry cancellations');
  assert.ok(proxy.count('POST', '/api/jobs/claim-batch') >= 1, paths.join(', '));
  assert.ok(proxy.count('POST', '/api/jobs/heartbeat-batch') >= 1, paths.join(', '));
  const firstClaim = proxy.seen.find((s) => s.path === '/api/jobs/claim-batch')!;
  assert.equal(firstClaim.body.max_jobs, 4, 'one claim for all free slots');
  assert.ok(firstClaim.body.wait_secs > 0, 'the claim is a long poll');
  for (const c of proxy.seen.filter((s) => s.path === '/api/jobs/claim-batch')) assert.ok(c.body.max_jobs <= 4, JSON.stringify(c.body));

  const reports = proxy.seen.filter((s) => s.path === '/api/jobs/report-batch');
  assert.deepEqual(reports.flatMap((r) => r.body.reports.map((x: any) => x.outcome)), Array(8).fill('complete'));
  const together = Math.max(...reports.map((r) => r.body.reports.length));
  assert.ok(together >= 2, `reports finishing together shared a request (largest: ${together})`);
  // Complete-and-claim-next: the reports of the first wave brought the next jobs back with them.
  const claimedAlong = reports.filter((r) => r.body.claim && r.answer?.claims?.length > 0);
  assert.ok(claimedAlong.length >= 1, JSON.stringify(reports.map((r) => [r.body.reports.length, r.body.claim, r.answer?.claims?.length])));
  for (const r of reports) if (r.body.claim) assert.ok(r.body.claim.max_jobs <= 4 && r.body.claim.wait_secs === undefined, JSON.stringify(r.body.claim));
});

test('failures through report-batch: a retry is re-queued, a PermanentError and a spent budget fail, outputs land', async (t) => {
  const { proxy, api } = await setup(t);
  const w = await startWorker(t, proxy, async (job) => {
    if (job.job_id === 'flaky' && job.attempt === 0) throw new Error('flaky at attempt 0');
    if (job.job_id === 'perm') throw new PermanentError('bad input');
    if (job.job_id === 'spent') throw new Error('no retries left');
    return { attempt: String(job.attempt) };
  });
  const events: string[] = [];
  w.on('job:done', (e) => events.push(`done ${e.job.job_id}@${e.job.attempt} ${e.status}`));
  w.on('job:failed', (e) => events.push(`failed ${e.job.job_id}@${e.job.attempt} ${e.status} retryable=${e.retryable}`));
  await createAndRun(api, {
    id: 'fails',
    jobs: {
      flaky: { retries: 1, run: 'u' },
      perm: { retries: 3, run: 'u' },
      spent: { run: 'u' },
      ok: { run: 'u' },
      after: { needs: 'flaky', run: 'u' },
    },
  });
  const doc = await api.settled('fails');
  assert.equal(jobOf(doc, 'flaky').state, 'success');
  assert.equal(jobOf(doc, 'flaky').attempt, 1);
  assert.deepEqual(jobOf(doc, 'flaky').outputs, { attempt: '1' });
  assert.deepEqual(jobOf(doc, 'ok').outputs, { attempt: '0' });
  assert.deepEqual(jobOf(doc, 'after').outputs, { attempt: '0' });
  assert.equal(jobOf(doc, 'perm').state, 'failed');
  assert.equal(jobOf(doc, 'perm').attempt, 0, 'no retry for a PermanentError');
  assert.equal(jobOf(doc, 'perm').error, 'bad input');
  assert.equal(jobOf(doc, 'spent').state, 'failed');
  assert.equal(jobOf(doc, 'spent').error, 'no retries left');

  await until(() => events.length === 6, 'six report events', 5000, 5);
  assert.deepEqual(events.sort(), [
    'done after@0 success',
    'done flaky@1 success',
    'done ok@0 success',
    'failed flaky@0 queued retryable=true',
    'failed perm@0 failed retryable=false',
    'failed spent@0 failed retryable=true',
  ]);
  const sent = proxy.seen.filter((s) => s.path === '/api/jobs/report-batch').flatMap((s) => s.body.reports);
  const fails = sent.filter((r: any) => r.outcome === 'fail').map((r: any) => [r.error, r.retryable]);
  assert.deepEqual(fails.sort(), [
    ['bad input', false],
    ['flaky at attempt 0', true],
    ['no retries left', true],
  ]);
  assert.equal(proxy.seen.filter((s) => SINGLE_PATHS.test(s.path)).length, 0);
});

test('a result too large for the server goes alone, is refused and becomes a failure; the results finishing with it land', async (t) => {
  const { proxy, api } = await setup(t);
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  let started = 0;
  const w = await startWorker(t, proxy, async (job) => {
    if (++started === 3) openGate();
    await gate;
    // Over the server's 1 MB body limit, alone or in a batch.
    return job.job_id === 'huge' ? { blob: 'x'.repeat(1_200_000) } : { small: job.job_id };
  });
  await createAndRun(api, { id: 'refused', jobs: { huge: { run: 'u' }, a: { run: 'u' }, b: { run: 'u' } } });
  const doc = await api.settled('refused');
  assert.deepEqual(jobOf(doc, 'a').outputs, { small: 'a' });
  assert.deepEqual(jobOf(doc, 'b').outputs, { small: 'b' });
  assert.equal(jobOf(doc, 'huge').state, 'failed');
  assert.match(jobOf(doc, 'huge').error, /the server refused the job's result: 413/);
  await until(() => w.stats.succeeded === 2 && w.stats.failed === 1, 'the worker to count the reports', 5000, 5);
  const batches = proxy.seen.filter((s) => s.path === '/api/jobs/report-batch');
  const leaseOf = (id: string) => leasesByJob(proxy).get(`refused/${id}`);
  const huge = leaseOf('huge');
  // Too big to share a request: sent alone, refused as a whole (413), then tried on its own call.
  const refused = batches.filter((b) => b.status === 413);
  assert.deepEqual(refused.map((b) => b.body.reports.map((r: any) => r.lease_id)), [[huge]]);
  assert.deepEqual(proxy.seen.filter((s) => /\/complete$/.test(s.path)).map((s) => [s.path, s.status]), [[`/api/jobs/${huge}/complete`, 413]]);
  const landed = batches.filter((b) => b.status === 200).flatMap((b) => b.body.reports.map((r: any) => `${r.outcome} ${r.lease_id}`));
  assert.deepEqual(landed.sort(), [`complete ${leaseOf('a')}`, `complete ${leaseOf('b')}`, `fail ${huge}`].sort());
});

test('a report batch refused as a whole (400) is sent again report by report on the one-job calls', async (t) => {
  const { proxy, api } = await setup(t);
  let refusals = 0;
  proxy.fake = (path) => (path === '/api/jobs/report-batch' && refusals++ === 0 ? 400 : 0);
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  let started = 0;
  const w = await startWorker(t, proxy, async (job) => {
    if (++started === 3) openGate();
    await gate;
    return { id: job.job_id };
  });
  await createAndRun(api, { id: 'whole', jobs: { a: { run: 'u' }, b: { run: 'u' }, c: { run: 'u' } } });
  const doc = await api.settled('whole');
  for (const id of ['a', 'b', 'c']) assert.deepEqual(jobOf(doc, id).outputs, { id });
  await until(() => w.stats.succeeded === 3, 'the worker to count three successes', 5000, 5);
  const first = proxy.seen.find((s) => s.path === '/api/jobs/report-batch')!;
  assert.equal(first.status, 400);
  assert.equal(first.body.reports.length, 3, 'the three finished together');
  assert.deepEqual(
    proxy.seen.filter((s) => /\/complete$/.test(s.path)).map((s) => s.status),
    [200, 200, 200],
  );
});

test('a report batch whose answer was lost is sent again; the 409 lease_completed / lease_failed it meets counts as landed', async (t) => {
  const { proxy, api } = await setup(t);
  let sent = 0;
  proxy.fake = (path) => (path === '/api/jobs/report-batch' && sent++ === 0 ? 'lose-answer' : 0);
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  let started = 0;
  const w = await startWorker(
    t,
    proxy,
    async (job) => {
      if (++started === 2) openGate();
      await gate;
      if (job.job_id === 'bad') throw new PermanentError('bad input');
      return { v: '1' };
    },
    { maxBackoffSecs: 0.1 },
  );
  const events: string[] = [];
  w.on('job:done', (e) => events.push(`done ${e.job.job_id} ${e.status}`));
  w.on('job:failed', (e) => events.push(`failed ${e.job.job_id} ${e.status} retryable=${e.retryable}`));
  w.on('job:abandoned', (e) => events.push(`abandoned ${e.job.job_id} ${e.reason}`));
  await createAndRun(api, { id: 'lost-answer', jobs: { ok: { run: 'u' }, bad: { run: 'u' } } });
  const doc = await api.settled('lost-answer');
  assert.deepEqual(jobOf(doc, 'ok').outputs, { v: '1' });
  assert.equal(jobOf(doc, 'bad').state, 'failed');
  await until(() => events.length === 2, 'both reports to be settled', 5000, 5);
  assert.deepEqual(events.sort(), ['done ok success', 'failed bad failed retryable=false']);
  const batches = proxy.seen.filter((s) => s.path === '/api/jobs/report-batch');
  assert.equal(batches[0]!.body.reports.length, 2);
  assert.equal(batches[0]!.status, 200, 'the first batch was applied; only its answer went missing');
  const retried = batches.slice(1).flatMap((b) => b.answer.results.map((r: any) => r.error?.error));
  assert.deepEqual(retried.sort(), ['lease_completed', 'lease_failed']);
  assert.deepEqual({ ...w.stats, running: 0 }, { claimed: 2, succeeded: 1, failed: 1, abandoned: 0, running: 0 });
});

test('a cancelled job is aborted through the batch lease renewal; the other jobs keep their leases', async (t) => {
  const { proxy, api } = await setup(t);
  let reason: unknown;
  let release!: () => void;
  const keepGoing = new Promise<void>((r) => (release = r));
  const leases: Record<string, string> = {};
  const w = await startWorker(
    t,
    proxy,
    async (job, ctx) => {
      leases[job.workflow_id] = ctx.lease.lease_id;
      if (job.workflow_id === 'doomed') {
        reason = await aborted(ctx.signal);
        return { should: 'not be stored' };
      }
      await keepGoing;
      return { kept: 'yes' };
    },
    // No cancellation poll could find it within the test: only the renewal can.
    { heartbeatSecs: 0.2, cancelPollSecs: 0.2 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(`${e.job.workflow_id} ${e.reason}`));
  await createAndRun(api, { id: 'doomed', jobs: { j: { run: 'u' } } });
  await createAndRun(api, { id: 'kept', jobs: { j: { run: 'u' } } });
  await until(() => leases.doomed && leases.kept, 'both jobs to run');
  assert.equal((await api.post('/api/workflows/doomed/cancel')).status, 202);
  await until(() => abandoned.length === 1, 'the cancelled job to be abandoned', 5000);
  assert.deepEqual(abandoned, ['doomed cancelled']);
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'cancelled');
  const told = renewalsOf(proxy, leases.doomed!).find((r) => r.status !== 200);
  assert.equal(told?.status, 409);
  assert.equal(told?.error?.error, 'job_cancelled');
  assert.equal(proxy.count('GET', CANCEL_POLL), 0, 'found by the renewal, not by a poll');

  // The other lease is still renewed after the cancel, then its job finishes normally.
  const before = renewalsOf(proxy, leases.kept!).length;
  await until(() => renewalsOf(proxy, leases.kept!).length > before + 1, 'the other lease to be renewed again', 5000);
  assert.ok(renewalsOf(proxy, leases.kept!).every((r) => r.status === 200));
  release();
  assert.deepEqual(jobOf(await api.settled('kept'), 'j').outputs, { kept: 'yes' });
  const doomed = jobOf(await api.status('doomed'), 'j');
  assert.equal(doomed.state, 'cancelled');
  assert.deepEqual(doomed.outputs, {});
  assert.equal(proxy.seen.filter((s) => SINGLE_PATHS.test(s.path)).length, 0);
});

test('a lease the server voids (the job outlived timeout_secs) is lost through the batch renewal, and only that one', async (t) => {
  const { proxy, api } = await setup(t);
  // The worker would stop the job at its timeout itself (test/integration/worker-timeout.test.ts);
  // kept from knowing the timeout, it can only learn of it from the server, which is what this tests.
  const hideTimeouts = (x: any): any =>
    Array.isArray(x) ? x.map(hideTimeouts) : x && typeof x === 'object' ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, k === 'timeout_secs' ? null : hideTimeouts(v)])) : x;
  proxy.rewrite = (path, answer) => (BATCH_PATHS.test(path) ? hideTimeouts(answer) : answer);
  let reason: unknown;
  const leases: Record<string, string> = {};
  const w = await startWorker(
    t,
    proxy,
    async (job, ctx) => {
      leases[job.workflow_id] = ctx.lease.lease_id;
      if (job.workflow_id === 'slow') {
        reason = await aborted(ctx.signal);
        return {};
      }
      // Runs on past the other job's end, keeping its own lease.
      await until(() => reason !== undefined, 'the slow job to lose its lease', 10_000, 10);
      return { fine: 'yes' };
    },
    { heartbeatSecs: 0.2, cancelPollSecs: 0.2, leaseTtlSecs: 10 },
  );
  const abandoned: { wf: string; reason: string; detail: string }[] = [];
  w.on('job:abandoned', (e) => abandoned.push({ wf: e.job.workflow_id, reason: e.reason, detail: e.detail }));
  await createAndRun(api, { id: 'slow', jobs: { j: { run: 'u', timeout_secs: 1 } } });
  await createAndRun(api, { id: 'fine', jobs: { j: { run: 'u' } } });
  const slow = await api.settled('slow');
  assert.equal(jobOf(slow, 'j').state, 'failed');
  assert.match(jobOf(slow, 'j').error, /timed out after 1s/);
  await until(() => abandoned.length === 1, 'the slow job to be abandoned', 5000);
  assert.equal(abandoned[0]!.wf, 'slow');
  assert.equal(abandoned[0]!.reason, 'lease_lost');
  assert.match(abandoned[0]!.detail, /exceeded its timeout/);
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'lease_lost');
  assert.equal(renewalsOf(proxy, leases.slow!).find((r) => r.status !== 200)?.error?.error, 'lease_timed_out');
  assert.deepEqual(jobOf(await api.settled('fine'), 'j').outputs, { fine: 'yes' });
  await until(() => w.stats.succeeded === 1, 'the other job to be reported', 5000, 5);
  assert.equal(w.stats.abandoned, 1);
});

test('while heartbeat-batch fails, each lease runs out locally and its job is given up, then run again', async (t) => {
  const { proxy, api } = await setup(t, { reapIntervalMs: 100 });
  let sick = true;
  proxy.fake = (path) => (sick && path === '/api/jobs/heartbeat-batch' ? 503 : 0);
  const reasons: unknown[] = [];
  const w = await startWorker(
    t,
    proxy,
    async (job, ctx) => {
      if (job.attempt > 0) return { attempt: String(job.attempt) };
      reasons.push(await aborted(ctx.signal));
      if (reasons.length === 2) sick = false;
    },
    { leaseTtlSecs: 2, heartbeatSecs: 0.3, cancelPollSecs: 0.3 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'sick', jobs: { a: { retries: 1, run: 'u' }, b: { retries: 1, run: 'u' } } });
  const doc = await api.settled('sick', 15_000);
  for (const id of ['a', 'b']) {
    assert.equal(jobOf(doc, id).state, 'success');
    assert.equal(jobOf(doc, id).attempt, 1, 'the lost attempt counted as a retry');
  }
  assert.deepEqual(abandoned, ['lease_lost', 'lease_lost']);
  for (const r of reasons) {
    assert.ok(r instanceof JobAbortedError);
    assert.match(r.message, /lease expired/);
  }
  assert.ok(proxy.seen.filter((s) => s.path === '/api/jobs/heartbeat-batch' && s.status === 503).length >= 2, 'renewals were retried');
  assert.equal(proxy.seen.filter((s) => SINGLE_PATHS.test(s.path)).length, 0, 'a failing batch path is no reason to leave batches');
});

test('against a server without the batch endpoints (404), the worker keeps to the one-job calls for good', async (t) => {
  const { proxy, api } = await setup(t);
  proxy.fake = (path) => (BATCH_PATHS.test(path) ? 404 : 0);
  let running = 0;
  let maxRunning = 0;
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  let reason: unknown;
  const w = await startWorker(
    t,
    proxy,
    async (job, ctx) => {
      if (job.workflow_id === 'old-cancel') {
        reason = await aborted(ctx.signal);
        return {};
      }
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (running === 3) openGate();
        await gate;
        if (job.job_id === 'bad') throw new PermanentError('bad input');
        return { job: job.job_id };
      } finally {
        running--;
      }
    },
    { heartbeatSecs: 0.2, cancelPollSecs: 0.2 },
  );
  await createAndRun(api, { id: 'old', jobs: { a: { run: 'u' }, b: { run: 'u' }, bad: { run: 'u' } } });
  const doc = await api.settled('old');
  assert.deepEqual(jobOf(doc, 'a').outputs, { job: 'a' });
  assert.deepEqual(jobOf(doc, 'b').outputs, { job: 'b' });
  assert.equal(jobOf(doc, 'bad').state, 'failed');
  assert.equal(maxRunning, 3, 'the slots still run side by side');

  // Cancellation is found by the per-job poll (or heartbeat) again.
  await createAndRun(api, { id: 'old-cancel', jobs: { j: { run: 'u' } } });
  await until(async () => jobOf(await api.status('old-cancel'), 'j').state === 'running', 'the job to run');
  await api.post('/api/workflows/old-cancel/cancel');
  await until(() => reason !== undefined, 'the cancelled job to be aborted', 5000);
  assert.equal((reason as JobAbortedError).reason, 'cancelled');
  await until(() => w.stats.succeeded === 2 && w.stats.failed === 1 && w.stats.abandoned === 1, 'every job to settle', 5000, 5);

  const batch = proxy.seen.filter((s) => BATCH_PATHS.test(s.path));
  assert.deepEqual(
    batch.map((s) => `${s.path} ${s.status}`),
    ['/api/jobs/claim-batch 404'],
    'asked once, then never again',
  );
  assert.ok(proxy.count('POST', '/api/jobs/claim') >= 4);
  assert.ok(proxy.count('POST', /\/complete$/) === 2 && proxy.count('POST', /\/fail$/) === 1);
  assert.ok(proxy.count('POST', /\/heartbeat$/) + proxy.count('GET', CANCEL_POLL) >= 1, 'per-job heartbeats and cancellation polls');
});

test('a server that answers 404 for heartbeat-batch mid-run: running jobs go back to their own heartbeats and keep their leases', async (t) => {
  const { proxy, api } = await setup(t);
  let released = false;
  const w = await startWorker(
    t,
    proxy,
    async () => {
      // Longer than two lease ttls: the lease must be kept by whatever heartbeats remain.
      await until(() => released, 'the test to release the job', 10_000, 10);
      return { done: 'yes' };
    },
    { leaseTtlSecs: 1, heartbeatSecs: 0.3, cancelPollSecs: 0.3 },
  );
  await createAndRun(api, { id: 'handover', jobs: { a: { run: 'u' }, b: { run: 'u' } } });
  await until(() => w.stats.running === 2, 'both jobs to run');
  await until(() => proxy.seen.some((s) => s.path === '/api/jobs/heartbeat-batch' && s.status === 200), 'a batch renewal');
  proxy.fake = (path) => (path === '/api/jobs/heartbeat-batch' ? 404 : 0);
  await until(() => proxy.count('POST', /\/heartbeat$/) >= 4, 'per-job heartbeats for both leases', 5000);
  const at = proxy.seen.length;
  await until(() => proxy.seen.slice(at).filter((s) => /\/heartbeat$/.test(s.path) && s.status === 200).length >= 4, 'more per-job heartbeats', 5000);
  released = true;
  const doc = await api.settled('handover');
  for (const id of ['a', 'b']) {
    assert.equal(jobOf(doc, id).state, 'success');
    assert.equal(jobOf(doc, id).attempt, 0, 'no lease was lost on the way');
  }
  await until(() => w.stats.succeeded === 2, 'both reports', 5000, 5);
  assert.equal(w.stats.abandoned, 0);
  assert.equal(proxy.count('POST', /\/complete$/), 2, 'reports use the one-job calls now too');
  assert.equal(proxy.seen.filter((s) => s.path === '/api/jobs/heartbeat-batch' && s.status === 404).length, 1);
});

test('stop({ abort: true }) with batches: the shutdown failures go out through report-batch and the jobs are re-queued', async (t) => {
  const { proxy, api } = await setup(t);
  const w = await startWorker(t, proxy, async (_job, ctx) => {
    throw await aborted(ctx.signal);
  });
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'abort', jobs: { a: { retries: 1, run: 'u' }, b: { retries: 1, run: 'u' } } });
  await until(() => w.stats.running === 2, 'both jobs to run');
  await w.stop({ abort: true });
  assert.deepEqual(abandoned, ['shutdown', 'shutdown']);
  const doc = await api.status('abort');
  for (const id of ['a', 'b']) {
    assert.equal(jobOf(doc, id).state, 'queued', 're-queued at once, not after the lease runs out');
    assert.match(jobOf(doc, id).error, /shut down/);
  }
  const fails = proxy.seen.filter((s) => s.path === '/api/jobs/report-batch').flatMap((s) => s.body.reports);
  assert.equal(fails.length, 2);
  assert.ok(fails.every((r: any) => r.outcome === 'fail' && r.retryable === true));
  assert.ok(proxy.seen.filter((s) => s.path === '/api/jobs/report-batch').every((s) => s.body.claim === undefined), 'nothing claimed while stopping');
});

test('`weft worker` with CONCURRENCY=3 uses the batch endpoints', async (t) => {
  const sb = sandbox(t, 'weft-batches-');
  const { proxy, api } = await setup(t);
  const w = track(
    t,
    spawnWeft(
      ['worker'],
      {
        SERVER_URL: proxy.url,
        CONCURRENCY: '3',
        LEASE_TTL_SECS: '3',
        HEARTBEAT_SECS: '0.3',
        CANCEL_POLL_SECS: undefined,
        WORKER_LABELS: undefined,
        WORKER_ID: 'batcher',
        POLL_SECS: '0.2',
        LONG_POLL_SECS: undefined,
      },
      sb.dir,
    ),
  );
  await w.waitFor(/weft worker batcher started/);
  const run = 'sleep 1; echo "::set-output id=$WEFT_JOB_ID"';
  await createAndRun(api, { id: 'spawned', jobs: { a: { run }, b: { run }, c: { run }, d: { needs: ['a', 'b', 'c'], run } } });
  const doc = await api.settled('spawned', 20_000);
  assert.equal(doc.status, 'success');
  for (const id of ['a', 'b', 'c', 'd']) assert.deepEqual(jobOf(doc, id).outputs, { id });
  assert.ok(proxy.count('POST', '/api/jobs/claim-batch') >= 1);
  assert.ok(proxy.count('POST', '/api/jobs/heartbeat-batch') >= 1);
  await until(() => proxy.seen.filter((s) => s.path === '/api/jobs/report-batch' && s.status === 200).flatMap((s) => s.body.reports).length === 4, 'the four reports', 5000);
  assert.equal(proxy.seen.filter((s) => SINGLE_PATHS.test(s.path)).length, 0);
  assert.equal(proxy.count('GET', CANCEL_POLL), 0);
});
