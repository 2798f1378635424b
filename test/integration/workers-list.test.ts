/**
 * The worker list stays bounded: `GET /api/workers` pages with limit/offset (every worker without
 * them, SPEC 4.3), and the reaper deletes workers unseen for WORKER_RETAIN_SECS that hold no lease.
 * Real stores and servers; the reaper's clock is injected, or WORKER_RETAIN_SECS made small.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { client, until } from '../helpers/http.js';
import { sandbox, serverProcess, startInProcess, tempDir } from '../helpers/server.js';
import { definitionHash, parseWorkflowObject } from '../../src/definitions/index.js';
import { Engine } from '../../src/engine/engine.js';
import { Reaper } from '../../src/runtime/reaper.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ConfigError, loadServerConfig } from '../../src/runtime/config.js';

test('GET /api/workers pages by worker id with limit/offset, lists every worker without them, and refuses bad values', async (t) => {
  const srv = await startInProcess();
  t.after(() => srv.close());
  const api = client(srv.url);
  const ids = Array.from({ length: 1005 }, (_, i) => `w${String(i).padStart(4, '0')}`);
  for (const id of [...ids].reverse()) assert.equal((await api.post('/api/workers/register', { worker_id: id, labels: [] })).status, 200);
  const list = async (query: string) => {
    const r = await api.get(`/api/workers${query}`);
    assert.equal(r.status, 200, r.text);
    return (r.body as Array<{ worker_id: string }>).map((w) => w.worker_id);
  };

  assert.deepEqual(await list(''), ids, 'no paging asked: every worker, by id');
  assert.deepEqual(await list('?limit=2'), ['w0000', 'w0001']);
  assert.deepEqual(await list('?limit=2&offset=2'), ['w0002', 'w0003']);
  assert.deepEqual(await list('?limit=0'), []);
  assert.deepEqual(await list('?offset=1004'), ['w1004']);
  assert.deepEqual(await list('?limit=5&offset=2000'), []);
  assert.equal((await list('?limit=5000')).length, 1000, 'limit is capped at 1000');
  assert.equal((await list('?offset=3')).length, 1000, 'offset alone: a page of at most 1000');

  for (const bad of ['limit=-1', 'offset=-1', 'limit=1.5', 'limit=abc', 'offset=x', 'offset=99999999999']) {
    const r = await api.get(`/api/workers?${bad}`);
    assert.equal(r.status, 400, `${bad}: ${r.text}`);
    assert.equal(r.body.error, 'invalid_request', bad);
    assert.match(r.body.message, /querystring\.(limit|offset)/, bad);
  }
});

test('the reaper deletes workers unseen for WORKER_RETAIN_SECS (7 days by default) that hold no lease, and keeps the rest', async (t) => {
  const dir = tempDir('weft-workers-prune-');
  const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
  let now = 1_000_000_000_000;
  const engine = new Engine({ store, logger: pino({ level: 'silent' }), now: () => now });
  t.after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const DAY = 86_400_000;
  await engine.registerWorker('quiet', []);
  const def = parseWorkflowObject({ id: 'w', jobs: { a: { run: 'x' } } }, { source: 'test' });
  await engine.createWorkflow(def, definitionHash(def));
  await engine.run('w');
  const held = await engine.claim({ worker_id: 'holder', labels: [], lease_ttl_secs: 30 * 86_400 });
  assert.ok(held, 'the job was claimed');
  now += 6 * DAY;
  await engine.registerWorker('recent', []);
  now += 1 * DAY + 1;
  const ids = async () => (await engine.listWorkers()).map((w) => w.worker_id);

  const reaper = new Reaper(engine.housekeeping, 10, pino({ level: 'silent' }));
  reaper.start();
  t.after(() => reaper.stop());
  await until(async () => !(await ids()).includes('quiet'), 'the reaper to delete the worker quiet for 7 days');
  assert.deepEqual(await ids(), ['holder', 'recent'], 'a worker holding a lease, and one seen 1 day ago, stay');

  // Once its job is done, the holder is forgotten a week after that last call.
  await engine.leases.complete(held.lease.lease_id, {});
  now += 7 * DAY + 1;
  await until(async () => !(await ids()).includes('holder'), 'the reaper to delete the holder once its lease is over');
  assert.deepEqual(await ids(), [], 'recent is now 8 days quiet as well');
});

test('WORKER_RETAIN_SECS is read at start: a real server forgets a quiet worker and keeps one holding a lease', async (t) => {
  const sb = sandbox(t, 'weft-workers-retain-');
  const srv = await serverProcess(t, sb, { WORKER_RETAIN_SECS: '1', REAP_INTERVAL_SECS: '0.1' });
  const api = client(srv.url);
  assert.equal((await api.post('/api/workflows', { id: 'w', jobs: { a: { run: 'true' } } })).status, 201);
  await api.run('w');
  // Seen first, then quiet: only its lease (an hour long) keeps it.
  assert.ok(await api.claim('holder', [], 3600));
  assert.equal((await api.post('/api/workers/register', { worker_id: 'quiet', labels: [] })).status, 200);
  await until(
    async () => !(await api.get('/api/workers')).body.some((w: { worker_id: string }) => w.worker_id === 'quiet'),
    'the quiet worker to be deleted',
    15_000,
  );
  const left = (await api.get('/api/workers')).body.map((w: { worker_id: string }) => w.worker_id);
  assert.deepEqual(left, ['holder']);
});

test('WORKER_RETAIN_SECS: default 7 days; a malformed value stops the start naming it', () => {
  assert.equal(loadServerConfig({}).workerRetainMs, 604_800_000);
  assert.equal(loadServerConfig({ WORKER_RETAIN_SECS: '90' }).workerRetainMs, 90_000);
  for (const bad of ['0', '-5', 'week', '0.5']) {
    assert.throws(() => loadServerConfig({ WORKER_RETAIN_SECS: bad }), (err: unknown) => err instanceof ConfigError && /WORKER_RETAIN_SECS/.test(err.message), bad);
  }
});
