/**
 * What the server does while its store answers "unavailable" (the database restarting): requests get
 * 503 `store_unavailable` in weft's JSON shape, and the loops that run on their own (the reaper, long
 * polls, live log streams) log a warning and carry on. A real store (SQLite) with its operations
 * switched to failing, so every case is quick and independent of PostgreSQL.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Engine } from '../../src/engine/engine.js';
import { buildApp } from '../../src/http/app.js';
import { StoreUnavailableError, type Store } from '../../src/store/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { client, until } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import { json, openSse } from '../helpers/sse.js';

const OPERATIONS = [
  'read',
  'claim',
  'complete',
  'fail',
  'heartbeat',
  'pushLogs',
  'registerWorker',
  'startRun',
  'expireLeases',
  'timeOutJobs',
  'settleStrandedRuns',
] as const;

/** A store whose operations all fail as unavailable while `down` is true. */
function switchable(store: Store): { down: boolean } {
  const state = { down: false };
  const target = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const op of OPERATIONS) {
    const real = target[op]!.bind(store);
    target[op] = (...args: unknown[]) =>
      state.down ? Promise.reject(new StoreUnavailableError('database unavailable: no connection (ECONNREFUSED)')) : real(...args);
  }
  return state;
}

async function setup(t: TestContext) {
  const dir = tempDir();
  const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
  const lines: any[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  const engine = new Engine({ store, logger, claimSweepMs: 50 });
  const app = await buildApp({ engine, logger, logPollMs: 50 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  t.after(async () => {
    await app.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { url: `http://127.0.0.1:${port}`, engine, store: switchable(store), lines };
}

test('requests while the store is unavailable answer 503 store_unavailable as JSON, with Retry-After', async (t) => {
  const { url, store, lines } = await setup(t);
  const api = client(url);
  await api.createWorkflow({ id: 'w', jobs: { a: { run: 'true' } } });
  store.down = true;
  for (const r of [
    await api.get('/api/workflows/w/status'),
    await api.post('/api/workflows/w/run'),
    await api.post('/api/jobs/claim', { worker_id: 'w1', labels: [] }),
    await api.post('/api/jobs/some-lease/complete', { outputs: {} }),
    await api.post('/api/jobs/report-batch', { reports: [{ lease_id: 'some-lease', outcome: 'complete' }] }),
  ]) {
    assert.equal(r.status, 503, r.text);
    assert.equal(r.headers.get('content-type')?.split(';')[0], 'application/json');
    assert.equal(r.headers.get('retry-after'), '1');
    assert.deepEqual(r.body, {
      error: 'store_unavailable',
      message: 'database unavailable: no connection (ECONNREFUSED); try again shortly',
    });
  }
  assert.ok(lines.some((l) => l.msg === 'store unavailable; answered 503' && l.url === '/api/jobs/claim'), JSON.stringify(lines));
  assert.ok(!lines.some((l) => l.level >= 50), `nothing logged as an error: ${JSON.stringify(lines)}`);

  store.down = false;
  assert.equal((await api.get('/api/workflows/w/status')).status, 200);
});

test('the reaper logs a warning and tries again on its next pass', async (t) => {
  const { engine, store, lines } = await setup(t);
  store.down = true;
  assert.deepEqual(await engine.housekeeping.reap(), { expired: 0, timedOut: 0, approvalsTimedOut: 0 });
  assert.ok(
    lines.some((l) => l.level === 40 && l.loop === 'reaper' && /store unavailable/.test(l.msg)),
    JSON.stringify(lines),
  );
  store.down = false;
  assert.deepEqual(await engine.housekeeping.reap(), { expired: 0, timedOut: 0, approvalsTimedOut: 0 });
});

test('a long-polling claim outlives an outage and gets the job queued after it', async (t) => {
  const { url, engine, store, lines } = await setup(t);
  const api = client(url);
  await api.createWorkflow({ id: 'w', jobs: { a: { run: 'true' } } });
  const waiting = api.post('/api/jobs/claim', { worker_id: 'w1', labels: [], wait_secs: 10 });
  await until(() => engine.waitingClaims === 1, 'the claim to wait', 5000);
  store.down = true;
  await until(() => lines.some((l) => l.loop === 'long-poll claims'), 'the waiting claim to meet the outage', 5000);
  store.down = false;
  await api.run('w');
  const got = await waiting;
  assert.equal(got.status, 200, got.text);
  assert.equal(got.body?.job?.job_id, 'a');
});

test('a live log stream rides out a short outage and goes on to the end of its job', async (t) => {
  const { url, store, lines } = await setup(t);
  const api = client(url);
  await api.createWorkflow({ id: 'w', jobs: { a: { run: 'true' } } });
  await api.run('w');
  const stream = await openSse(`${url}/api/workflows/w/jobs/a/logs/stream`);
  t.after(() => stream.close());
  assert.equal(stream.status, 200, stream.text);
  store.down = true;
  await until(() => lines.some((l) => l.loop === 'log stream'), 'the stream to meet the outage', 5000);
  assert.equal(stream.ended, false, 'the stream is still open during the outage');
  store.down = false;
  const claimed = await api.claim('w1');
  assert.equal((await api.post(`/api/jobs/${claimed!.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'hi\n' }] })).status, 200);
  assert.equal((await api.post(`/api/jobs/${claimed!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  const events = await stream.waitForEnd(5000);
  assert.deepEqual(
    events.map((e) => [e.event, e.event === 'log' ? json(e).data : json(e).status]),
    [
      ['log', 'hi\n'],
      ['end', 'success'],
    ],
  );
});
