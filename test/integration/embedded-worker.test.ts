/**
 * The embeddable `Worker` in-process, with TypeScript handlers, against a real in-process server:
 * outputs and upstream outputs, ctx.log chunks, retries and PermanentError, cancellation through
 * ctx.signal (cancel poll and heartbeat 409), a lost lease, report retries, and stop() (drain and abort).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { WorkflowClient } from '../../src/client/client.js';
import type { ClaimedJob } from '../../src/protocol/wire.js';
import {
  JobAbortedError,
  PermanentError,
  Worker,
  createShellHandler,
  isTransient,
  type JobHandler,
  type WorkerOptions,
} from '../../src/worker/index.js';
import { liveProcessGroups } from '../../src/worker/shell.js';
import { client, until } from '../helpers/http.js';
import { startInProcess, type InProcessServer } from '../helpers/server.js';
import { alive } from '../helpers/process.js';

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

/**
 * A fetch that lets `hook` see (and replace) every request to the real server; `forward()` sends it on.
 */
function fetchWith(hook: (url: string, init: RequestInit | undefined, forward: () => Promise<Response>) => Promise<Response>): typeof fetch {
  return (input, init) => hook(String(input), init, () => fetch(input, init));
}

/** A client whose requests all go through `hook`. */
function hookedClient(srv: InProcessServer, hook: Parameters<typeof fetchWith>[0], timeoutMs?: number) {
  return new WorkflowClient({ baseUrl: srv.url, fetch: fetchWith(hook), timeoutMs });
}

const unavailable = () =>
  new Response(JSON.stringify({ error: 'unavailable', message: 'simulated outage' }), { status: 503, headers: { 'content-type': 'application/json' } });

/** A request that never gets an answer; it fails only when its signal aborts (a timeout, say). */
const hangUntilAborted = (init: RequestInit | undefined) =>
  new Promise<Response>((_, reject) => {
    const signal = init?.signal;
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));


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
  // The worker counts a success when the answer to its report arrives, which may be just after
  // another client already sees the job settled.
  await until(() => w.stats.succeeded === 2, 'the worker to count both successes', 5000, 5);
  assert.equal(jobOf(doc, 'build').worker_id, w.workerId);
});

test('ctx.log: text stored in order with streams, shipped while the handler runs, lines merged into chunks', async (t) => {
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
  assert.equal(jobOf(await api.status('logs'), 'j').state, 'running');
  release();
  assert.equal((await api.settled('logs')).status, 'success');
  const all = (await api.get('/api/workflows/logs/jobs/j/logs')).body as any[];
  all.forEach((c, i) => assert.equal(c.sequence, i));
  const text = all.slice(2).map((c) => c.data).join('');
  assert.equal(text, Array.from({ length: 2500 }, (_, i) => `line ${i}\n`).join(''));
  // Consecutive lines of one stream share a chunk: far fewer rows than lines.
  assert.ok(all.length < 50, `${all.length} chunks for 2502 lines`);
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
  assert.equal(jobOf(doc, 'flaky').state, 'failed');
  assert.equal(jobOf(doc, 'flaky').attempt, 1);
  assert.equal(jobOf(doc, 'flaky').error, 'boom at attempt 1');
  assert.equal(jobOf(doc, 'down').state, 'skipped');

  await createAndRun(api, { id: 'f2', jobs: { perm: { retries: 3, run: 'u' } } });
  const perm = jobOf(await api.settled('f2'), 'perm');
  assert.equal(perm.state, 'failed');
  assert.equal(perm.attempt, 0, 'no retry for a PermanentError');
  assert.ok(perm.error.startsWith('bad input xxx'));
  assert.ok(perm.error.length <= 4096, `error is ${perm.error.length} characters`);

  // Events fire when the report's answer arrives, which may be just after the run is seen settled.
  await until(() => failures.length === 3 && w.stats.failed === 3, 'three failure events', 5000, 5);
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
  await until(async () => jobOf(await api.status('c1'), 'j').state === 'running', 'the job to run');
  assert.equal((await api.post('/api/workflows/c1/cancel')).status, 202);
  await until(() => abandoned.length === 1, 'the job to be abandoned', 3000);
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'cancelled');
  assert.deepEqual(abandoned, ['cancelled']);
  const j = jobOf(await api.status('c1'), 'j');
  assert.equal(j.state, 'cancelled');
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
  await until(async () => jobOf(await api.status('c2'), 'j').state === 'running', 'the job to run');
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
  assert.equal(j.state, 'success');
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
  assert.equal(jobOf(doc, 'b').state, 'queued', 'not claimed after stop()');
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
  assert.equal(j.state, 'queued', 're-queued at once, not after the lease runs out');
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

// ------------------------------------------------------------------- leases, reports and events

test('a hung server: the job is aborted when its lease runs out locally, not when a heartbeat request finally times out', async (t) => {
  const { srv, api } = await setup(t);
  const heartbeatSignals: AbortSignal[] = [];
  let hang = true;
  t.after(() => {
    hang = false;
  });
  const client = hookedClient(
    srv,
    async (url, init, forward) => {
      if (hang && url.endsWith('/heartbeat')) {
        heartbeatSignals.push(init!.signal!);
        return hangUntilAborted(init);
      }
      return forward();
    },
    // Far longer than the lease: only the lease itself may decide when the job is given up.
    30_000,
  );
  let reason: unknown;
  let startedAt = 0;
  let abortedAfterMs = 0;
  const w = await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      startedAt = performance.now();
      reason = await aborted(ctx.signal);
      abortedAfterMs = performance.now() - startedAt;
    },
    { client, leaseTtlSecs: 2 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'hung', jobs: { j: { retries: 1, run: 'u' } } });
  await until(() => abandoned.length === 1, 'the job to be given up at its lease expiry', 6000);
  assert.ok(reason instanceof JobAbortedError);
  assert.equal(reason.reason, 'lease_lost');
  assert.match(reason.message, /lease expired/);
  assert.ok(abortedAfterMs < 2000 + 1000, `aborted ${Math.round(abortedAfterMs)} ms after start`);
  // Each heartbeat request was cut short at the next heartbeat or the lease's end, not after 30 s.
  assert.ok(heartbeatSignals.length >= 1);
  assert.ok(heartbeatSignals.every((s) => s.aborted), 'every hung heartbeat request was aborted');
});

test('a /logs endpoint that keeps failing does not hold back a finished job\'s result', async (t) => {
  const { srv, api } = await setup(t);
  let logAttempts = 0;
  const client = hookedClient(srv, async (url, _init, forward) => {
    if (url.endsWith('/logs')) {
      logAttempts++;
      return unavailable();
    }
    return forward();
  });
  const w = await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      ctx.log('this line never gets through');
      return { done: 'yes' };
    },
    { client, logDrainSecs: 0.5, maxBackoffSecs: 0.2 },
  );
  await createAndRun(api, { id: 'stuck-logs', jobs: { j: { run: 'u' } } });
  const doc = await api.settled('stuck-logs', 8000);
  assert.equal(jobOf(doc, 'j').state, 'success');
  assert.deepEqual(jobOf(doc, 'j').outputs, { done: 'yes' });
  assert.ok(logAttempts >= 1);
  await until(() => w.stats.succeeded === 1, 'the worker to count the success', 5000, 5);
});

test('a throwing event listener breaks neither the claim loop nor the report', async (t) => {
  const { srv, api } = await setup(t);
  let completes = 0;
  const client = hookedClient(srv, async (url, _init, forward) => {
    if (url.endsWith('/complete')) completes++;
    return forward();
  });
  const w = await startWorker(t, srv, async (job) => ({ id: job.job_id }), { client });
  w.on('job:start', () => {
    throw new Error('a buggy job:start listener');
  });
  w.on('job:done', () => {
    throw new Error('a buggy job:done listener');
  });
  await createAndRun(api, { id: 'listeners', jobs: { a: { run: 'u' }, b: { needs: 'a', run: 'u' } } });
  const doc = await api.settled('listeners');
  assert.equal(doc.status, 'success');
  assert.deepEqual(jobOf(doc, 'b').outputs, { id: 'b' });
  await until(() => w.stats.succeeded === 2, 'the worker to count both successes', 5000, 5);
  assert.equal(completes, 2, 'each result was sent once');
});

test('a report whose answer was lost (then 409 lease_completed / lease_failed) counts as reported', async (t) => {
  const { srv, api } = await setup(t);
  const lose = new Set(['/complete', '/fail']);
  const client = hookedClient(srv, async (url, _init, forward) => {
    const kind = url.slice(url.lastIndexOf('/'));
    if (!lose.has(kind)) return forward();
    lose.delete(kind);
    // The server handles the request; its answer never arrives.
    await (await forward()).text();
    throw new TypeError('fetch failed (simulated: connection reset before the answer)');
  });
  const w = await startWorker(
    t,
    srv,
    async (job) => {
      if (job.job_id === 'bad') throw new PermanentError('bad input');
      return { v: '1' };
    },
    { client, maxBackoffSecs: 0.1 },
  );
  const events: string[] = [];
  w.on('job:done', (e) => events.push(`done ${e.job.job_id} ${e.status}`));
  w.on('job:failed', (e) => events.push(`failed ${e.job.job_id} ${e.status} retryable=${e.retryable}`));
  w.on('job:abandoned', (e) => events.push(`abandoned ${e.job.job_id} ${e.reason}`));
  await createAndRun(api, { id: 'lost-answers', jobs: { ok: { run: 'u' }, bad: { needs: 'ok', run: 'u' } } });
  const doc = await api.settled('lost-answers');
  assert.deepEqual(jobOf(doc, 'ok').outputs, { v: '1' });
  assert.equal(jobOf(doc, 'bad').state, 'failed');
  await until(() => events.length === 2, 'both reports to be settled');
  assert.deepEqual(events, ['done ok success', 'failed bad failed retryable=false']);
  assert.deepEqual({ ...w.stats, running: 0 }, { claimed: 2, succeeded: 1, failed: 1, abandoned: 0, running: 0 });
});

test('stop({ abort: true }): heartbeats go on until the failure report lands, even when the handler takes longer than the lease to stop', async (t) => {
  const { srv, api } = await setup(t);
  let reason: unknown;
  const w = await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      reason = await aborted(ctx.signal);
      // Cleaning up takes twice the lease.
      await delay(2000);
      throw reason;
    },
    { leaseTtlSecs: 1 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'slow-stop', jobs: { j: { retries: 1, run: 'u' } } });
  await until(() => w.stats.running === 1, 'the job to start');
  await w.stop({ abort: true });
  assert.ok(reason instanceof JobAbortedError);
  assert.deepEqual(abandoned, ['shutdown']);
  const j = jobOf(await api.status('slow-stop'), 'j');
  assert.equal(j.state, 'queued');
  assert.equal(j.attempt, 1);
  assert.match(j.error, /shut down/, 'the worker\'s failure report landed (not a lease expiry)');
});

// ----------------------------------------------------------------------------------- log shipping

test('while /logs fails, output keeps flowing but pushes back off', async (t) => {
  const { srv, api } = await setup(t);
  const attempts: number[] = [];
  const client = hookedClient(srv, async (url, _init, forward) => {
    if (!url.endsWith('/logs')) return forward();
    attempts.push(performance.now());
    if (attempts.length > 4) return forward();
    // A slow failure: output keeps arriving while the request is out.
    await delay(50);
    return unavailable();
  });
  await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      const deadline = performance.now() + 15_000;
      for (let i = 0; attempts.length < 5 && performance.now() < deadline; i++) {
        ctx.log(`tick ${i}`);
        await delay(10);
      }
      return {};
    },
    { client, maxBackoffSecs: 1 },
  );
  await createAndRun(api, { id: 'backoff', jobs: { j: { run: 'u' } } });
  assert.equal((await api.settled('backoff', 20_000)).status, 'success');
  const gaps = attempts.slice(1, 5).map((at, i) => at - attempts[i]!);
  // Backoff after failures 1, 2, 3: 500 ms, 1 s, 1 s (capped), each -20 %; a push every 10 ms changes nothing.
  assert.ok(gaps[0]! >= 380, `gaps ${gaps.map(Math.round)}`);
  assert.ok(gaps[1]! >= 780 && gaps[2]! >= 780 && gaps[3]! >= 780, `gaps ${gaps.map(Math.round)}`);
  const text = (await api.get('/api/workflows/backoff/jobs/j/logs')).body.map((c: any) => c.data).join('');
  assert.match(text, /^tick 0\ntick 1\n/, 'nothing was lost meanwhile');
});

test('the log buffer is bounded in chunks too: alternating streams while /logs is down drop lines with a notice', async (t) => {
  const { srv, api } = await setup(t);
  let down = true;
  let failures = 0;
  const client = hookedClient(srv, async (url, _init, forward) => {
    if (down && url.endsWith('/logs')) {
      failures++;
      return unavailable();
    }
    return forward();
  });
  await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      ctx.log('before');
      await until(() => failures > 0, 'a failed push');
      // Nothing merges: every line starts a chunk of its own.
      for (let i = 0; i < 15_000; i++) ctx.log(`l${i}`, i % 2 === 0 ? 'stdout' : 'stderr');
      down = false;
      return {};
    },
    { client, maxBackoffSecs: 0.2 },
  );
  await createAndRun(api, { id: 'bounded', jobs: { j: { run: 'u' } } });
  assert.equal((await api.settled('bounded', 20_000)).status, 'success');
  const chunks = (await api.get('/api/workflows/bounded/jobs/j/logs')).body as any[];
  chunks.forEach((c, i) => assert.equal(c.sequence, i));
  assert.ok(chunks.length <= 10_001, `${chunks.length} chunks stored`);
  const notice = chunks.find((c) => /log chunk\(s\) dropped/.test(c.data));
  assert.ok(notice, 'a notice says lines were dropped');
  assert.equal(notice.stream, 'stderr');
  // What was kept is the start of the output, in order.
  const kept = chunks.filter((c) => c !== notice).map((c) => c.data);
  assert.equal(kept[0], 'before\n');
  kept.slice(1).forEach((d, i) => assert.equal(d, `l${i}\n`));
  const dropped = Number(/(\d+) log chunk/.exec(notice.data)![1]);
  assert.equal(kept.length - 1 + dropped, 15_000);
});

test('after a cancel, the last log lines go out in full, not just one batch', async (t) => {
  const { srv, api } = await setup(t);
  const line = (i: number) => `${String(i).padStart(4, '0')} ${'x'.repeat(995)}`;
  const w = await startWorker(
    t,
    srv,
    async (_job, ctx) => {
      ctx.log('waiting');
      await aborted(ctx.signal);
      // 300 KB: more than one push can carry.
      for (let i = 0; i < 300; i++) ctx.log(line(i));
    },
    { cancelPollSecs: 0.1 },
  );
  const abandoned: string[] = [];
  w.on('job:abandoned', (e) => abandoned.push(e.reason));
  await createAndRun(api, { id: 'last-words', jobs: { j: { run: 'u' } } });
  await until(async () => jobOf(await api.status('last-words'), 'j').state === 'running', 'the job to run');
  await api.post('/api/workflows/last-words/cancel');
  await until(() => abandoned.length === 1, 'the job to be abandoned', 5000);
  const text = (await api.get('/api/workflows/last-words/jobs/j/logs')).body.map((c: any) => c.data).join('');
  assert.equal(text, ['waiting', ...Array.from({ length: 300 }, (_, i) => line(i))].join('\n') + '\n');
});

// --------------------------------------------------------------------------------- the shell handler

test('shell handler: the stderr tail keeps a multibyte character split across reads', async (t) => {
  const { srv, api } = await setup(t);
  await startWorker(t, srv, createShellHandler());
  // € is E2 82 AC; the sleep makes the worker read its bytes in two pieces.
  const run = "printf 'start \\342\\202' >&2; sleep 0.2; printf '\\254 end\\n' >&2; exit 3";
  await createAndRun(api, { id: 'utf8', jobs: { j: { run } } });
  const j = jobOf(await api.settled('utf8'), 'j');
  assert.equal(j.state, 'failed');
  assert.ok(j.error.endsWith('start € end'), JSON.stringify(j.error));
  assert.ok(!j.error.includes('\uFFFD'), JSON.stringify(j.error));
});

test('shell handler: a killed process group is forgotten (and its SIGKILL timer dropped) as soon as it is gone', async (t) => {
  const { srv, api } = await setup(t);
  const dir = fs.mkdtempSync(path.join(srv.dir, 'pg-'));
  const pidFile = path.join(dir, 'pid');
  await startWorker(t, srv, createShellHandler({ killGraceMs: 60_000 }), { cancelPollSecs: 0.1 });
  await createAndRun(api, { id: 'pg', jobs: { j: { run: `echo $$ > ${pidFile}; sleep 300` } } });
  const pgid = await until(() => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) || null : null), 'the job to start');
  // Tracked once the launcher's word that it forked the command has been read here, which may come
  // after the command has already written its pid.
  await until(() => liveProcessGroups().includes(pgid), "the running job's group to be tracked");
  await api.post('/api/workflows/pg/cancel');
  await until(() => !alive(pgid), 'the job to be killed', 5000);
  // Far sooner than the 60 s grace: nothing is left to SIGKILL later, when the id may be someone else's.
  await until(() => !liveProcessGroups().includes(pgid), 'the group to be forgotten', 3000);

  await createAndRun(api, { id: 'pg2', jobs: { j: { run: 'true' } } });
  assert.equal((await api.settled('pg2')).status, 'success');
  assert.deepEqual(liveProcessGroups(), [], 'a group that ended by itself is not tracked either');
});

// ------------------------------------------------------------------------------------ the claim loop

for (const mode of [
  { name: 'long-polling', opts: { longPollSecs: 0.2 }, polls: 4 },
  { name: 'polling (long polls off)', opts: { longPollSecs: 0, pollSecs: 0.05 }, polls: 8 },
]) {
  test(`an idle worker with CONCURRENCY 4 sends one claim at a time, ${mode.name}`, async (t) => {
    const { srv } = await setup(t);
    let inFlight = 0;
    let maxInFlight = 0;
    let claims = 0;
    let waited = 0;
    const client = hookedClient(srv, async (url, init, forward) => {
      // With several slots the claim is a claim-batch (docs/api.md "Batches"); it is still one at a time.
      if (!/\/claim(-batch)?$/.test(url)) return forward();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (JSON.parse(String(init?.body ?? '{}')).wait_secs > 0) waited++;
      try {
        await delay(20);
        return await forward();
      } finally {
        inFlight--;
        claims++;
      }
    });
    await startWorker(t, srv, async () => ({}), { client, concurrency: 4, ...mode.opts });
    await until(() => claims >= mode.polls, 'a few polls');
    assert.equal(maxInFlight, 1);
    assert.equal(waited > 0, mode.opts.longPollSecs > 0, 'claims carry wait_secs exactly when long polls are on');
  });
}

test('against a server that refuses wait_secs, the worker falls back to polling', async (t) => {
  const { srv, api } = await setup(t);
  let refused = 0;
  const client = hookedClient(srv, async (url, init, forward) => {
    if (url.endsWith('/claim') && JSON.parse(String(init?.body ?? '{}')).wait_secs !== undefined) {
      refused++;
      const body = { error: 'invalid_request', message: 'body has unknown field "wait_secs"' };
      return new Response(JSON.stringify(body), { status: 400, headers: { 'content-type': 'application/json' } });
    }
    return forward();
  });
  await startWorker(t, srv, async () => ({ ok: 'yes' }), { client, pollSecs: 0.05 });
  await createAndRun(api, { id: 'old-server', jobs: { j: { run: 'u' } } });
  const doc = await api.settled('old-server');
  assert.equal(jobOf(doc, 'j').state, 'success');
  assert.equal(refused, 1, 'asked once, then polled');
});

test('a freed slot claims queued work at once, without waiting for the poll interval', async (t) => {
  const { srv, api } = await setup(t);
  const started = new Set<string>();
  let release!: () => void;
  const bothRunning = new Promise<void>((r) => (release = r));
  // a runs first; finishing it queues b and c while the other slot is in its 30 s wait after finding nothing.
  await createAndRun(api, { id: 'fan', jobs: { a: { run: 'u' }, b: { needs: 'a', run: 'u' }, c: { needs: 'a', run: 'u' } } });
  await startWorker(
    t,
    srv,
    async (job) => {
      if (job.job_id === 'a') return {};
      started.add(job.job_id);
      if (started.size === 2) release();
      await bothRunning;
      return {};
    },
    { concurrency: 2, pollSecs: 30 },
  );
  await until(() => started.size === 2, 'b and c to run side by side', 5000);
  assert.equal((await api.settled('fan')).status, 'success');
});

// ---------------------------------------------------------------------------------------- the client

test('client: a network failure names the call and its cause, a timeout says how long it waited; both stay transient', async () => {
  // A port that was just free: nothing listens there.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise((r) => probe.close(r));
  const refused = new WorkflowClient({ baseUrl: `http://127.0.0.1:${port}` });
  const err1 = await refused.heartbeat('lease-1').then(
    () => assert.fail('no server listens there'),
    (e: unknown) => e,
  );
  assert.ok(err1 instanceof TypeError, String(err1));
  assert.match(err1.message, /^POST \/api\/jobs\/lease-1\/heartbeat: .*ECONNREFUSED/);
  assert.ok(isTransient(err1));

  const hung = new WorkflowClient({ baseUrl: 'http://127.0.0.1:9', fetch: (_input, init) => hangUntilAborted(init), timeoutMs: 600_000 });
  const t0 = performance.now();
  // The timeout's timer does not keep the process alive (a real request's socket would).
  const keepAlive = setInterval(() => undefined, 1000);
  const err2 = await hung
    .complete('lease-2', {}, { timeoutMs: 50 })
    .then(
      () => assert.fail('it never answers'),
      (e: unknown) => e,
    )
    .finally(() => clearInterval(keepAlive));
  assert.ok(performance.now() - t0 < 60_000, 'the per-call timeout (50 ms), not the client\'s (600 s), was used');
  assert.match(String((err2 as Error).message), /^POST \/api\/jobs\/lease-2\/complete: no answer within 0\.05 s$/);
  assert.equal((err2 as Error).name, 'TimeoutError');
  assert.ok(isTransient(err2));
});

test('client: streamLogs ignores events it does not know, whatever their data', async () => {
  const body = [
    'event: ping\ndata: not json at all\n\n',
    ': a comment\n\n',
    'event: log\nid: 0\ndata: {"sequence":0,"data":"hi\\n","stream":"stdout","attempt":0}\n\n',
    'event: end\ndata: {"status":"success","run_number":1}\n\n',
  ].join('');
  const sse: typeof fetch = async () => new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  const c = new WorkflowClient({ baseUrl: 'http://127.0.0.1:9', fetch: sse });
  const events: any[] = [];
  for await (const ev of c.streamLogs('wf', 'job')) events.push(ev);
  assert.deepEqual(
    events.map((e) => e.type),
    ['log', 'end'],
  );
  assert.equal(events[0].chunk.data, 'hi\n');
  assert.deepEqual(events[1], { type: 'end', status: 'success', run_number: 1 });
});
