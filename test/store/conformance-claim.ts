/** Conformance: handing out jobs. */
import assert from 'node:assert/strict';
import { labelKey } from '../../src/domain/labels.js';
import type { Case } from './conformance.js';
import { change, claim, claimOne, claimRequest, complete, job, lease, read, start } from './fixtures.js';

const GPU = labelKey(['gpu']);

export function claimCases(withStore: Case): void {
  withStore('claim turns a queued job into a running one under a fresh lease and records the worker', async (store) => {
    await start(store, 'w', 1000, { timed: { timeout_secs: 10 }, open: {} });
    const req = claimRequest(2000, { worker: 'wk-1', labels: ['linux', 'gpu'], keys: ['', GPU], ttl: 45, max: 2 });
    const got = await store.claim(req);
    assert.deepEqual(got.map((c) => c.job.job_id), ['timed', 'open']);
    const [timed, open] = got;
    assert.equal(timed!.lease.lease_id, req.lease_ids[0], 'lease ids are used in order');
    assert.equal(open!.lease.lease_id, req.lease_ids[1]);
    const { row_id, ...rest } = timed!.job;
    assert.deepEqual(rest, {
      ...rest,
      status: 'running',
      attempt: 0,
      started_at_ms: 2000,
      finished_at_ms: null,
      deadline_ms: 12_000,
      worker_id: 'wk-1',
      lease_id: req.lease_ids[0],
    });
    assert.equal(open!.job.deadline_ms, null, 'no timeout, no deadline');
    assert.deepEqual(timed!.lease, {
      lease_id: req.lease_ids[0],
      job_row_id: row_id,
      workflow_id: 'w',
      run_number: 1,
      job_id: 'timed',
      attempt: 0,
      worker_id: 'wk-1',
      ttl_secs: 45,
      granted_at_ms: 2000,
      renewed_at_ms: 2000,
      expires_at_ms: 47_000,
      state: 'active',
      token_name: null,
    });
    assert.deepEqual(await job(store, 'w', 'timed'), timed!.job, 'the answer is what was stored');
    assert.deepEqual(await lease(store, req.lease_ids[0]!), timed!.lease);
    const active = await read(store, (r) => r.activeLeases());
    assert.deepEqual(active.map((l) => l.lease_id).sort(), [...req.lease_ids].sort());
    const wk = await read(store, (r) => r.getWorker('wk-1'));
    assert.deepEqual(wk && { labels: wk.labels, last_seen_ms: wk.last_seen_ms }, { labels: ['gpu', 'linux'], last_seen_ms: 2000 });
  });

  withStore('claim takes only jobs of the given label keys that are ready; [] when nothing fits', async (store) => {
    await start(store, 'w', 1000, { plain: {}, gpu: { labels: ['gpu'] }, later: { needs: ['plain'] } });
    assert.deepEqual(await claim(store, 999, { keys: ['', GPU], max: 5 }), [], 'nothing is ready before ready_at_ms');
    assert.deepEqual(await claim(store, 5000, { keys: [labelKey(['other'])], max: 5 }), []);
    assert.deepEqual(await claim(store, 5000, { keys: [], max: 5 }), []);
    await claimOne(store, 5000, 'gpu', { keys: [GPU], labels: ['gpu'] });
    await claimOne(store, 5000, 'plain', { keys: ['', GPU] });
    assert.deepEqual(await claim(store, 5000, { keys: ['', GPU], max: 5 }), [], 'pending and running jobs are not claimable');
    // An empty answer still records the worker that asked.
    assert.deepEqual(await claim(store, 6000, { worker: 'idle', labels: ['x'], max: 3 }), []);
    const idle = await read(store, (r) => r.getWorker('idle'));
    assert.deepEqual(idle && [idle.labels, idle.last_seen_ms], [['x'], 6000]);
  });

  withStore('a retried waiting claim records its worker only when it takes a job, alone or together with other claims', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: {} });
    await claimOne(store, 2000, 'a', { worker: 'busy' });
    // Nothing for it: not recorded (a retry is no call of the worker's; the store writes nothing).
    assert.deepEqual(await claim(store, 3000, { worker: 'ghost', keys: [labelKey(['none'])], retry: true }), []);
    assert.equal(await read(store, (r) => r.getWorker('ghost')), null);
    assert.deepEqual(await claim(store, 3000, { worker: 'busy', keys: [labelKey(['none'])], retry: true }), []);
    assert.equal((await read(store, (r) => r.getWorker('busy')))?.last_seen_ms, 2000, 'an empty retry leaves last_seen_ms alone');
    // A retry that takes a job records its worker as a call would.
    await claimOne(store, 4000, 'b', { worker: 'ghost', labels: ['x'], retry: true });
    const ghost = await read(store, (r) => r.getWorker('ghost'));
    assert.deepEqual(ghost && [ghost.labels, ghost.last_seen_ms], [['x'], 4000]);
    // Several at once (one statement on PostgreSQL): each is recorded by its own rule.
    await start(store, 'v', 5000, { c: {} });
    const got = await Promise.all([
      claim(store, 6000, { worker: 'r1', retry: true }),
      claim(store, 6000, { worker: 'r2', retry: true }),
      claim(store, 6000, { worker: 'caller' }),
    ]);
    assert.equal(got.flat().length, 1, 'the one job went to one of them');
    const taker = got.findIndex((g) => g.length === 1);
    const seen = await Promise.all(['r1', 'r2', 'caller'].map((w) => read(store, (r) => r.getWorker(w))));
    assert.deepEqual(
      seen.map((wk) => wk?.last_seen_ms ?? null),
      ['r1', 'r2', 'caller'].map((w, i) => (w === 'caller' || i === taker ? 6000 : null)),
      `recorded: the caller and the taker (${taker})`,
    );
  });

  withStore('claim hands out the oldest first by ready_at_ms, then row order, across label keys', async (store) => {
    // Started later in wall order but with an earlier clock, so rows and ready times disagree.
    await start(store, 'late', 500, { y: {}, x: {} });
    await start(store, 'early', 100, { q: { labels: ['gpu'] }, p: {} });
    const first = await claim(store, 1000, { keys: ['', GPU], labels: ['gpu'], max: 2 });
    assert.deepEqual(first.map((c) => c.job.job_id), ['q', 'p']);
    await claimOne(store, 1000, 'y', { keys: ['', GPU], labels: ['gpu'] });
    const rest = await claim(store, 1000, { keys: ['', GPU], labels: ['gpu'], max: 5 });
    assert.deepEqual(rest.map((c) => c.job.job_id), ['x']);
    assert.deepEqual(await claim(store, 1000, { keys: ['', GPU], max: 5 }), []);
  });

  withStore('claim takes the highest priority first across label keys and workflows, oldest first within a priority', async (store) => {
    // A backlog at 0, older than everything else; urgent work at 10 in another workflow and label key; a low one at -5.
    await start(store, 'backlog', 100, { b1: {}, b2: {}, b3: {} });
    await start(store, 'hotfix', 500, { h2: { priority: 10, labels: ['gpu'] }, h1: { priority: 10 } });
    await start(store, 'later', 50, { low: { priority: -5 } });
    await start(store, 'urgent', 900, { u: { priority: 100 } });
    const first = await claim(store, 1000, { keys: ['', GPU], labels: ['gpu'], max: 3 });
    assert.deepEqual(first.map((c) => [c.job.job_id, c.job.priority]), [['u', 100], ['h2', 10], ['h1', 10]],
      'highest priority first; within one, ready_at_ms then row order, across label keys');
    const next = await claim(store, 1000, { keys: ['', GPU], labels: ['gpu'], max: 1 });
    assert.deepEqual(next.map((c) => c.job.job_id), ['b1'], 'then the backlog, oldest first');
    const rest = await claim(store, 1000, { keys: ['', GPU], labels: ['gpu'], max: 5 });
    assert.deepEqual(rest.map((c) => c.job.job_id), ['b2', 'b3', 'low'], 'a negative priority waits for everything at 0, however old');
    assert.equal((await job(store, 'hotfix', 'h1')).priority, 10, 'the stored job keeps its priority');
  });

  withStore('a high-priority job waiting on its backoff does not hold back claimable jobs below it', async (store) => {
    await start(store, 'w', 1000, { r: { priority: 50, max_retries: 1, backoff: { kind: 'fixed', delay_secs: 60 } }, s: {}, t: { priority: -1 } });
    const first = await claimOne(store, 1000, 'r');
    assert.equal((await store.fail(first.lease.lease_id, 'flaky', true, 2000)).kind, 'failed');
    assert.deepEqual((await claim(store, 3000, { max: 5 })).map((c) => c.job.job_id), ['s', 't'], 'the retry is not ready yet');
    const retry = await claimOne(store, 62_000, 'r');
    assert.deepEqual([retry.job.attempt, retry.job.priority], [1, 50], 'the retry keeps its priority');
  });

  withStore('a retry waits for its backoff, then is claimed with its new attempt', async (store) => {
    await start(store, 'w', 1000, { r: { max_retries: 1, backoff: { kind: 'fixed', delay_secs: 10 } }, s: {} });
    const first = await claimOne(store, 1000, 'r');
    const failed = await store.fail(first.lease.lease_id, 'flaky', true, 2000);
    assert.equal(failed.kind, 'failed');
    const held = await claim(store, 11_999, { max: 5 });
    assert.deepEqual(held.map((c) => c.job.job_id), ['s'], 'the retry is held until delayed_until_ms');
    const retry = await claimOne(store, 12_000, 'r');
    assert.deepEqual(
      [retry.job.attempt, retry.lease.attempt, retry.job.delayed_until_ms, retry.job.ready_at_ms, retry.job.started_at_ms],
      [1, 1, 12_000, 12_000, 12_000],
    );
    assert.equal(retry.job.error, 'flaky', 'the previous attempt’s error stays visible while running');
  });

  withStore('claim with max > 1 stops at what is claimable and never repeats a job', async (store) => {
    await start(store, 'w', 1000, Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`j${i}`, {}])));
    const a = await claim(store, 1000, { max: 4 });
    const b = await claim(store, 1000, { max: 4 });
    assert.deepEqual(a.map((c) => c.job.job_id), ['j0', 'j1', 'j2', 'j3']);
    assert.deepEqual(b.map((c) => c.job.job_id), ['j4', 'j5', 'j6']);
    assert.equal(new Set([...a, ...b].map((c) => c.lease.lease_id)).size, 7);
  });

  withStore('releaseLeases hands unused claims back in their place; other leases are left alone', async (store) => {
    await start(store, 'w', 1000, { a: { timeout_secs: 60 }, b: {}, c: {} });
    const [a, , c] = await claim(store, 2000, { max: 3 });
    await complete(store, c!.lease.lease_id, {}, 2100);
    const changes = await store.releaseLeases([a!.lease.lease_id, c!.lease.lease_id, 'unknown-lease']);
    assert.deepEqual(changes, [change('w', 'a')]);
    const back = await job(store, 'w', 'a');
    assert.deepEqual(
      [back.status, back.attempt, back.ready_at_ms, back.enqueued_at_ms, back.started_at_ms, back.deadline_ms, back.worker_id, back.lease_id],
      ['queued', 0, 1000, 1000, null, null, null, null],
    );
    assert.equal((await lease(store, a!.lease.lease_id)).state, 'released');
    assert.equal((await lease(store, c!.lease.lease_id)).state, 'completed');
    assert.equal((await job(store, 'w', 'b')).status, 'running');
    assert.deepEqual(await store.heartbeat(a!.lease.lease_id, 2300), { kind: 'settled', state: 'released' });
    assert.deepEqual(await store.complete(a!.lease.lease_id, {}, 2300), { kind: 'settled', state: 'released' });
    assert.deepEqual(await store.releaseLeases([a!.lease.lease_id]), [], 'released once');
    const again = await claimOne(store, 2500, 'a');
    assert.equal(again.job.attempt, 0, 'a release is not a failure');
  });
}
