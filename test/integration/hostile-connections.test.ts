/**
 * Hostile connections (README "Limits"): requests sent too slowly are cut off by REQUEST_TIMEOUT_SECS
 * while long answers (long-poll claims, log streams) are not, and MAX_STREAMS caps open log streams.
 */
import http from 'node:http';
import net from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';
import { ConfigError, loadServerConfig } from '../../src/runtime/config.js';

/** A raw connection: what the server wrote, and when it closed. */
function rawConnection(url: string) {
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (received += d));
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed, connected };
}

/** Resolves with `p`, or rejects once `ms` pass. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
    }),
  ]);
}

function assertTimeoutAnswer(text: string): void {
  const [head, body] = text.split('\r\n\r\n');
  assert.match(head!, /^HTTP\/1\.1 408 /, text);
  assert.match(head!, /connection: close/i);
  const parsed = JSON.parse(body!);
  assert.equal(parsed.error, 'request_timeout');
  assert.match(parsed.message, /REQUEST_TIMEOUT_SECS/);
}

describe('REQUEST_TIMEOUT_SECS', () => {
  test('is validated at start', async (t) => {
    assert.equal(loadServerConfig({}).requestTimeoutMs, 30_000);
    assert.equal(loadServerConfig({ REQUEST_TIMEOUT_SECS: '2.5' }).requestTimeoutMs, 2500);
    assert.equal(loadServerConfig({ REQUEST_TIMEOUT_SECS: '1.0001' }).requestTimeoutMs, 1000);
    assert.equal(loadServerConfig({}).maxStreams, 1000);
    assert.equal(loadServerConfig({ MAX_STREAMS: '20' }).maxStreams, 20);
    for (const [name, value] of [
      ['REQUEST_TIMEOUT_SECS', '0'],
      ['REQUEST_TIMEOUT_SECS', 'soon'],
      ['REQUEST_TIMEOUT_SECS', '3601'],
      ['MAX_STREAMS', '0'],
      ['MAX_STREAMS', '1.5'],
      ['MAX_STREAMS', 'many'],
    ] as const) {
      assert.throws(
        () => loadServerConfig({ [name]: value }),
        (err: Error) => err instanceof ConfigError && err.message.startsWith(`${name}="${value}" is not valid`),
        `${name}=${value}`,
      );
    }
    const sb = sandbox(t);
    const bad = track(t, spawnWeft(['server'], { PORT: '0', ...sb.env, MAX_STREAMS: '-3' }, sb.dir));
    assert.notEqual(await bad.exited, 0);
    assert.match(bad.output(), /MAX_STREAMS="-3" is not valid/);
  });

  test('a request sent too slowly is answered 408 and closed; long answers are not cut', async (t) => {
    const sb = sandbox(t);
    const server = await serverProcess(t, sb, { REQUEST_TIMEOUT_SECS: '1', LOG_LEVEL: 'warn' });
    const api = client(server.url);
    // The whole deadline plus the server's checking period and some slack for a busy machine.
    const DEADLINE_MS = 5000;

    await t.test('headers that stop half-way', async () => {
      const c = rawConnection(server.url);
      await c.connected;
      const start = Date.now();
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      assertTimeoutAnswer(await within(c.closed, DEADLINE_MS, 'a cut-off'));
      assert.ok(Date.now() - start >= 900, `cut after ${Date.now() - start} ms, before the timeout`);
    });

    await t.test('a body that stops half-way; nothing of it is stored', async () => {
      const c = rawConnection(server.url);
      await c.connected;
      c.socket.write(
        'POST /api/workers/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"worker_id":"slow-body"',
      );
      assertTimeoutAnswer(await within(c.closed, DEADLINE_MS, 'a cut-off'));
      assert.ok(!((await api.get('/api/workers')).body as any[]).some((w) => w.worker_id === 'slow-body'));
    });

    await t.test('a connection that sends nothing', async () => {
      const c = rawConnection(server.url);
      await c.connected;
      assertTimeoutAnswer(await within(c.closed, DEADLINE_MS, 'a cut-off'));
    });

    await t.test('a body trickled a byte at a time never gets past the deadline', async () => {
      const c = rawConnection(server.url);
      await c.connected;
      const body = `{"worker_id":"trickle","labels":[${'"x",'.repeat(200)}"x"]}`;
      c.socket.write(`POST /api/workers/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      let i = 0;
      const drip = setInterval(() => {
        if (!c.socket.destroyed && i < body.length) c.socket.write(body[i++]!);
      }, 20);
      try {
        assertTimeoutAnswer(await within(c.closed, DEADLINE_MS, 'a cut-off'));
      } finally {
        clearInterval(drip);
      }
      assert.ok(i < body.length, 'the body was cut before it was whole');
    });

    await t.test('a long-poll claim waits past the timeout and still answers', async () => {
      const start = Date.now();
      const empty = await api.post('/api/jobs/claim', { worker_id: 'lp', labels: ['lp-none'], wait_secs: 2.5 });
      assert.equal(empty.status, 200);
      assert.equal(empty.body, null);
      assert.ok(Date.now() - start >= 2400, `answered after ${Date.now() - start} ms`);

      const waiting = api.post('/api/jobs/claim', { worker_id: 'lp', labels: ['lp'], wait_secs: 10 });
      // Past the request timeout before there is anything to hand out.
      await new Promise((r) => setTimeout(r, 1600));
      await api.createWorkflow({ id: 'lp', jobs: { a: { run: 'x', labels: ['lp'] } } });
      await api.run('lp');
      const got = await waiting;
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.job.workflow_id, 'lp');
      assert.equal((await api.post(`/api/jobs/${got.body.lease.lease_id}/complete`, {})).status, 200);
    });

    await t.test('a log stream stays open past the timeout', async () => {
      await api.createWorkflow({ id: 'sse', jobs: { a: { run: 'x', labels: ['sse'] } } });
      await api.run('sse');
      const stream = await openSse(`${server.url}/api/workflows/sse/jobs/a/logs/stream`);
      t.after(() => stream.close());
      assert.equal(stream.status, 200);
      await new Promise((r) => setTimeout(r, 1600));
      const c = await api.claim('w', ['sse']);
      await api.post(`/api/jobs/${c!.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'still here\n' }] });
      await stream.waitFor((evs) => evs.some((e) => e.event === 'log'), 'the log line');
      await api.post(`/api/jobs/${c!.lease.lease_id}/complete`, {});
      const events = await stream.waitForEnd();
      assert.deepEqual(events.map((e) => e.event), ['log', 'end']);
    });

    assert.equal((await api.get('/healthz')).status, 200);
  });
});

/** An event stream opened with a raw request: resolves once its answer's headers arrive. */
function openRaw(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      const body = new Promise<string>((done) => {
        res.on('end', () => done(text));
        res.on('close', () => done(text));
      });
      resolve({ status: res.statusCode!, headers: res.headers, body, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

async function streamingServer(t: TestContext, maxStreams: number) {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { MAX_STREAMS: String(maxStreams), LOG_LEVEL: 'warn' });
  const api = client(server.url);
  await api.createWorkflow({ id: 'live', jobs: { a: { run: 'x', labels: ['never'] } } });
  await api.run('live');
  return { server, api, url: `${server.url}/api/workflows/live/jobs/a/logs/stream` };
}

async function assertRefused(s: Awaited<ReturnType<typeof openRaw>>): Promise<void> {
  assert.equal(s.status, 503);
  assert.equal(s.headers['retry-after'], '5');
  assert.match(String(s.headers['content-type']), /^application\/json/);
  const body = JSON.parse(await s.body);
  assert.equal(body.error, 'too_many_streams');
  assert.match(body.message, /MAX_STREAMS/);
}

describe('MAX_STREAMS', () => {
  test('streams beyond the cap get 503 too_many_streams; a closed stream frees its slot', async (t) => {
    const { api, url, server } = await streamingServer(t, 20);
    // Refused or unknown streams hold no slot.
    for (let i = 0; i < 25; i++) {
      const missing = await openRaw(`${server.url}/api/workflows/live/jobs/nope/logs/stream`);
      assert.equal(missing.status, 404);
      await missing.body;
    }
    const open = await Promise.all(Array.from({ length: 20 }, () => openRaw(url)));
    t.after(() => open.forEach((s) => s.close()));
    assert.deepEqual(open.map((s) => s.status), Array(20).fill(200));
    await assertRefused(await openRaw(url));
    await assertRefused(await openRaw(url));

    open.shift()!.close();
    const next = await until(async () => {
      const s = await openRaw(url);
      if (s.status === 200) return s;
      await s.body;
      return null;
    }, 'a slot to free up after a stream closed', 5000, 50);
    open.push(next);
    await assertRefused(await openRaw(url));

    // Every slot comes back: close all, and a full set opens again.
    for (const s of open.splice(0)) s.close();
    const again = await until(async () => {
      const batch = await Promise.all(Array.from({ length: 20 }, () => openRaw(url)));
      if (batch.every((s) => s.status === 200)) return batch;
      batch.forEach((s) => s.close());
      return null;
    }, 'all 20 slots to be free again', 5000, 100);
    open.push(...again);
    await assertRefused(await openRaw(url));

    // A stream that ends by itself (its job finished) frees its slot too.
    const c = await api.claim('w', ['never']);
    await api.post(`/api/jobs/${c!.lease.lease_id}/complete`, {});
    const ended = await Promise.all(open.splice(0).map((s) => s.body));
    assert.ok(ended.every((text) => text.includes('event: end')));
    const finished = await Promise.all(Array.from({ length: 20 }, () => openRaw(url)));
    assert.deepEqual(finished.map((s) => s.status), Array(20).fill(200));
    await Promise.all(finished.map((s) => s.body));
  });

  test('a burst of 2,000 streams against a cap of 100: the rest are refused and the server stays responsive', async (t) => {
    const { server, url } = await streamingServer(t, 100);
    const attempts = await Promise.allSettled(Array.from({ length: 2000 }, () => openRaw(url)));
    const answers = attempts.map((a) => (a.status === 'fulfilled' ? a.value : null));
    t.after(() => answers.forEach((s) => s?.close()));
    const failures = attempts.filter((a) => a.status === 'rejected').map((a) => String((a as PromiseRejectedResult).reason));
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} attempts got no answer`);
    const accepted = answers.filter((s) => s!.status === 200);
    const refused = answers.filter((s) => s!.status !== 200);
    assert.equal(accepted.length, 100);
    assert.equal(refused.length, 1900);
    for (const s of refused) await assertRefused(s!);

    // Responsive: answered while 100 streams are held open, rather than queued behind them (which
    // would never end). No bound on how fast: a busy machine may be slow without being wrong.
    const health = await client(server.url).get('/healthz');
    assert.equal(health.status, 200);
  });
});
