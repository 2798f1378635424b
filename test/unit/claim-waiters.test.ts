/**
 * ClaimWaiters (src/engine/claim-waiters.ts) on its own: a claim attempt that grants leases while its
 * waiter's deadline passes or its client leaves must still deliver them, never drop them unseen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClaimWaiters, type NormalizedClaim } from '../../src/engine/claim-waiters.js';
import type { ClaimResult } from '../../src/protocol/wire.js';

const ask: NormalizedClaim = { worker_id: 'w', labels: [], max: 1 };
const granted = { job: { job_id: 'j' }, lease: { lease_id: 'l1' } } as unknown as ClaimResult;

/** A claim attempt held open until `grant`; `started` resolves once it is out. */
function slowClaims() {
  let release: (r: ClaimResult[]) => void = () => {};
  let onStart: () => void = () => {};
  const started = new Promise<void>((r) => (onStart = r));
  const tryClaim = (_: NormalizedClaim) =>
    new Promise<ClaimResult[]>((resolve) => {
      release = resolve;
      onStart();
    });
  return { tryClaim, started, grant: (r: ClaimResult[]) => release(r) };
}

test('a waiter whose deadline passes while a claim for it is out gets what that claim granted', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const c = slowClaims();
  const waiters = new ClaimWaiters(c.tryClaim, 600_000);
  const answer = waiters.wait(ask, 20);
  await c.started;
  // The deadline passes with the claim still out.
  t.mock.timers.tick(30);
  c.grant([granted]);
  assert.deepEqual(await answer, [granted]);
  assert.equal(waiters.size, 0);
  waiters.close();
});

test('a waiter whose client leaves while a claim for it is out gets the claim (its caller hands it back)', async () => {
  const c = slowClaims();
  const waiters = new ClaimWaiters(c.tryClaim, 600_000);
  const gone = new AbortController();
  const answer = waiters.wait(ask, 600_000, gone.signal);
  await c.started;
  gone.abort();
  c.grant([granted]);
  assert.deepEqual(await answer, [granted]);
  assert.equal(waiters.size, 0);
  waiters.close();
});

test('a waiter whose deadline passed during an empty claim is answered empty at once, not left waiting', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const c = slowClaims();
  const waiters = new ClaimWaiters(c.tryClaim, 600_000);
  const answer = waiters.wait(ask, 20);
  await c.started;
  t.mock.timers.tick(30);
  c.grant([]);
  assert.deepEqual(await answer, []);
  assert.equal(waiters.size, 0);
  waiters.close();
});
