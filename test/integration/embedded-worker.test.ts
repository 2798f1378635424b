/**
 * The embeddable `Worker` in-process, with TypeScript handlers, against a real in-process server:
 * outputs and upstream outputs, ctx.log chunks, retries and PermanentError, cancellation through
 * ctx.signal (cancel poll and heartbeat 409), a lost lease, report retries, and stop() (drain and abort).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { WorkflowClient } from '../../src/client/client.js';
import type { ClaimedJob } from '../../src/engine/engine.js';
import { JobAbortedError, PermanentError, Worker, type JobHandler, type WorkerOptions } from '../../src/worker/index.js';
import { client, until } from '../helpers/http.js';
import { startInProcess, type InProcessServer } from '../helpers/server.js';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

async function setup(t: TestContext, opts: { reapIntervalMs?: number } = {}) {
  const srv = await startInProcess({ reapIntervalMs: opts.reapIntervalMs });
  t.after(() => srv.close());
  return { srv, api: client(srv.url) };
}

/** A started worker, stopped (aborting what still runs) when the test ends. */
async function startWorker(t: TestContext, srv: InProcessServer, handler: JobHandler, opts: Partial<WorkerOptions> = {}) {
  const w = new Worker({ serverUrl: srv.url, pollSecs: 0.05, cancelPollSecs: 0.2, logger: silent, handler, ...opts });
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

test('outputs: returned, setOutput and ::set-output lines; downstream handlers see them in ctx.upstream', async (t) => {
  const { srv, api } = await setup(t);
  const seen: Record<string, unknown> = {};
  const w = await startWorker(t, srv, async (job, ctx) => {
    seen[job.job_id] = { upstream: ctx.upstream, attempt: ctx.attempt, env: job.env, lease: ctx.lease.lease_id };
    if (job.job_id === 'build') {
      ctx.log('::set-output from_log=L');
      ctx.setOutput('from_set', 'S');
      return { version: '1.2.3', from_set: 'returned wins' };
    }
    const up = ctx.upstream.build!;
    return { next: `${up.version}+1`, count: 3 as unknown as string };
  });
  const starts: string[] = [];
  w.on('job:start', (e) => starts.push(e.job.job_id));
  await createAndRun(api, { id: 'emb', env: { A: '1' }, jobs: { build: { run: 'unused' }, use: { needs: 'build', run: 'unused' } } });
  const doc = await api.settled('emb');
  assert.equal(doc.status, 'success');
  assert.deepEqual(jobOf(doc, 'build').outputs, { from_log: 'L', from_set: 'returned wins', version: '1.2.3' });
  assert.deepEqual(jobOf(doc, 'use').outputs, { next: '1.2.3+1', count: '3' });
  assert.deepEqual((seen.use as any).upstream, { build: { from_log: 'L', from_set: 'returned wins', version: '1.2.3' } });
  assert.deepEqual((seen.build as any).env, { A: '1' });
  assert.equal((seen.build as any).attempt, 0);
  assert.deepEqual(starts, ['build', 'use']);
  assert.equal(w.stats.succeeded, 2);
  assert.equal(jobOf(doc, 'build').worker_id, w.workerId);
});

test('ctx.log: chunks stored in order with streams, shipped while the handler runs, many batches', async (t) => {
  const { srv, api } = await setup(t);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  await startWorker(t, srv, async (_job, ctx) => {
    ctx.log('first');
    ctx.log('oops\n', 'stderr');
    await gate;
    for (let i = 0; i < 2500; i++) ctx.log(`line ${i}`);
  });
  await createAndRun(api, { id: 'logs', jobs: { j: { run: 'unused' } } });
  // The first chunks show up while the handler is still blocked (shipped within ~250 ms).
  const early = await until(
    async () => {
      const r = await api.get('/api/workflows/logs/jobs/j/logs');
      return r.body.length === 2 ? r.body : null;
    },
    'the first chunks to arrive while the job runs',
    3000,
  );
  assert.deepEqual(
    early.map((c: any) => [c.sequence, c.stream, c.data]),
    [
      [0, 'stdout', 'first\n'],
      [1, 'stderr', 'oops\n'],
    ],
  );
  assert.equal(jobOf(await api.status('logs'), 'j').status, 'running');
  release();
  assert.equal((await api.settled('logs')).status, 'success');
  const all = (await api.get('/api/workflows/logs/jobs/j/logs')).body as any[];
  assert.equal(all.length, 2502);
  all.forEach((c, i) => assert.equal(c.sequence, i));
  assert.equal(all[2501].data, 'line 2499\n');
});

test('a thrown error is retried, then failed; a PermanentError fails at once', async (t) => {
  const { srv, api } = await setup(t);
  const failures: { job: string; retryable: boolean; error: string; status: string }[] = [];
  const w = await startWorker(t, srv, async (job: ClaimedJob) => {
    if (job.job_id === 'flaky') throw new Error(`boom at attempt ${job.attempt}`);
    if (job.job_id === 'perm') throw new PermanentError(`bad input ${'x'.repeat(10_000)}`);
    return {};
  });
  w.on('job:failed', (e) => failures.push({ job: e.job.job_id, retryable: e.retryable, error: e.error, status: e.status }));
  await createAndRun(api, { id: 'f1', jobs: { flaky: { retries: 1, run: 'u' }, down: { needs: 'flaky', run: 'u' } } });
  const doc = await api.settled('f1');
  assert.equal(jobOf(doc, 'flaky').status, 'failed');
  assert.equal(jobOf(doc, 'flaky').attempt, 1);
  assert.equal(jobOf(doc, 'flaky').error, 'boom at attempt 1');
  assert.equal(jobOf(doc, 'down').status, 'skipped');

  await createAndRun(api, { id: 'f2', jobs: { perm: { retries: 3, run: 'u' } } });
  const perm = jobOf(await api.settled('f2'), 'perm');
  assert.equal(perm.status, 'failed');
  assert.equal(perm.attempt, 0, 'no retry for a PermanentError');
  assert.ok(perm.error.startsWith('bad input xxx'));
  assert.ok(perm.error.length <= 4096, `error is ${perm.error.length} characters`);

  assert.deepEqual(
    failures.map((f) => [f.job, f.retryable, f.status]),
    [
      ['flaky', true, 'queued'],
      ['flaky', true, 'failed'],
      ['perm', false, 'failed'],
    ],
  );
  assert.equal(w.stats.failed, 3);
});

test('cancel aborts ctx.signal (found by the cancel poll); nothing is reported; the worker moves on', async (t) => {
  const { srv, api } = await setup(t);
  let reason: unknown;
  const w = await startWorker(
    t,
    srv,
    async (job, ctx) => {
      if (job.workflow_id === 'after') return { ok: 'yes' };
      ctx.log('waiting');
      reason = await aborted(ctx.signal);
      ctx.log('aborted, cleaning up');
      return { should: 'not be stored' };
    },
    { heartbeatSecs: 9, cancelPollSecs: 0.1 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'c1', jobs: { j: { run: 'u' } } });
  await until(async () => jobOf(await api.status('c1'), 'j').status === 'running', 'the job to run');
  assert.equal((await api.post('/api/workflows/c1/cancel')).status, 202);
  await until(() => abandoned.length === 1, 'the job to be abandoned', 3000);
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'cancelled');
  assert.deepEqual(abandoned, ['cancelled']);
  const j = jobOf(await api.status('c1'), 'j');
  assert.equal(j.status, 'cancelled');
  assert.deepEqual(j.outputs, {});
  await createAndRun(api, { id: 'after', jobs: { j: { run: 'u' } } });
  assert.equal((await api.settled('after')).status, 'success');
});

test('a 409 on heartbeat aborts the job too (cancel seen through the lease, not the poll)', async (t) => {
  const { srv, api } = await setup(t);
  let reason: unknown;
  const w = await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      reason = await aborted(ctx.signal);
    },
    { leaseTtlSecs: 5, heartbeatSecs: 0.1, cancelPollSecs: 3600 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'c2', jobs: { j: { run: 'u' } } });
  await until(async () => jobOf(await api.status('c2'), 'j').status === 'running', 'the job to run');
  await api.post('/api/workflows/c2/cancel');
  await until(() => abandoned.length === 1, 'the job to be abandoned', 3000);
  assert.ok(reason instanceof JobAbortedError);
  assert.match(reason.message, /cancelled/);
});

test('a lost lease (heartbeats not getting through) aborts the job; the server re-queues it and it runs again', async (t) => {
  const { srv, api } = await setup(t, { reapIntervalMs: 100 });
  let dropHeartbeats = true;
  const flakyFetch: typeof fetch = async (input, init) => {
    if (dropHeartbeats && String(input).endsWith('/heartbeat')) throw new TypeError('fetch failed (simulated)');
    return fetch(input, init);
  };
  const reasons: unknown[] = [];
  const w = await startWorker(
    t,
    srv,
    async (job, ctx) => {
      if (job.attempt > 0) return { attempt: String(job.attempt) };
      reasons.push(await aborted(ctx.signal));
      dropHeartbeats = false;
    },
    { client: new WorkflowClient({ baseUrl: srv.url, fetch: flakyFetch, timeoutMs: 1000 }), leaseTtlSecs: 1 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'lost', jobs: { j: { retries: 2, run: 'u' } } });
  const doc = await api.settled('lost');
  const j = jobOf(doc, 'j');
  assert.equal(j.status, 'success');
  assert.equal(j.attempt, 1, 'the lost attempt counted as a retry');
  assert.deepEqual(j.outputs, { attempt: '1' });
  assert.equal(reasons.length, 1);
  assert.ok(reasons[0] instanceof JobAbortedError);
  assert.equal(reasons[0].reason, 'lease_lost');
  assert.deepEqual(abandoned, ['lease_lost']);
});

test('a finished job whose report fails on the network is reported again until it lands', async (t) => {
  const { srv, api } = await setup(t);
  let completeCalls = 0;
  const flakyFetch: typeof fetch = async (input, init) => {
    if (String(input).endsWith('/complete') && ++completeCalls <= 3) throw new TypeError('fetch failed (simulated)');
    return fetch(input, init);
  };
  await startWorker(t, srv, async () => ({ done: 'yes' }), {
    client: new WorkflowClient({ baseUrl: srv.url, fetch: flakyFetch }),
    maxBackoffSecs: 0.2,
  });
  await createAndRun(api, { id: 'rep', jobs: { j: { run: 'u' } } });
  const doc = await api.settled('rep');
  assert.deepEqual(jobOf(doc, 'j').outputs, { done: 'yes' });
  assert.equal(completeCalls, 4);
});

test('stop() drains: the running job finishes and reports, nothing new is claimed', async (t) => {
  const { srv, api } = await setup(t);
  const w = await startWorker(t, srv, async (_job, ctx) => {
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(ctx.signal.aborted, false);
    return { drained: 'yes' };
  });
  await createAndRun(api, { id: 'drain', jobs: { a: { run: 'u' }, b: { needs: 'a', run: 'u' } } });
  await until(() => w.stats.running === 1, 'the job to start');
  const t0 = Date.now();
  await w.stop();
  assert.ok(Date.now() - t0 >= 300, 'stop waited for the job');
  assert.equal(w.stats.running, 0);
  const doc = await api.status('drain');
  assert.deepEqual(jobOf(doc, 'a').outputs, { drained: 'yes' });
  assert.equal(jobOf(doc, 'b').status, 'queued', 'not claimed after stop()');
});

test('stop({ abort: true }) aborts running handlers with reason shutdown and hands the job back', async (t) => {
  const { srv, api } = await setup(t);
  let reason: unknown;
  const w = await startWorker(t, srv, async (_job, ctx) => {
    reason = await aborted(ctx.signal);
    throw reason;
  });
  await createAndRun(api, { id: 'abort', jobs: { j: { retries: 1, run: 'u' } } });
  await until(() => w.stats.running === 1, 'the job to start');
  await w.stop({ abort: true });
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'shutdown');
  const j = jobOf(await api.status('abort'), 'j');
  assert.equal(j.status, 'queued', 're-queued at once, not after the lease runs out');
  assert.equal(j.attempt, 1);
  assert.match(j.error, /shut down/);
});

test('an unreachable server neither crashes start() nor stop()', async (t) => {
  const w = new Worker({ serverUrl: 'http://127.0.0.1:9', logger: silent, maxBackoffSecs: 0.1, handler: async () => ({}) });
  const started = w.start();
  await new Promise((r) => setTimeout(r, 300));
  await w.stop();
  await started;
  assert.equal(w.stats.claimed, 0);
  assert.throws(() => new Worker({ handler: async () => {}, leaseTtlSecs: 10, heartbeatSecs: 10 }), /heartbeatSecs/);
  assert.throws(() => new Worker({ handler: async () => {}, concurrency: 0 }), /concurrency/);
  t.diagnostic('ok');
});
