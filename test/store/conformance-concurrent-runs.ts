/** Conformance: concurrent runs of one workflow, queued runs and their start (docs/architecture.md "Concurrent runs"). */
import assert from 'node:assert/strict';
import type { Concurrency } from '../../src/domain/model.js';
import type { Store } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { HASH, buildJobs, claimOne, complete, labelSetsOf, read, runStatus, wfRecord, type Spec } from './fixtures.js';

const ONE_JOB: Record<string, Spec> = { a: {} };

async function define(store: Store, wf: string, concurrency: Concurrency): Promise<void> {
  const rec = wfRecord(wf, 1000);
  await store.saveWorkflow({ ...rec, definition: { ...rec.definition, concurrency } });
}

function ask(store: Store, wf: string, now: number, specs: Record<string, Spec> = ONE_JOB) {
  const jobs = buildJobs(wf, now, specs);
  return store.startRun({ workflow_id: wf, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now });
}

const statuses = async (store: Store, wf: string, n: number) =>
  (await read(store, (r) => r.getRuns(Array.from({ length: n }, (_, i) => ({ workflow_id: wf, run_number: i + 1})))))
    .sort((a, b) => a.run_number - b.run_number)
    .map((r) => r.status);

const jobRows = (store: Store, wf: string, run: number) => read(store, (r) => r.getRunJobs(wf, run));

/** Completes the one job `a` of run `run` (claimed as the oldest claimable job). */
async function finishA(store: Store, run: number, now: number): Promise<void> {
  const c = await claimOne(store, now, 'a');
  assert.equal(c.job.run_number, run, `the oldest claimable job is run ${run}'s`);
  await complete(store, c.lease.lease_id, {}, now + 1);
}

export function concurrentRunCases(withStore: Case): void {
  withStore('max_runs 2, when_full reject: two runs start, the third is refused naming both', async (store) => {
    await define(store, 'w', { max_runs: 2, when_full: 'reject' });
    assert.equal((await ask(store, 'w', 1000)).kind, 'started');
    assert.equal((await ask(store, 'w', 1100)).kind, 'started');
    assert.deepEqual(await ask(store, 'w', 1200), { kind: 'active', run_number: 2, run_numbers: [1, 2] });
    assert.deepEqual(await statuses(store, 'w', 2), ['running', 'running']);
    assert.deepEqual((await read(store, (r) => r.activeRuns('w'))).map((r) => r.run_number), [1, 2]);
  });

  withStore('when_full queue: the third run is queued with its plan and no jobs; it starts once a running run completes', async (store) => {
    await define(store, 'w', { max_runs: 2, when_full: 'queue' });
    await ask(store, 'w', 1000);
    await ask(store, 'w', 1100);
    const queued = await ask(store, 'w', 1200, { a: {}, b: { needs: ['a'] } });
    assert.equal(queued.kind, 'queued');
    assert.equal(queued.kind === 'queued' && queued.run.run_number, 3);
    const run3 = await read(store, (r) => r.getRun('w', 3));
    assert.equal(run3?.status, 'queued');
    assert.equal(run3?.finished_at_ms, null);
    assert.deepEqual(run3?.plan?.map((j) => j.job_id), ['a', 'b']);
    assert.deepEqual(await jobRows(store, 'w', 3), []);
    assert.equal((await read(store, (r) => r.getWorkflow('w')))?.latest_run, 3);
    assert.deepEqual(await read(store, (r) => r.queuedWorkflows(10)), ['w']);
    assert.deepEqual(await store.startQueuedRuns('w', 1300), { started: [], changes: [] }, 'no slot is free');
    assert.equal(await store.settleStrandedRuns(1300, 10), 0, 'a queued run is not stranded');
    assert.equal((await runStatus(store, 'w', 3)).status, 'queued');

    await finishA(store, 1, 2000);
    assert.deepEqual(await statuses(store, 'w', 3), ['success', 'running', 'queued']);
    const out = await store.startQueuedRuns('w', 3000);
    assert.deepEqual(out.started.map((r) => [r.run_number, r.status]), [[3, 'running']]);
    assert.deepEqual(out.changes.map((c) => [c.run_number, c.job_id]), [[3, 'a'], [3, 'b']]);
    const jobs = await jobRows(store, 'w', 3);
    assert.deepEqual(jobs.map((j) => [j.job_id, j.status, j.enqueued_at_ms, j.ready_at_ms]), [['a', 'queued', 3000, 3000], ['b', 'pending', 0, 0]]);
    assert.equal((await read(store, (r) => r.getRun('w', 3)))?.plan, undefined);
    assert.deepEqual(await store.startQueuedRuns('w', 3100), { started: [], changes: [] }, 'started once');
    assert.deepEqual(await read(store, (r) => r.queuedWorkflows(10)), []);
  });

  withStore('queued runs start oldest first, one per freed slot: after a cancel of ?run=N and after a failure the reaper made', async (store) => {
    await define(store, 'w', { max_runs: 1, when_full: 'queue' });
    await store.saveWorkflow(wfRecord('other', 1000));
    assert.equal((await ask(store, 'w', 1000, { a: { max_retries: 0 } })).kind, 'started');
    for (const now of [1100, 1200, 1300]) assert.equal((await ask(store, 'w', now)).kind, 'queued');
    const cancelled = await store.cancelRun('w', 1400, 1);
    assert.equal(cancelled.kind, 'cancelled');
    assert.deepEqual(cancelled.kind === 'cancelled' && cancelled.runs, [1]);
    assert.deepEqual(await statuses(store, 'w', 4), ['cancelled', 'queued', 'queued', 'queued']);
    assert.deepEqual((await store.startQueuedRuns('w', 1500)).started.map((r) => r.run_number), [2]);
    assert.deepEqual(await statuses(store, 'w', 4), ['cancelled', 'running', 'queued', 'queued']);

    // Run 2's job runs out of its lease; the reaper fails it (no retries left), which ends run 2.
    const c = await claimOne(store, 1600, 'a', { ttl: 1 });
    assert.equal(c.job.run_number, 2);
    const reaped = await store.expireLeases(5000, 10);
    assert.equal(reaped.ended[0]?.status, 'failed');
    assert.deepEqual((await store.startQueuedRuns('w', 5100)).started.map((r) => r.run_number), [3]);
    assert.deepEqual(await statuses(store, 'w', 4), ['cancelled', 'failed', 'running', 'queued']);
  });

  withStore('cancel of a queued run ends it with no jobs; cancel ?run=N leaves the other run running; cancel without a run ends every active run', async (store) => {
    await define(store, 'w', { max_runs: 2, when_full: 'queue' });
    await ask(store, 'w', 1000);
    await ask(store, 'w', 1100);
    await ask(store, 'w', 1200);
    await ask(store, 'w', 1300);
    const q = await store.cancelRun('w', 1400, 3);
    assert.deepEqual(q, { kind: 'cancelled', run_number: 3, runs: [3], jobs: [], changes: [] });
    assert.deepEqual(await runStatus(store, 'w', 3), { status: 'cancelled', finished_at_ms: 1400 });
    assert.deepEqual(await jobRows(store, 'w', 3), []);

    const one = await store.cancelRun('w', 1500, 1);
    assert.equal(one.kind === 'cancelled' && one.jobs.join(), 'a');
    assert.deepEqual(await statuses(store, 'w', 4), ['cancelled', 'running', 'cancelled', 'queued']);
    assert.deepEqual(await store.cancelRun('w', 1550, 1), { kind: 'idle' }, 'a run that is over is left as it is');
    assert.deepEqual(await store.cancelRun('w', 1550, 99), { kind: 'idle' });

    const all = await store.cancelRun('w', 1600);
    assert.equal(all.kind, 'cancelled');
    assert.deepEqual(all.kind === 'cancelled' && all.runs, [2, 4]);
    assert.equal(all.kind === 'cancelled' && all.run_number, 4);
    assert.deepEqual(await statuses(store, 'w', 4), ['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    assert.deepEqual(await store.startQueuedRuns('w', 1700), { started: [], changes: [] });
  });

  withStore('a start while a slot is free but older runs wait starts those first, and the new run queues behind them', async (store) => {
    await define(store, 'w', { max_runs: 1, when_full: 'queue' });
    await ask(store, 'w', 1000);
    assert.equal((await ask(store, 'w', 1100)).kind, 'queued');
    await finishA(store, 1, 1200);
    const out = await ask(store, 'w', 1300);
    assert.equal(out.kind, 'queued', 'run 2 took the free slot');
    assert.deepEqual(await statuses(store, 'w', 3), ['success', 'running', 'queued']);
    assert.equal((await jobRows(store, 'w', 2)).length, 1);
  });

  withStore('retention never deletes a queued run; deleting the workflow is refused while any run is active', async (store) => {
    await define(store, 'w', { max_runs: 2, when_full: 'queue' });
    await ask(store, 'w', 1000);
    await ask(store, 'w', 1100);
    await ask(store, 'w', 1200);
    await finishA(store, 1, 1300);
    await store.cancelRun('w', 1400, 2);
    // Runs 1 and 2 are over; run 3 is queued and the latest. A retention of one run may take 1 and 2 only.
    const pruned = await store.pruneRuns({ retain_runs: 1, finished_before_ms: 10_000_000, max_runs: 100, max_log_chunks: 1000, dry_run: false });
    assert.ok(pruned.runs.every((r) => r.run_number !== 3));
    assert.equal((await runStatus(store, 'w', 3)).status, 'queued');
    assert.equal(await store.deleteWorkflow('w', { max_runs: 100, max_log_chunks: 1000 }), 'active');

    await define(store, 'v', { max_runs: 2, when_full: 'reject' });
    await ask(store, 'v', 1000);
    await ask(store, 'v', 1100);
    await store.cancelRun('v', 1200, 2);
    assert.equal(await store.deleteWorkflow('v', { max_runs: 100, max_log_chunks: 1000 }), 'active', 'run 1, not the latest, still runs');
  });
}

/** Two runs settling at once, and every store asking to start queued runs at once: each starts exactly once. */
export async function queuedStartRace(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another()]);
  try {
    for (let round = 0; round < 5; round++) {
      const wf = `w${round}`;
      await define(store, wf, { max_runs: 2, when_full: 'queue' });
      await ask(store, wf, 1000);
      await ask(store, wf, 1100);
      await ask(store, wf, 1200, { a: {}, b: {} });
      await ask(store, wf, 1300, { a: {}, b: {} });
      const first = await claimOne(store, 1400, 'a');
      const second = await claimOne(store, 1400, 'a');
      const stores = [store, ...others];
      // Both running runs end at the same instant through different stores, each store then asking.
      const outs = await Promise.all([
        others[0]!.complete(first.lease.lease_id, {}, 1500).then(() => others[0]!.startQueuedRuns(wf, 1600)),
        others[1]!.complete(second.lease.lease_id, {}, 1500).then(() => others[1]!.startQueuedRuns(wf, 1600)),
        ...stores.flatMap((s) => [s.startQueuedRuns(wf, 1600), s.startQueuedRuns(wf, 1600)]),
      ]);
      const started = outs.flatMap((o) => o.started.map((r) => r.run_number)).sort();
      assert.deepEqual(started, [3, 4], `round ${round}: each queued run started exactly once`);
      assert.deepEqual(await statuses(store, wf, 4), ['success', 'success', 'running', 'running']);
      for (const run of [3, 4]) assert.deepEqual((await jobRows(store, wf, run)).map((j) => j.job_id), ['a', 'b']);
    }
  } finally {
    await Promise.all(others.map((s) => s.close()));
  }
}

/** A scheduled time that finds every slot taken: queued with `queue`, skipped with `reject`. */
export function scheduledConcurrentRunCases(withStore: Case): void {
  withStore('fireSchedule queues the run when every slot is taken and when_full is queue, and skips it with reject', async (store) => {
    for (const [wf, when_full, expected] of [['q', 'queue', 'queued'], ['r', 'reject', 'skipped']] as const) {
      const rec = wfRecord(wf, 1000, { next_fire_at_ms: 5000 });
      await store.saveWorkflow({ ...rec, definition: { ...rec.definition, concurrency: { max_runs: 1, when_full } } });
      assert.equal((await ask(store, wf, 1000)).kind, 'started');
      const jobs = buildJobs(wf, 5000, ONE_JOB);
      const out = await store.fireSchedule({
        workflow_id: wf, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 5000,
        fire_at_ms: 5000, next_fire_at_ms: 6000, start: true,
      });
      assert.equal(out.kind, expected, wf);
      assert.equal((await read(store, (r) => r.getWorkflow(wf)))?.next_fire_at_ms, 6000);
    }
    assert.equal((await runStatus(store, 'q', 2)).status, 'queued');
    assert.equal(await read(store, (r) => r.getRun('r', 2)), null);
  });
}
