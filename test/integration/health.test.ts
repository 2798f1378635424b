/**
 * Health, readiness and request ids (docs/api.md "Health"), and the defaults a fresh `weft server`
 * starts with: loopback only, and a start line whatever LOG_LEVEL says.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import os from 'node:os';
import { request } from '../helpers/http.js';
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
