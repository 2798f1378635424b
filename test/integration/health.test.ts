/**
 * Health, readiness and request ids (docs/api.md "Health"), and the defaults a fresh `weft server`
 * starts with: loopback only, and a start line whatever LOG_LEVEL says.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import os from 'node:os';
import { client, request } from '../helpers/http.js';
import { openSse } from '../helpers/sse.js';
import { sandbox, serverProcess, startInProcess } from '../helpers/server.js';

test('GET /readyz answers 200 while the store answers and 503 with the JSON error once it does not', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const ok = await request('GET', `${s.url}/readyz`);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body, { ok: true });
  await s.store.close();
  const down = await request('GET', `${s.url}/readyz`);
  assert.equal(down.status, 503, down.text);
  assert.equal(down.body.error, 'store_unavailable');
  assert.match(down.body.message, /store does not answer/);
  // Health is about the process, not the store.
  assert.equal((await request('GET', `${s.url}/healthz`)).status, 200);
});

test('every answer carries x-request-id: the caller\'s own when it sent a sane one, a fresh one otherwise', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const mine = await request('GET', `${s.url}/healthz`, undefined, { 'x-request-id': 'trace-42.a' });
  assert.equal(mine.headers.get('x-request-id'), 'trace-42.a');
  const fresh = await request('GET', `${s.url}/api/workflows/nope`);
  assert.equal(fresh.status, 404);
  assert.match(fresh.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const hostile = await request('GET', `${s.url}/healthz`, undefined, { 'x-request-id': 'x'.repeat(500) });
  assert.match(hostile.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, 'an overlong id is replaced');
});

test('event streams carry x-request-id too: /api/events, a workflow\'s events and a job\'s live log', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow({ id: 'rid', jobs: { a: { run: 'true' } } });
  await api.run('rid');
  const paths = ['/api/events', '/api/workflows/rid/events', '/api/workflows/rid/jobs/a/logs/stream'];
  for (const [i, p] of paths.entries()) {
    const given = await openSse(`${s.url}${p}`, { 'x-request-id': `stream-${i}` });
    t.after(() => given.close());
    assert.equal(given.status, 200, `${p}: ${given.text}`);
    assert.match(given.headers.get('content-type') ?? '', /text\/event-stream/, p);
    assert.equal(given.headers.get('x-request-id'), `stream-${i}`, p);
    const fresh = await openSse(`${s.url}${p}`);
    t.after(() => fresh.close());
    assert.match(fresh.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, p);
  }
  // And their refusals, before any stream byte.
  const unknown = await openSse(`${s.url}/api/workflows/nope/jobs/a/logs/stream`, { 'x-request-id': 'gone-1' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get('x-request-id'), 'gone-1');
});

test('weft server binds loopback by default and prints its start line even with LOG_LEVEL=warn', async (t) => {
  const sb = sandbox(t);
  // serverProcess waits for the start line: it must come although info lines are off.
  const server = await serverProcess(t, sb, { HOST: undefined, LOG_LEVEL: 'warn' });
  assert.equal((await request('GET', `http://127.0.0.1:${server.port}/healthz`)).status, 200);
  const outside = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  if (outside) {
    const refused = await new Promise<boolean>((resolve) => {
      const sock = net.connect(server.port, outside);
      sock.once('connect', () => {
        sock.destroy();
        resolve(false);
      });
      sock.once('error', () => resolve(true));
    });
    assert.ok(refused, `not reachable on ${outside}`);
  }
});
