/**
 * Graceful shutdown of `weft server`: SIGTERM finishes what is in flight and exits,
 * whatever clients keep connected.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sandbox, serverProcess } from '../helpers/server.js';

/** Rejects when `p` does not settle within `ms`, naming what it waited for. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
  ]);
}

test('SIGTERM ends the server even while a client holds a connection that carries no request', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb);
  // A connection with no request on it: what a client's spare keep-alive socket looks like.
  const idle = net.connect(server.port, '127.0.0.1');
  t.after(() => idle.destroy());
  await new Promise<void>((resolve, reject) => idle.once('connect', resolve).once('error', reject));
  server.kill('SIGTERM');
  // Its keep-alive would otherwise hold the close for as long as the client keeps the socket open.
  assert.equal(await within(server.exited, 20_000, 'the server exiting'), 0);
});
