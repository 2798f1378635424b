/**
 * Conformance: the notification outbox (README "Notifications"): one notification per run and target
 * however often it is created, claims that are exclusive and time-limited, retries scheduled and
 * claimed when due, final states, the list, and deletion with the workflow.
 */
import assert from 'node:assert/strict';
import type { NewNotification, NotificationRecord, Store } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { claimOne, read, start } from './fixtures.js';

const note = (wf: string, run: number, target: string, id: string, at = 1000): NewNotification => ({
  id,
  workflow_id: wf,
  run_number: run,
  run_status: 'failed',
  target,
  url: `https://example.test/hook/${target}`,
  secret_name: target === 'server' ? null : 'HOOK_KEY',
  format: null,
  payload: JSON.stringify({ workflow_id: wf, run_number: run }),
  created_at_ms: at,
});

const claimAt = (store: Store, now: number, claimId: string, limit = 10, claimMs = 1000) =>
  store.claimNotifications({ now_ms: now, limit, claim_ms: claimMs, claim_id: claimId });

const ids = (rows: readonly NotificationRecord[]) => rows.map((r) => r.id).sort();
const list = (store: Store, q: { workflow_id?: string; run_number?: number; status?: NotificationRecord['status'] } = {}) =>
  read(store, (r) => r.listNotifications({ limit: 100, offset: 0, ...q }));
const one = async (store: Store, id: string) => {
  const found = (await list(store)).find((n) => n.id === id);
  if (!found) throw new Error(`no notification ${id}`);
  return found;
};

export function notificationCases(withStore: Case): void {
  withStore('a notification is created once per run and target, however often its run end is handled', async (store) => {
    assert.equal(await store.createNotifications([note('wf', 1, 'notify[0]', 'd-1'), note('wf', 1, 'server', 'd-2')]), 2);
    // The handler seen again (another server, or a crash before it was marked done) makes new ids.
    assert.equal(await store.createNotifications([note('wf', 1, 'notify[0]', 'd-3'), note('wf', 1, 'server', 'd-4'), note('wf', 2, 'server', 'd-5')]), 1);
    assert.equal(await store.createNotifications([]), 0);
    const all = await list(store);
    assert.deepEqual(ids(all), ['d-1', 'd-2', 'd-5'], 'the first ids are kept: a delivery id never changes');
    const first = all.find((n) => n.id === 'd-1')!;
    assert.deepEqual(
      { ...first, seq: 0 },
      {
        ...note('wf', 1, 'notify[0]', 'd-1'),
        seq: 0,
        status: 'pending',
        attempts: 0,
        due_at_ms: 1000,
        claim_id: null,
        last_error: null,
        delivered_at_ms: null,
        updated_at_ms: 1000,
      },
    );
    assert.deepEqual(all.map((n) => n.id), ['d-5', 'd-2', 'd-1'], 'newest first');
  });

  withStore('the list pages and filters by workflow, run and state', async (store) => {
    await store.createNotifications([note('a', 1, 'server', 'a1'), note('a', 2, 'server', 'a2'), note('b', 1, 'server', 'b1'), note('a', 2, 'notify[0]', 'a2n')]);
    assert.deepEqual((await list(store, { workflow_id: 'a' })).map((n) => n.id), ['a2n', 'a2', 'a1']);
    assert.deepEqual((await list(store, { workflow_id: 'a', run_number: 2 })).map((n) => n.id), ['a2n', 'a2']);
    assert.deepEqual((await read(store, (r) => r.listNotifications({ limit: 2, offset: 1 }))).map((n) => n.id), ['b1', 'a2']);
    assert.deepEqual((await read(store, (r) => r.listNotifications({ limit: 2, offset: 4 }))).map((n) => n.id), []);
    const [claimed] = await claimAt(store, 1000, 'c', 1);
    assert.equal(claimed!.id, 'a1', 'the oldest due first');
    await store.settleNotification('a1', 'c', { kind: 'delivered' }, 1100);
    assert.deepEqual((await list(store, { status: 'delivered' })).map((n) => n.id), ['a1']);
    assert.deepEqual((await list(store, { status: 'pending' })).map((n) => n.id), ['a2n', 'b1', 'a2']);
    assert.deepEqual((await list(store, { workflow_id: 'a', status: 'pending' })).map((n) => n.id), ['a2n', 'a2']);
    assert.deepEqual((await list(store, { workflow_id: 'a', run_number: 1, status: 'pending' })).map((n) => n.id), []);
  });

  withStore('a claim takes due notifications once, counts an attempt, and runs out at its time', async (store) => {
    await store.createNotifications([note('wf', 1, 'server', 'd-1', 1000), note('wf', 2, 'server', 'd-2', 5000)]);
    assert.equal(await read(store, (r) => r.nextNotificationDue()), 1000);
    assert.deepEqual(await claimAt(store, 999, 'early'), [], 'nothing is due before its time');
    const first = await claimAt(store, 1000, 'c1', 10, 2000);
    assert.deepEqual(ids(first), ['d-1']);
    assert.deepEqual(
      [first[0]!.status, first[0]!.attempts, first[0]!.claim_id, first[0]!.due_at_ms, first[0]!.updated_at_ms],
      ['delivering', 1, 'c1', 3000, 1000],
    );
    assert.deepEqual(await claimAt(store, 2999, 'c2'), [], 'held by its claim until then');
    assert.equal(await read(store, (r) => r.nextNotificationDue()), 3000, 'the end of the claim is when it is due again');

    // The claimer went away (a crash): once the claim ran out, any claimer takes it again.
    const again = await claimAt(store, 3000, 'c2', 10, 2000);
    assert.deepEqual(ids(again), ['d-1']);
    assert.deepEqual([again[0]!.attempts, again[0]!.claim_id], [2, 'c2']);
    assert.equal(await store.settleNotification('d-1', 'c1', { kind: 'delivered' }, 3100), false, 'the lapsed claim settles nothing');
    assert.equal((await one(store, 'd-1')).status, 'delivering');
    assert.equal(await store.settleNotification('d-1', 'c2', { kind: 'delivered' }, 3200), true);
    assert.equal(await store.settleNotification('d-1', 'c2', { kind: 'delivered' }, 3300), false, 'settled once');
    const done = await one(store, 'd-1');
    assert.deepEqual([done.status, done.delivered_at_ms, done.due_at_ms, done.claim_id, done.attempts], ['delivered', 3200, null, null, 2]);
    assert.deepEqual(await claimAt(store, 1e12, 'late').then(ids), ['d-2'], 'a delivered notification is never claimed again');
  });

  withStore('a failed attempt is retried at its time; a notification that gives up is failed for good', async (store) => {
    await store.createNotifications([note('wf', 1, 'server', 'd-1')]);
    await claimAt(store, 1000, 'c1');
    assert.equal(await store.settleNotification('d-1', 'c1', { kind: 'retry', at_ms: 4000, error: 'connection refused' }, 1200), true);
    let n = await one(store, 'd-1');
    assert.deepEqual([n.status, n.due_at_ms, n.last_error, n.claim_id, n.attempts], ['pending', 4000, 'connection refused', null, 1]);
    assert.equal(await read(store, (r) => r.nextNotificationDue()), 4000);
    assert.deepEqual(await claimAt(store, 3999, 'c2'), []);
    assert.deepEqual(await claimAt(store, 4000, 'c2').then(ids), ['d-1']);
    assert.equal(await store.settleNotification('d-1', 'c2', { kind: 'failed', error: 'HTTP 500' }, 4100), true);
    n = await one(store, 'd-1');
    assert.deepEqual([n.status, n.due_at_ms, n.last_error, n.attempts], ['failed', null, 'HTTP 500', 2]);
    assert.deepEqual(await claimAt(store, 1e12, 'c3'), [], 'a failed notification is not claimed again');
    assert.equal(await read(store, (r) => r.nextNotificationDue()), null);

    // A delivery after failed attempts keeps the last error for whoever looks into it.
    await store.createNotifications([note('wf', 2, 'server', 'd-2', 5000)]);
    await claimAt(store, 5000, 'c4');
    await store.settleNotification('d-2', 'c4', { kind: 'retry', at_ms: 5500, error: 'HTTP 503' }, 5100);
    await claimAt(store, 5500, 'c5');
    await store.settleNotification('d-2', 'c5', { kind: 'delivered' }, 5600);
    n = await one(store, 'd-2');
    assert.deepEqual([n.status, n.last_error, n.attempts, n.delivered_at_ms], ['delivered', 'HTTP 503', 2, 5600]);
  });

  withStore('final notifications age out; pending ones stay; a deleted workflow takes its notifications along', async (store) => {
    await start(store, 'gone', 1000, { a: {} });
    await store.createNotifications([note('keep', 1, 'server', 'k-1'), note('keep', 2, 'server', 'k-2'), note('keep', 3, 'server', 'k-3'), note('gone', 1, 'server', 'g-1')]);
    assert.equal((await claimAt(store, 1000, 'c')).length, 4);
    assert.equal(await store.settleNotification('k-1', 'c', { kind: 'delivered' }, 2000), true);
    assert.equal(await store.settleNotification('k-2', 'c', { kind: 'failed', error: 'no' }, 2000), true);
    assert.equal(await store.pruneNotifications(2000, 10), 0, 'only what was settled before the time');
    assert.equal(await store.pruneNotifications(2001, 1), 1, 'at most the limit');
    assert.equal(await store.pruneNotifications(2001, 10), 1);
    assert.deepEqual(ids(await list(store)), ['g-1', 'k-3']);

    const c = await claimOne(store, 1000, 'a');
    await store.fail(c.lease.lease_id, 'boom', false, 1100);
    assert.equal((await store.deleteWorkflow('gone', { max_runs: 100, max_log_chunks: 1000 })), 'deleted');
    assert.deepEqual(ids(await list(store)), ['k-3']);
    // The id made again starts at run 1 again, and its run end is told again.
    assert.equal(await store.createNotifications([note('gone', 1, 'server', 'g-2')]), 1);
  });

  withStore("a run's failed jobs, in row order, at most the limit", async (store) => {
    await start(store, 'wf', 1000, { a: {}, b: {}, c: {}, d: { needs: ['a'] } });
    for (const id of ['a', 'b', 'c']) {
      const c = await claimOne(store, 1000, id);
      if (id === 'c') await store.complete(c.lease.lease_id, {}, 1100);
      else await store.fail(c.lease.lease_id, `${id} broke`, false, 1100);
    }
    assert.deepEqual(await read(store, (r) => r.failedJobsOfRun('wf', 1, 10)), [
      { job_id: 'a', name: 'Job a', attempt: 0, error: 'a broke' },
      { job_id: 'b', name: 'Job b', attempt: 0, error: 'b broke' },
    ]);
    assert.deepEqual((await read(store, (r) => r.failedJobsOfRun('wf', 1, 1))).map((j) => j.job_id), ['a']);
    assert.deepEqual(await read(store, (r) => r.failedJobsOfRun('wf', 2, 10)), []);
  });
}

/**
 * Claimers on several connections (stores of their own, as servers have) claim the same due
 * notifications at once, again and again: every notification is claimed exactly once.
 */
export async function notificationClaimRace(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another(), h.another()]);
  try {
    const total = 120;
    const rows = Array.from({ length: total }, (_, i) => note(`wf${i % 7}`, Math.floor(i / 7) + 1, 'server', `d-${i}`, 1000));
    await store.createNotifications(rows);
    const claimers = [store, ...others];
    const got = await Promise.all(
      claimers.map(async (s, k) => {
        const mine: string[] = [];
        for (let round = 0; ; round++) {
          const claimed = await claimAt(s, 2000, `claimer-${k}-${round}`, 3, 60_000);
          if (claimed.length === 0) break;
          mine.push(...claimed.map((c) => c.id));
        }
        return mine;
      }),
    );
    const all = got.flat();
    assert.equal(all.length, total, `claimed ${all.length} times for ${total} notifications`);
    assert.equal(new Set(all).size, total, 'no notification claimed twice');
    const listed = await read(store, (r) => r.listNotifications({ limit: 1000, offset: 0 }));
    assert.ok(listed.every((n) => n.status === 'delivering' && n.attempts === 1));
  } finally {
    await Promise.all(others.map((o) => o.close()));
  }
}
