/** Conformance: the reaper's two sweeps, log chunks, workers and the many-run reads. */
import assert from 'node:assert/strict';
import { labelKey } from '../../src/domain/labels.js';
import { LEASE_EXPIRED_ERROR, timedOutError } from '../../src/domain/retry.js';
import { logTruncationMarker } from '../../src/domain/log-budget.js';
import type { Case } from './conformance.js';
import { change, claim, claimOne, complete, job, lease, read, runStatus, sortedChanges, start, wfRecord } from './fixtures.js';

/** A reaper sweep that found nothing to settle. */
const NOTHING = { changes: [], ended: [], ran: [] };

export function reaperAndLogCases(withStore: Case): void {
  withStore('expireLeases settles each lease past its expiry once, at most `limit` per call', async (store) => {
    await start(store, 'w', 1000, { a: { max_retries: 2 }, b: { max_retries: 2 }, c: { max_retries: 2 }, d: { max_retries: 2 } });
    const first = await claim(store, 1000, { max: 3, ttl: 10 });
    const later = await claimOne(store, 5000, 'd', { ttl: 10 });
    assert.deepEqual(await store.expireLeases(11_000, 10), NOTHING, 'a lease is alive up to its expiry');
    const one = await store.expireLeases(11_001, 2);
    const two = await store.expireLeases(11_001, 2);
    assert.deepEqual([one.changes.length, two.changes.length], [2, 1]);
    assert.deepEqual(sortedChanges([...one.changes, ...two.changes]), sortedChanges(['a', 'b', 'c'].map((id) => change('w', id))));
    assert.deepEqual(await store.expireLeases(11_001, 10), NOTHING, 'a second sweep finds nothing');
    for (const c of first) {
      const j = await job(store, 'w', c.job.job_id);
      assert.deepEqual([j.status, j.attempt, j.error, j.ready_at_ms], ['queued', 1, LEASE_EXPIRED_ERROR, 11_001]);
      assert.equal((await lease(store, c.lease.lease_id)).state, 'expired');
      assert.deepEqual([...one.ended, ...two.ended].find((e) => e.job_id === c.job.job_id), j, 'each ended attempt’s job, as it is now');
      assert.deepEqual([...(one.ran ?? []), ...(two.ran ?? [])].find((e) => e.job_id === c.job.job_id), c.job, 'and as the attempt ran, in the same place');
    }
    assert.equal((await job(store, 'w', 'd')).status, 'running');
    assert.deepEqual((await read(store, (r) => r.activeLeases())).map((l) => l.lease_id), [later.lease.lease_id]);
    const last = await store.expireLeases(15_001, 10);
    assert.deepEqual(last, { changes: [change('w', 'd')], ended: [await job(store, 'w', 'd')], ran: [later.job] });
  });

  withStore('an expiry with no budget left fails the job, skips downstream and settles the run', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: { needs: ['a'] } });
    await claimOne(store, 1000, 'a', { ttl: 10 });
    const { changes, ended } = await store.expireLeases(12_000, 10);
    assert.deepEqual(sortedChanges(changes), sortedChanges([change('w', 'a'), change('w', 'b')]));
    assert.deepEqual(ended, [await job(store, 'w', 'a')], 'one attempt ended, its job failed; the skipped one is only a change');
    assert.equal(ended[0]!.status, 'failed');
    assert.deepEqual((await read(store, (r) => r.getRunJobs('w', 1))).map((j) => j.status), ['failed', 'skipped']);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'failed', finished_at_ms: 12_000 });
  });

  withStore('timeOutJobs settles running jobs past their deadline once', async (store) => {
    await start(store, 'w', 1000, { t: { max_retries: 1, timeout_secs: 5 }, u: {} });
    const [t, u] = await claim(store, 1000, { max: 2, ttl: 3600 });
    assert.deepEqual([t?.job.job_id, u?.job.job_id], ['t', 'u']);
    assert.deepEqual(await store.timeOutJobs(6000, 10), NOTHING, 'at its deadline a job still runs');
    const swept = await store.timeOutJobs(6001, 10);
    assert.deepEqual(await store.timeOutJobs(6001, 10), NOTHING);
    const j = await job(store, 'w', 't');
    assert.deepEqual(swept, { changes: [change('w', 't')], ended: [j], ran: [t!.job] }, 'the job after, and as the attempt ran');
    assert.deepEqual([j.status, j.attempt, j.error, j.deadline_ms, j.lease_id], ['queued', 1, timedOutError(5), null, null]);
    assert.equal((await lease(store, t!.lease.lease_id)).state, 'timed_out');
    // The timed-out lease is no longer active, so the expiry sweep leaves it alone.
    assert.deepEqual((await store.expireLeases(10_000_000, 10)).changes, [change('w', 'u')]);
    assert.equal((await job(store, 'w', 't')).attempt, 1);
  });

  withStore('pushLogs stores the lease’s attempt with defaults; a repeated sequence keeps its first copy', async (store) => {
    await start(store, 'w', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a');
    const out = await store.pushLogs(
      c.lease.lease_id,
      [
        { sequence: 1, data: 'b\u0000c\u0000', stream: 'stderr', timestamp_ms: 7 },
        { sequence: 0, data: 'a' },
        { sequence: 2, data: 'x', workflow_id: 'w', job_id: 'a' },
      ],
      3000,
    );
    assert.equal(out.kind, 'stored');
    assert.equal(out.kind === 'stored' && out.accepted, 3);
    const q = { workflow_id: 'w', run_number: 1, job_id: 'a', attempt: 0 };
    const base = { workflow_id: 'w', run_number: 1, job_id: 'a', attempt: 0 };
    assert.deepEqual(await read(store, (r) => r.getLogChunks(q)), [
      { ...base, sequence: 0, stream: 'stdout', data: 'a', timestamp_ms: 3000 },
      { ...base, sequence: 1, stream: 'stderr', data: 'b\uFFFDc\uFFFD', timestamp_ms: 7 },
      { ...base, sequence: 2, stream: 'stdout', data: 'x', timestamp_ms: 3000 },
    ]);
    const again = await store.pushLogs(c.lease.lease_id, [{ sequence: 1, data: 'DUPLICATE' }, { sequence: 3, data: 'd' }], 4000);
    assert.equal(again.kind === 'stored' && again.accepted, 2, 'accepted counts every chunk sent');
    const all = await read(store, (r) => r.getLogChunks(q));
    assert.deepEqual(all.map((ch) => ch.data), ['a', 'b\uFFFDc\uFFFD', 'x', 'd']);
    const page = await read(store, (r) => r.getLogChunks({ ...q, afterSequence: 1, limit: 1 }));
    assert.deepEqual(page.map((ch) => ch.sequence), [2]);
    assert.equal((await read(store, (r) => r.getWorker('wk')))?.last_seen_ms, 4000);
  });

  withStore('pushLogs with a chunk naming another workflow or job stores nothing', async (store) => {
    await start(store, 'w', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a');
    const wrongWf = await store.pushLogs(c.lease.lease_id, [{ sequence: 0, data: 'ok' }, { sequence: 1, data: 'no', workflow_id: 'other' }], 2000);
    assert.deepEqual(wrongWf, { kind: 'mismatch', lease: await lease(store, c.lease.lease_id), index: 1, field: 'workflow_id', value: 'other' });
    const wrongJob = await store.pushLogs(c.lease.lease_id, [{ sequence: 0, data: 'no', job_id: 'zz', workflow_id: 'w' }], 2000);
    assert.equal(wrongJob.kind, 'mismatch');
    assert.deepEqual(
      wrongJob.kind === 'mismatch' && [wrongJob.index, wrongJob.field, wrongJob.value],
      [0, 'job_id', 'zz'],
    );
    assert.deepEqual(await read(store, (r) => r.getLogChunks({ workflow_id: 'w', run_number: 1, job_id: 'a', attempt: 0 })), []);
    assert.equal(await read(store, (r) => r.latestLogAttempt('w', 1, 'a')), null);
  });

  withStore('logs are kept per attempt; latestLogAttempt names the newest attempt that logged', async (store) => {
    await start(store, 'w', 1000, { a: { max_retries: 2 } });
    const q = (attempt: number) => ({ workflow_id: 'w', run_number: 1, job_id: 'a', attempt });
    assert.equal(await read(store, (r) => r.latestLogAttempt('w', 1, 'a')), null);
    const first = await claimOne(store, 1000, 'a');
    await store.pushLogs(first.lease.lease_id, [{ sequence: 0, data: 'try 0' }], 1100);
    await store.fail(first.lease.lease_id, 'again', true, 1200);
    assert.equal(await read(store, (r) => r.latestLogAttempt('w', 1, 'a')), 0, 'a job waiting for its retry still shows why');
    const second = await claimOne(store, 1200, 'a');
    await store.pushLogs(second.lease.lease_id, [{ sequence: 0, data: 'try 1' }, { sequence: 1, data: 'more' }], 1300);
    assert.deepEqual((await read(store, (r) => r.getLogChunks(q(0)))).map((c) => c.data), ['try 0']);
    assert.deepEqual((await read(store, (r) => r.getLogChunks(q(1)))).map((c) => [c.attempt, c.data]), [[1, 'try 1'], [1, 'more']]);
    assert.equal(await read(store, (r) => r.latestLogAttempt('w', 1, 'a')), 1);
    assert.equal(await read(store, (r) => r.latestLogAttempt('w', 1, 'zz')), null);
  });

  withStore('pushLogs keeps an attempt within maxBytes: the chunk that passes it becomes the marker, later pushes are dropped; the next attempt starts afresh', async (store) => {
    await start(store, 'w', 1000, { a: { max_retries: 1 } });
    const q = (attempt: number) => ({ workflow_id: 'w', run_number: 1, job_id: 'a', attempt });
    const first = await claimOne(store, 1000, 'a');
    const id = first.lease.lease_id;
    // 40 bytes allowed: 'é' is two bytes in UTF-8, so the second push's 'éééé' (8 bytes) does not fit.
    const one = await store.pushLogs(id, [{ sequence: 0, data: 'x'.repeat(20) }, { sequence: 1, data: 'y'.repeat(15) }], 1100, null, 40);
    assert.deepEqual(one.kind === 'stored' && [one.accepted, one.truncated], [2, false]);
    const resent = await store.pushLogs(id, [{ sequence: 1, data: 'y'.repeat(15) }], 1150, null, 40);
    assert.deepEqual(resent.kind === 'stored' && [resent.accepted, resent.truncated], [1, false], 'a re-sent chunk is not counted twice');
    const two = await store.pushLogs(id, [{ sequence: 2, data: 'zz' }, { sequence: 3, data: 'éééé' }, { sequence: 4, data: 'w' }], 1200, null, 40);
    assert.deepEqual(two.kind === 'stored' && [two.accepted, two.truncated], [1, true]);
    const chunks = await read(store, (r) => r.getLogChunks(q(0)));
    assert.deepEqual(chunks.map((c) => [c.sequence, c.stream]), [[0, 'stdout'], [1, 'stdout'], [2, 'stdout'], [3, 'stderr']]);
    assert.equal(chunks[3]!.data, logTruncationMarker(40), 'the marker takes the place of the first chunk that did not fit');
    const later = await store.pushLogs(id, [{ sequence: 5, data: 'v' }], 1300, null, 40);
    assert.deepEqual(later.kind === 'stored' && [later.accepted, later.truncated], [0, true], 'once truncated, nothing more is kept');
    assert.equal((await read(store, (r) => r.getLogChunks(q(0)))).length, 4);
    await store.fail(id, 'again', true, 1400);
    const second = await claimOne(store, 1400, 'a');
    const next = await store.pushLogs(second.lease.lease_id, [{ sequence: 0, data: 'n'.repeat(30) }], 1500, null, 40);
    assert.deepEqual(next.kind === 'stored' && [next.accepted, next.truncated], [1, false], 'each attempt has its own budget');
    assert.deepEqual((await read(store, (r) => r.getLogChunks(q(1)))).map((c) => c.data), ['n'.repeat(30)]);
  });

  withStore('getRunJobViews reads what a status document shows of the run\'s jobs, in row order, whole or a page at a time', async (store) => {
    const specs = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`j${i}`, i === 2 ? { labels: ['gpu'], timeout_secs: 9 } : {}]));
    await start(store, 'w', 1000, specs);
    // Rows in every state a view shows something of: done with outputs, failed with an error, running.
    await complete(store, (await claimOne(store, 1100, 'j0')).lease.lease_id, { k: 'v' }, 1150);
    await store.fail((await claimOne(store, 1200, 'j1')).lease.lease_id, 'boom', false, 1250);
    await claimOne(store, 1300, 'j2', { keys: [labelKey(['gpu'])], labels: ['gpu'] });
    const all = await read(store, (r) => r.getRunJobs('w', 1));
    const views = await read(store, (r) => r.getRunJobViews('w', 1));
    // Each view is its job's record, its other fields left out.
    assert.deepEqual(views, all.map((j) => Object.fromEntries(Object.keys(views[0]!).map((k) => [k, j[k as keyof typeof j]]))));
    assert.ok(views.every((v) => !('env' in v) && !('upstream_outputs' in v) && !('lease_id' in v)), 'the columns no view shows are not read');
    const j2 = views.find((v) => v.job_id === 'j2');
    assert.deepEqual(j2 && [j2.labels, j2.timeout_secs], [['gpu'], 9]);
    const paged = [];
    let after = 0;
    for (;;) {
      const page = await read(store, (r) => r.getRunJobViews('w', 1, { afterRowId: after, limit: 3 }));
      paged.push(...page);
      if (page.length < 3) break;
      after = page[page.length - 1]!.row_id;
    }
    assert.deepEqual(paged, views);
    assert.deepEqual(await read(store, (r) => r.getRunJobViews('w', 2, { afterRowId: 0, limit: 3 })), []);
  });

  withStore('registerWorker creates, then updates labels and last-seen, keeping the registration time', async (store) => {
    assert.deepEqual(await store.registerWorker('w1', ['a', 'b'], 1000), {
      worker_id: 'w1',
      labels: ['a', 'b'],
      registered_at_ms: 1000,
      last_seen_ms: 1000,
    });
    assert.deepEqual(await store.registerWorker('w1', ['c'], 2000), { worker_id: 'w1', labels: ['c'], registered_at_ms: 1000, last_seen_ms: 2000 });
    await store.registerWorker('w0', [], 2500);
    assert.deepEqual(await claim(store, 3000, { worker: 'w1', labels: ['d'] }), []);
    const all = await read(store, (r) => r.listWorkers());
    assert.deepEqual(
      [...all].sort((x, y) => x.worker_id.localeCompare(y.worker_id)),
      [
        { worker_id: 'w0', labels: [], registered_at_ms: 2500, last_seen_ms: 2500 },
        { worker_id: 'w1', labels: ['d'], registered_at_ms: 1000, last_seen_ms: 3000 },
      ],
    );
    assert.equal(await read(store, (r) => r.getWorker('nobody')), null);
  });

  withStore('listWorkers pages by worker id; without a page it lists every worker', async (store) => {
    for (const [i, id] of ['w3', 'w1', 'w4', 'w2'].entries()) await store.registerWorker(id, [], 1000 + i);
    const ids = async (page?: { limit: number; offset: number }) => (await read(store, (r) => r.listWorkers(page))).map((w) => w.worker_id);
    assert.deepEqual(await ids(), ['w1', 'w2', 'w3', 'w4']);
    assert.deepEqual(await ids({ limit: 2, offset: 0 }), ['w1', 'w2']);
    assert.deepEqual(await ids({ limit: 2, offset: 3 }), ['w4']);
    assert.deepEqual(await ids({ limit: 0, offset: 0 }), []);
    assert.deepEqual(await ids({ limit: 10, offset: 4 }), []);
  });

  withStore('pruneWorkers deletes workers unseen since a time and holding no active lease, oldest first, `limit` per call', async (store) => {
    await store.registerWorker('old-2', [], 2000);
    await store.registerWorker('old-1', [], 1000);
    await store.registerWorker('old-3', [], 3000);
    await store.registerWorker('recent', [], 50_000);
    await start(store, 'w', 1000, { a: {}, b: {} });
    // Both quiet since 1500, one holding its lease still, the other's lease long expired but not reaped yet.
    const held = await claimOne(store, 1500, 'a', { ttl: 3600, worker: 'busy' });
    await claimOne(store, 1500, 'b', { ttl: 1, worker: 'stale' });
    const ids = async () => (await read(store, (r) => r.listWorkers())).map((w) => w.worker_id);

    assert.equal(await store.pruneWorkers(1000, 10), 0, 'a worker seen at the cut-off time stays');
    assert.equal(await store.pruneWorkers(10_000, 2), 2);
    assert.deepEqual(await ids(), ['busy', 'old-3', 'recent', 'stale'], 'the two seen longest ago went first');
    assert.equal(await store.pruneWorkers(10_000, 2), 1);
    assert.equal(await store.pruneWorkers(10_000, 2), 0, 'workers holding an active lease stay, whatever its expiry');
    assert.deepEqual(await ids(), ['busy', 'recent', 'stale']);

    // Once the leases are over, their workers go too (a lease call is a sighting: the cut-off moves on).
    await complete(store, held.lease.lease_id, {}, 2000);
    await store.expireLeases(3000, 10);
    assert.equal(await store.pruneWorkers(10_000, 10), 2);
    assert.deepEqual(await ids(), ['recent']);
    // A worker that calls again is simply new.
    assert.deepEqual(await store.registerWorker('old-1', ['x'], 60_000), { worker_id: 'old-1', labels: ['x'], registered_at_ms: 60_000, last_seen_ms: 60_000 });
  });

  withStore('activeJobCounts: queued (backoff-held included) and running jobs per label key, nothing else', async (store) => {
    const GPU = labelKey(['gpu']);
    const BOTH = labelKey(['gpu', 'linux']);
    const counts = async () =>
      (await read(store, (r) => r.activeJobCounts())).sort((x, y) => `${x.status}${x.label_key}`.localeCompare(`${y.status}${y.label_key}`));
    assert.deepEqual(await counts(), []);
    await start(store, 'w', 1000, {
      a: {},
      b: { labels: ['linux', 'gpu'] },
      c: { labels: ['gpu', 'linux'] },
      d: { needs: ['a'] },
      e: { labels: ['gpu'], max_retries: 1, backoff: { kind: 'fixed', delay_secs: 60 } },
    });
    await start(store, 'other', 1000, { o: {} });
    assert.deepEqual(await counts(), [
      { status: 'queued', label_key: '', count: 2 },
      { status: 'queued', label_key: BOTH, count: 2 },
      { status: 'queued', label_key: GPU, count: 1 },
    ], 'a pending job is not counted');
    const a = await claimOne(store, 1000, 'a');
    await complete(store, a.lease.lease_id, {}, 2000);
    await claimOne(store, 2000, 'b', { keys: [BOTH] });
    const e = await claimOne(store, 2000, 'e', { keys: [GPU] });
    assert.equal((await store.fail(e.lease.lease_id, 'flaky', true, 3000)).kind, 'failed');
    await claimOne(store, 3000, 'o', { keys: [''] });
    assert.deepEqual(await counts(), [
      { status: 'queued', label_key: '', count: 1 },
      { status: 'queued', label_key: BOTH, count: 1 },
      { status: 'queued', label_key: GPU, count: 1 },
      { status: 'running', label_key: '', count: 1 },
      { status: 'running', label_key: BOTH, count: 1 },
    ], 'd queued by its need, e held by its backoff, a finished');
    await store.cancelRun('w', 4000);
    assert.deepEqual(await counts(), [{ status: 'running', label_key: '', count: 1 }], 'cancelled jobs are not counted');
    await store.expireLeases(10_000_000, 10);
    assert.deepEqual(await counts(), [], 'a job failed by its expiry is not counted');
  });

  withStore('reads: many runs and their jobs in one call, unknown keys left out; single reads of unknowns are null', async (store) => {
    await start(store, 'a', 1000, { a1: {}, a2: { needs: ['a1'] } });
    await store.cancelRun('a', 1500);
    await start(store, 'a', 2000, { a3: {}, a4: {} });
    await start(store, 'b', 3000, { b2: {}, b1: {} });
    await store.createWorkflow(wfRecord('idle'));
    const keys = [
      { workflow_id: 'b', run_number: 1 },
      { workflow_id: 'a', run_number: 2 },
      { workflow_id: 'zz', run_number: 1 },
      { workflow_id: 'a', run_number: 1 },
      { workflow_id: 'idle', run_number: 1 },
    ];
    const runs = await read(store, (r) => r.getRuns(keys));
    assert.deepEqual(runs.map((r) => [r.workflow_id, r.run_number, r.status, r.created_at_ms]).sort(), [
      ['a', 1, 'cancelled', 1000],
      ['a', 2, 'running', 2000],
      ['b', 1, 'running', 3000],
    ]);
    const jobs = await read(store, (r) => r.getJobsOfRuns(keys));
    const of = (wf: string, run: number) => jobs.filter((j) => j.workflow_id === wf && j.run_number === run).map((j) => j.job_id);
    assert.deepEqual([of('a', 1), of('a', 2), of('b', 1), jobs.length], [['a1', 'a2'], ['a3', 'a4'], ['b2', 'b1'], 6]);
    assert.deepEqual(await read(store, (r) => r.getRuns([])), []);
    assert.deepEqual(await read(store, (r) => r.getJobsOfRuns([])), []);
    assert.equal(await read(store, (r) => r.getRun('a', 9)), null);
    assert.equal(await read(store, (r) => r.getJob('a', 1, 'nope')), null);
    assert.equal(await read(store, (r) => r.getLease('nope')), null);
    assert.deepEqual(await read(store, (r) => r.getRunJobs('zz', 1)), []);

    const got = await claim(store, 4000, { max: 3 });
    assert.deepEqual(got.map((c) => c.job.job_id), ['a3', 'a4', 'b2']);
    await complete(store, got[0]!.lease.lease_id, {}, 4100);
    await store.fail(got[1]!.lease.lease_id, 'x', false, 4200);
    assert.deepEqual((await read(store, (r) => r.activeLeases())).map((l) => l.lease_id), [got[2]!.lease.lease_id]);
  });
}
