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

test('a wake-up serves no waiter while a claim has the first pick, and serves them once it has had its try', async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const first = watch(waiters.wait({ worker_id: 'a', labels: [], max: 1 }, 600_000));
  const second = watch(waiters.wait({ worker_id: 'b', labels: [], max: 1 }, 600_000));
  await settle();
  const end = waiters.firstPick();
  const triesAtPick = p.tries.length;
  p.add(2);
  waiters.wake();
  await settle();
  assert.equal(p.tries.length, triesAtPick, 'no waiter tried while the claim with the first pick is out');
  // The claim took one of the two jobs and asked for no more.
  p.add(-1);
  end({ wakeCount: waiters.wakeCount, filled: true, labels: [] });
  await settle();
  assert.equal(first()?.length, 1, 'the queue head is served after the pick');
  assert.equal(second(), null, 'one job was left, and it went to the head');
  assert.deepEqual(p.tries.slice(triesAtPick), ['a', 'b']);
  waiters.close();
});

test('a first pick that found nothing left for the waiters\' labels after the last wake-up spares them a try', async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const answer = waiters.wait({ worker_id: 'a', labels: ['x'], max: 3 }, 600_000);
  await settle();
  const triesBefore = p.tries.length;
  const end = waiters.firstPick();
  waiters.wake();
  await settle();
  // The claim began after that wake-up and took fewer than it asked for: nothing is left.
  end({ wakeCount: waiters.wakeCount, filled: false, labels: ['x'] });
  await settle();
  assert.equal(p.tries.length, triesBefore, 'no try that could only come back empty');
  assert.equal(waiters.size, 1);
  waiters.close();
  assert.deepEqual(await answer, []);
});

test('after a first pick the waiters are tried when its claim was filled, failed, began before the last wake-up, or had other labels', async (t) => {
  for (const [what, tried] of [
    ['filled', (n: number) => ({ wakeCount: n, filled: true, labels: ['x'] })],
    ['failed', () => null],
    ['ended without a try', () => undefined],
    ['began before the wake-up', (n: number) => ({ wakeCount: n - 1, filled: false, labels: ['x'] })],
    ['other labels', (n: number) => ({ wakeCount: n, filled: false, labels: ['y'] })],
  ] as const) {
    const p = pool(0);
    const waiters = new ClaimWaiters(p.tryClaim, 600_000);
    t.after(() => waiters.close());
    const answer = watch(waiters.wait({ worker_id: 'a', labels: ['x'], max: 1 }, 600_000));
    await settle();
    const end = waiters.firstPick();
    waiters.wake();
    await settle();
    p.add(1);
    end(tried(waiters.wakeCount));
    await settle();
    assert.equal(answer()?.length, 1, `${what}: the waiter is tried and gets the job`);
    waiters.close();
  }
});

test('a wake-up waits for every first pick out when it began, and for none that came later', async (t) => {
  const p = pool(0);
  const waiters = new ClaimWaiters(p.tryClaim, 600_000);
  t.after(() => waiters.close());
  const answer = watch(waiters.wait({ worker_id: 'a', labels: [], max: 1 }, 600_000));
  await settle();
  const end1 = waiters.firstPick();
  const end2 = waiters.firstPick();
  p.add(1);
  waiters.wake();
  await settle();
  end1();
  end1();
  await settle();
  assert.equal(p.left(), 1, 'still waiting for the second pick');
  // Picks keep coming (a busy worker reporting): the wake-up does not wait for the new one.
  const end3 = waiters.firstPick();
  end2();
  await settle();
  assert.equal(answer()?.length, 1, 'served once the picks out at the wake-up had their try');
  end3();
  waiters.close();
});
