/** Conformance: heartbeat, complete and fail, with every refusal a lease call can meet. */
import assert from 'node:assert/strict';
import { LEASE_EXPIRED_ERROR, planFailure, timedOutError } from '../../src/domain/retry.js';
import type { Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { change, claim, claimOne, complete, job, lease, read, runStatus, sortedChanges, start } from './fixtures.js';

type Call = 'heartbeat' | 'complete' | 'fail' | 'pushLogs';
const CALLS: Call[] = ['heartbeat', 'complete', 'fail', 'pushLogs'];

function call(store: Store, kind: Call, leaseId: string, now: number, holder: string | null = null) {
  switch (kind) {
    case 'heartbeat':
      return store.heartbeat(leaseId, now, holder);
    case 'complete':
      return store.complete(leaseId, { late: '1' }, now, holder);
    case 'fail':
      return store.fail(leaseId, 'late', true, now, holder);
    case 'pushLogs':
      return store.pushLogs(leaseId, [{ sequence: 99, data: 'late' }], now, holder);
  }
}

async function logCount(store: Store, wf: string, jobId: string, attempt = 0) {
  return (await read(store, (r) => r.getLogChunks({ workflow_id: wf, run_number: 1, job_id: jobId, attempt }))).length;
}

export function leaseCases(withStore: Case): void {
  withStore('heartbeat renews by the lease’s own ttl from now, up to its last millisecond, and sees the worker', async (store) => {
    await start(store, 'w', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a', { ttl: 30, worker: 'wk-hb' });
    const hb = await store.heartbeat(c.lease.lease_id, 31_000);
    assert.deepEqual(hb, { kind: 'renewed', lease: { ...c.lease, renewed_at_ms: 31_000, expires_at_ms: 61_000 } });
    assert.deepEqual(await lease(store, c.lease.lease_id), { ...c.lease, renewed_at_ms: 31_000, expires_at_ms: 61_000 });
    assert.equal((await read(store, (r) => r.getWorker('wk-hb')))?.last_seen_ms, 31_000, 'a lease call records the worker');
    await complete(store, c.lease.lease_id, {}, 40_000);
    assert.equal((await read(store, (r) => r.getWorker('wk-hb')))?.last_seen_ms, 40_000);
  });

  withStore('every lease call on an unknown lease answers not_found', async (store) => {
    for (const kind of CALLS) assert.deepEqual(await call(store, kind, '00000000-0000-4000-8000-000000000000', 1000), { kind: 'not_found' }, kind);
  });

  withStore('every lease call on a settled lease answers settled with its state and changes nothing', async (store) => {
    await start(store, 'w', 1000, {
      c: { max_retries: 5 },
      f: { max_retries: 5 },
      e: { max_retries: 5 },
      t: { max_retries: 5, timeout_secs: 5 },
    });
    const got = await claim(store, 1000, { max: 4, ttl: 100 });
    const id = (j: string) => got.find((c) => c.job.job_id === j)!.lease.lease_id;
    await complete(store, id('c'), {}, 2000);
    assert.equal((await store.fail(id('f'), 'x', true, 2000)).kind, 'failed');
    // t's deadline (6000) passes before e's lease (101_000) ends.
    assert.deepEqual((await store.timeOutJobs(7000, 10)).changes, [change('w', 't')]);
    assert.deepEqual((await store.expireLeases(200_000, 10)).changes, [change('w', 'e')]);
    const states = { c: 'completed', f: 'failed', e: 'expired', t: 'timed_out' } as const;
    const before = await read(store, (r) => r.getRunJobs('w', 1));
    for (const [j, state] of Object.entries(states)) {
      for (const kind of CALLS) {
        assert.deepEqual(await call(store, kind, id(j), 300_000), { kind: 'settled', state }, `${kind} on a ${state} lease`);
      }
      assert.equal(await logCount(store, 'w', j), 0, 'no logs stored on a settled lease');
    }
    assert.deepEqual(await read(store, (r) => r.getRunJobs('w', 1)), before);
    assert.equal((await read(store, (r) => r.getWorker('wk')))?.last_seen_ms, 300_000, 'a refused call still sees the worker');
  });

  withStore('a lease call that finds its lease expired applies the expiry: re-queued with budget left', async (store) => {
    for (const [i, kind] of CALLS.entries()) {
      const wf = `w${i}`;
      await start(store, wf, 1000, { a: { max_retries: 1 } });
      const c = await claimOne(store, 1000, 'a', { ttl: 10, keys: [''] });
      const out = await call(store, kind, c.lease.lease_id, 11_001);
      assert.equal(out.kind, 'expired', kind);
      if (out.kind !== 'expired') continue;
      assert.deepEqual([out.lease.lease_id, out.lease.state], [c.lease.lease_id, 'expired']);
      assert.deepEqual(out.changes, [change(wf, 'a')], kind);
      const j = await job(store, wf, 'a');
      assert.deepEqual(out.job, j, `${kind}: the job after the expiry`);
      assert.deepEqual(out.ran, c.job, `${kind}: the job as the expired attempt ran (its claim, worker and ready time)`);
      assert.deepEqual(
        [j.status, j.attempt, j.error, j.ready_at_ms, j.lease_id, j.worker_id, j.outputs],
        ['queued', 1, LEASE_EXPIRED_ERROR, 11_001, null, null, null],
        kind,
      );
      assert.equal((await lease(store, c.lease.lease_id)).state, 'expired', kind);
      assert.equal(await logCount(store, wf, 'a'), 0, `${kind}: nothing stored through an expired lease`);
      assert.deepEqual(await call(store, kind, c.lease.lease_id, 11_002), { kind: 'settled', state: 'expired' }, kind);
      assert.equal((await job(store, wf, 'a')).attempt, 1, `${kind}: the expiry applies once`);
      assert.deepEqual(await claim(store, 11_002, { max: 5 }).then((cs) => cs.map((x) => x.job.job_id)), ['a']);
    }
  });

  withStore('a lease expired at access with no budget left fails the job, skips downstream, settles the run', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: { needs: ['a'] }, c: { needs: ['b'] } });
    const c = await claimOne(store, 1000, 'a', { ttl: 10 });
    const out = await store.heartbeat(c.lease.lease_id, 20_000);
    assert.equal(out.kind, 'expired');
    assert.deepEqual(sortedChanges(out.kind === 'expired' ? out.changes : []), sortedChanges(['a', 'b', 'c'].map((id) => change('w', id))));
    const a = await job(store, 'w', 'a');
    assert.deepEqual([a.status, a.error, a.finished_at_ms], ['failed', LEASE_EXPIRED_ERROR, 20_000]);
    assert.deepEqual(out.kind === 'expired' && out.job, a);
    for (const id of ['b', 'c']) {
      const j = await job(store, 'w', id);
      assert.deepEqual([j.status, j.error, j.finished_at_ms], ['skipped', 'upstream job "a" failed', 20_000], id);
    }
    assert.deepEqual(await runStatus(store, 'w'), { status: 'failed', finished_at_ms: 20_000 });
  });

  withStore('a lease call past the job’s deadline times it out (retryable), even while the lease is alive', async (store) => {
    for (const [i, kind] of CALLS.entries()) {
      const wf = `w${i}`;
      await start(store, wf, 1000, { a: { max_retries: 1, timeout_secs: 5 } });
      const c = await claimOne(store, 1000, 'a', { ttl: 600 });
      assert.equal(c.job.deadline_ms, 6000);
      if (kind === 'heartbeat') assert.equal((await store.heartbeat(c.lease.lease_id, 6000)).kind, 'renewed', 'at the deadline it still runs');
      const out = await call(store, kind, c.lease.lease_id, 6001);
      assert.equal(out.kind, 'timed_out', kind);
      if (out.kind !== 'timed_out') continue;
      assert.deepEqual([out.lease.lease_id, out.lease.state], [c.lease.lease_id, 'timed_out']);
      assert.deepEqual(out.changes, [change(wf, 'a')]);
      const j = await job(store, wf, 'a');
      assert.deepEqual(out.job, j, 'the job as the timeout left it');
      assert.deepEqual(out.ran, c.job, `${kind}: the job as the timed-out attempt ran`);
      assert.deepEqual([j.status, j.attempt, j.error, j.deadline_ms, j.lease_id], ['queued', 1, timedOutError(5), null, null], kind);
      assert.equal((await lease(store, c.lease.lease_id)).state, 'timed_out');
      assert.equal(await logCount(store, wf, 'a'), 0);
      assert.deepEqual(await call(store, kind, c.lease.lease_id, 6002), { kind: 'settled', state: 'timed_out' });
      await claimOne(store, 6002, 'a');
    }
  });

  withStore('complete stores outputs, counts dependents down and queues a join only after its last need', async (store) => {
    await start(store, 'w', 1000, {
      a: {},
      b: { needs: ['a'] },
      c: { needs: ['a'] },
      d: { needs: ['c', 'b'] },
      e: { needs: ['a'] },
    });
    const a = await claimOne(store, 1000, 'a', { ttl: 60 });
    const outA = await complete(store, a.lease.lease_id, { A: '1' }, 2000);
    assert.deepEqual(outA.enqueued, ['b', 'c', 'e'], 'in dependents order');
    assert.deepEqual(sortedChanges(outA.changes), sortedChanges(['a', 'b', 'c', 'e'].map((id) => change('w', id))));
    const doneA = await job(store, 'w', 'a');
    assert.deepEqual(outA.job, doneA);
    assert.deepEqual(
      [doneA.status, doneA.outputs, doneA.finished_at_ms, doneA.deadline_ms, doneA.error],
      ['success', { A: '1' }, 2000, null, null],
    );
    assert.equal((await lease(store, a.lease.lease_id)).state, 'completed');
    for (const id of ['b', 'c', 'e']) {
      const j = await job(store, 'w', id);
      assert.deepEqual(
        [j.status, j.pending_needs, j.enqueued_at_ms, j.ready_at_ms, j.delayed_until_ms, j.upstream_outputs],
        ['queued', 0, 2000, 2000, 0, { a: { A: '1' } }],
        id,
      );
    }
    const d0 = await job(store, 'w', 'd');
    assert.deepEqual([d0.status, d0.pending_needs], ['pending', 2]);

    const got = await claim(store, 2000, { max: 3 });
    const id = (j: string) => got.find((c) => c.job.job_id === j)!.lease.lease_id;
    const outB = await complete(store, id('b'), { B: '2' }, 3000);
    assert.deepEqual(outB.enqueued, []);
    assert.deepEqual(outB.changes, [change('w', 'b')]);
    const d1 = await job(store, 'w', 'd');
    // What a pending job holds in upstream_outputs is the store's business; only a queued job's counts.
    assert.deepEqual([d1.status, d1.pending_needs], ['pending', 1]);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'running', finished_at_ms: null });

    const outC = await complete(store, id('c'), { C: '3' }, 4000);
    assert.deepEqual(outC.enqueued, ['d']);
    const d2 = await job(store, 'w', 'd');
    assert.deepEqual(
      [d2.status, d2.pending_needs, d2.enqueued_at_ms, d2.ready_at_ms, d2.upstream_outputs],
      ['queued', 0, 4000, 4000, { c: { C: '3' }, b: { B: '2' } }],
      'only the outputs of its direct needs',
    );
    assert.deepEqual(Object.keys(d2.upstream_outputs), ['c', 'b'], 'in needs order, not completion order');
    await complete(store, id('e'), {}, 5000);
    const dl = await claimOne(store, 5000, 'd');
    assert.deepEqual(dl.job.upstream_outputs, { c: { C: '3' }, b: { B: '2' } });
    assert.deepEqual(Object.keys(dl.job.upstream_outputs), ['c', 'b']);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'running', finished_at_ms: null });
    await complete(store, dl.lease.lease_id, {}, 6000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'success', finished_at_ms: 6000 });
  });

  withStore('fail with budget left re-queues by the retry plan; a later success clears the error', async (store) => {
    const backoff = { kind: 'exponential', base_secs: 2, max_secs: 5 } as const;
    await start(store, 'w', 1000, { a: { max_retries: 3, backoff } });
    let c = await claimOne(store, 1000, 'a');
    for (const [now, attempt, delay] of [[10_000, 1, 4000], [30_000, 2, 5000]] as const) {
      const before = await job(store, 'w', 'a');
      const plan = planFailure(before, true, now);
      assert.deepEqual(plan, { kind: 'retry', attempt, delayed_until_ms: now + delay, ready_at_ms: now + delay });
      const out = await store.fail(c.lease.lease_id, `boom ${attempt}`, true, now);
      assert.equal(out.kind, 'failed');
      if (out.kind !== 'failed') return;
      assert.deepEqual(out.changes, [change('w', 'a')]);
      const j = await job(store, 'w', 'a');
      assert.deepEqual(out.job, j);
      assert.equal(out.started_at_ms, c.job.started_at_ms, 'the failed attempt’s start, which the re-queued job no longer has');
      assert.deepEqual(out.ran, c.job, 'the job as the failed attempt ran: its ready time, claim and worker');
      assert.deepEqual(
        [j.status, j.attempt, j.enqueued_at_ms, j.delayed_until_ms, j.ready_at_ms, j.error],
        ['queued', attempt, now, plan.delayed_until_ms, plan.ready_at_ms, `boom ${attempt}`],
      );
      assert.deepEqual([j.started_at_ms, j.finished_at_ms, j.deadline_ms, j.worker_id, j.lease_id], [null, null, null, null, null]);
      assert.equal((await lease(store, c.lease.lease_id)).state, 'failed');
      assert.deepEqual(await runStatus(store, 'w'), { status: 'running', finished_at_ms: null });
      c = await claimOne(store, plan.ready_at_ms, 'a');
    }
    const done = await complete(store, c.lease.lease_id, { ok: 'y' }, 40_000);
    assert.deepEqual([done.job.status, done.job.attempt, done.job.error], ['success', 2, null]);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'success', finished_at_ms: 40_000 });
  });

  withStore('fail past the budget fails the job, skips everything downstream; the run settles failed when nothing moves', async (store) => {
    await start(store, 'w', 1000, {
      a: { max_retries: 1 },
      s: {},
      b: { needs: ['a'] },
      x: { needs: ['s'] },
      c: { needs: ['b', 'x'] },
    });
    let a = await claimOne(store, 1000, 'a');
    const s = await claimOne(store, 1000, 's');
    assert.equal((await store.fail(a.lease.lease_id, 'first', true, 2000)).kind, 'failed');
    a = await claimOne(store, 2000, 'a');
    const out = await store.fail(a.lease.lease_id, 'second', true, 3000);
    assert.equal(out.kind, 'failed');
    if (out.kind !== 'failed') return;
    assert.deepEqual([out.job.status, out.job.attempt, out.job.error, out.job.finished_at_ms], ['failed', 1, 'second', 3000]);
    assert.equal(out.started_at_ms, 2000);
    assert.deepEqual(sortedChanges(out.changes), sortedChanges(['a', 'b', 'c'].map((id) => change('w', id))));
    for (const id of ['b', 'c']) {
      const j = await job(store, 'w', id);
      assert.deepEqual([j.status, j.error, j.finished_at_ms], ['skipped', 'upstream job "a" failed', 3000], id);
    }
    assert.deepEqual((await job(store, 'w', 'x')).status, 'pending', 'a job not downstream of the failure stays');
    assert.deepEqual(await runStatus(store, 'w'), { status: 'running', finished_at_ms: null });
    await complete(store, s.lease.lease_id, {}, 4000);
    assert.equal((await job(store, 'w', 'x')).status, 'queued');
    const x = await claimOne(store, 4000, 'x');
    const last = await complete(store, x.lease.lease_id, {}, 5000);
    assert.deepEqual(last.enqueued, [], 'c was skipped; it is never queued');
    const c = await job(store, 'w', 'c');
    assert.deepEqual([c.status, c.pending_needs], ['skipped', 2], 'only pending dependents count down');
    assert.deepEqual(await runStatus(store, 'w'), { status: 'failed', finished_at_ms: 5000 });
  });

  withStore('fail with retryable false fails at once whatever the budget', async (store) => {
    await start(store, 'w', 1000, { a: { max_retries: 5 } });
    const c = await claimOne(store, 1000, 'a');
    const out = await store.fail(c.lease.lease_id, 'bad\u0000input', false, 2000);
    assert.deepEqual(out.kind === 'failed' && [out.job.status, out.job.error], ['failed', 'bad\uFFFDinput'], 'NUL kept as U+FFFD');
    assert.equal((await lease(store, c.lease.lease_id)).state, 'failed');
    assert.deepEqual(await runStatus(store, 'w'), { status: 'failed', finished_at_ms: 2000 });
  });

  withStore('a lease is bound to the token it was claimed with: another token’s calls answer not_yours and change nothing', async (store, handle) => {
    await start(store, 'w', 1000, { a: { max_retries: 3 }, b: { max_retries: 3 }, c: {}, d: {} });
    const a = await claimOne(store, 1000, 'a', { token: 'tok-a', worker: 'wk-a', ttl: 10 });
    assert.equal(a.lease.token_name, 'tok-a');
    // Durable and shared: another store on the same database (another server) reads it too.
    if (handle.target.kind === 'postgres' || handle.target.file !== ':memory:') {
      const other = await handle.another();
      try {
        assert.equal((await lease(other, a.lease.lease_id)).token_name, 'tok-a');
      } finally {
        await other.close();
      }
    }
    const before = { jobs: await read(store, (r) => r.getRunJobs('w', 1)), lease: await lease(store, a.lease.lease_id) };
    // Also past the lease's expiry: a foreign call must not even settle that.
    for (const now of [2000, 50_000]) {
      for (const kind of CALLS) {
        assert.deepEqual(await call(store, kind, a.lease.lease_id, now, 'tok-b'), { kind: 'not_yours', token_name: 'tok-a' }, `${kind} at ${now}`);
      }
    }
    assert.deepEqual(await read(store, (r) => r.getRunJobs('w', 1)), before.jobs, 'no job changed');
    assert.deepEqual(await lease(store, a.lease.lease_id), before.lease, 'the lease is as it was');
    assert.equal(await logCount(store, 'w', 'a'), 0, 'no chunk stored');
    assert.equal((await read(store, (r) => r.getWorker('wk-a')))?.last_seen_ms, 1000, 'the worker is not seen by a foreign call');

    // The claiming token itself, and a call without tokens (authentication off), may use it.
    assert.equal((await store.heartbeat(a.lease.lease_id, 3000, 'tok-a')).kind, 'renewed');
    assert.deepEqual(await store.pushLogs(a.lease.lease_id, [{ sequence: 0, data: 'x' }], 3000, 'tok-a'), {
      kind: 'stored',
      lease: { ...a.lease, renewed_at_ms: 3000, expires_at_ms: 13_000 },
      accepted: 1,
      truncated: false,
    });
    assert.equal((await store.heartbeat(a.lease.lease_id, 4000, null)).kind, 'renewed');
    assert.equal((await store.complete(a.lease.lease_id, {}, 5000, 'tok-a')).kind, 'completed');

    const b = await claimOne(store, 6000, 'b', { token: 'tok-a' });
    assert.equal((await store.fail(b.lease.lease_id, 'no', true, 7000, 'tok-b')).kind, 'not_yours');
    const failed = await store.fail(b.lease.lease_id, 'no', true, 7000, 'tok-a');
    assert.deepEqual(failed.kind === 'failed' && [failed.job.status, failed.job.attempt], ['queued', 1]);

    // A lease claimed without a token (tokens off) is bound to none.
    const c = await claimOne(store, 8000, 'c');
    assert.equal(c.lease.token_name, null);
    assert.equal((await store.heartbeat(c.lease.lease_id, 9000, 'tok-b')).kind, 'renewed');
    assert.equal((await store.complete(c.lease.lease_id, {}, 9000, 'tok-b')).kind, 'completed');
  });
}
