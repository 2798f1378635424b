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

/**
 * Claims that take from a pool of `jobs` jobs, recording which worker tried; answered at once.
 * `pending()` settles once no wake-up cycle is running.
 */
function pool(jobs: number) {
  const tries: string[] = [];
  const tryClaim = async (a: NormalizedClaim) => {
    tries.push(a.worker_id);
    if (jobs === 0) return [];
    jobs--;
    return [{ job: { job_id: `j${jobs}` }, lease: { lease_id: `l${jobs}` } } as unknown as ClaimResult];
  };
  return { tryClaim, tries, add: (n: number) => (jobs += n), left: () => jobs };
}

/** Lets every wake-up cycle in flight run to its end (the pool answers within a few microtasks). */
const settle = () => new Promise<void>((r) => setImmediate(r));

/** A waiter's answer as it stands: null while it still waits. */
function watch(answer: Promise<ClaimResult[]>): () => ClaimResult[] | null {
  let got: ClaimResult[] | null = null;
  void answer.then((a) => (got = a));
  return () => got;
}

test("a held worker's waiter is passed over, the next worker's waiter is served, and the held one is tried when the hold ends", async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const first = watch(waiters.wait({ worker_id: 'a', labels: [], max: 1 }, 600_000));
  const second = watch(waiters.wait({ worker_id: 'b', labels: [], max: 1 }, 600_000));
  await settle();
  const end = waiters.hold('a');
  const triesAtHold = p.tries.length;
  p.add(1);
  waiters.wake();
  await settle();
  assert.equal(second()?.length, 1, "the next worker's waiter gets the job");
  assert.equal(first(), null, 'the held waiter still waits');
  p.add(1);
  end();
  await settle();
  assert.equal(first()?.length, 1, 'the held waiter is tried once the hold ends');
  assert.deepEqual(p.tries.slice(triesAtHold), ['b', 'a'], 'never tried while held, then tried once');
  waiters.close();
});

test('a hold whose claim found the queue empty after the last wake-up ends without another try', async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const answer = waiters.wait({ worker_id: 'a', labels: ['x'], max: 3 }, 600_000);
  await settle();
  const triesBefore = p.tries.length;
  const end = waiters.hold('a');
  waiters.wake();
  await settle();
  // The held claim began after that wake-up and took 1 of the 2 it asked for: nothing is left.
  end({ wakeCount: waiters.wakeCount, filled: false, labels: ['x'] });
  await settle();
  assert.equal(p.tries.length, triesBefore, 'no try that could only come back empty');
  assert.equal(waiters.size, 1);
  waiters.close();
  assert.deepEqual(await answer, []);
});

test('a hold ends with a try when its claim was filled, failed, began before the last wake-up, or had other labels', async (t) => {
  for (const [what, tried] of [
    ['filled', (n: number) => ({ wakeCount: n, filled: true, labels: ['x'] })],
    ['failed', () => null],
    ['began before a wake-up that passed the waiter over', (n: number) => ({ wakeCount: n - 1, filled: false, labels: ['x'] })],
    ['other labels', (n: number) => ({ wakeCount: n, filled: false, labels: ['y'] })],
  ] as const) {
    const p = pool(0);
    const waiters = new ClaimWaiters(p.tryClaim, 600_000);
    t.after(() => waiters.close());
    const answer = watch(waiters.wait({ worker_id: 'a', labels: ['x'], max: 1 }, 600_000));
    await settle();
    const end = waiters.hold('a');
    waiters.wake();
    await settle();
    p.add(1);
    end(tried(waiters.wakeCount));
    await settle();
    assert.equal(answer()?.length, 1, `${what}: the waiter is tried and gets the job`);
    waiters.close();
  }
});

test('a waiter held by two claims at once is tried only when both have ended', async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const answer = watch(waiters.wait({ worker_id: 'a', labels: [], max: 1 }, 600_000));
  await settle();
  const end1 = waiters.hold('a');
  const end2 = waiters.hold('a');
  p.add(1);
  waiters.wake();
  await settle();
  end1();
  end1();
  await settle();
  assert.equal(p.left(), 1, 'still held by the second claim');
  end2();
  await settle();
  assert.equal(answer()?.length, 1);
  waiters.close();
});
