/**
 * Conformance: concurrency groups of runs (README "Concurrency groups"): of all the runs of any
 * workflow in one group, one runs and one waits; a newer start replaces the waiting one; with
 * cancel_in_progress the start names the running one to cancel; a queued run starts once its group is
 * free, whichever workflow freed it; and starts racing on separate connections never run two at once.
 */
import assert from 'node:assert/strict';
import type { Concurrency } from '../../src/domain/model.js';
import type { Store, StartRunOutcome } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { HASH, buildJobs, claimOne, complete, labelSetsOf, read, wfRecord } from './fixtures.js';

async function define(store: Store, wf: string, concurrency: Concurrency): Promise<void> {
  const rec = wfRecord(wf, 1000);
  await store.saveWorkflow({ ...rec, definition: { ...rec.definition, concurrency } });
}

function start(store: Store, wf: string, now: number, group: string | null, cancel_in_progress = false): Promise<StartRunOutcome> {
  const jobs = buildJobs(wf, now, { a: {} });
  return store.startRun({
    workflow_id: wf,
    expected_hash: HASH,
    jobs,
    label_sets: labelSetsOf(jobs),
    now_ms: now,
    group: group === null ? null : { name: group, cancel_in_progress },
  });
}

const status = async (store: Store, wf: string, run: number) => (await read(store, (r) => r.getRun(wf, run)))?.status;

export function runGroupCases(withStore: Case): void {
  withStore("one run of a group runs, across workflows; a newer start replaces the waiting one; the group's end starts it", async (store) => {
    for (const wf of ['api', 'web', 'docs']) await define(store, wf, { max_runs: 1, when_full: 'reject', group: 'deploy-${{ inputs.env }}' });
    const first = await start(store, 'api', 1000, 'deploy-prod');
    assert.equal(first.kind, 'started');
    assert.equal(first.kind === 'started' && first.run.concurrency_group, 'deploy-prod');
    assert.equal((await start(store, 'docs', 1050, 'deploy-staging')).kind, 'started', 'another group is not held up');

    const waiting = await start(store, 'web', 1100, 'deploy-prod');
    assert.equal(waiting.kind, 'queued', 'the group is busy: the start waits, whatever when_full says');
    assert.deepEqual(waiting.kind === 'queued' && [waiting.replaced, waiting.supersede], [[], []]);
    assert.deepEqual(await store.startQueuedRuns('web', 1150), { started: [], changes: [] }, 'not while api runs');

    // A newer start of the group (here of the running workflow itself) replaces web's waiting run.
    const newer = await start(store, 'api', 1200, 'deploy-prod');
    assert.equal(newer.kind, 'queued');
    assert.deepEqual(newer.kind === 'queued' && newer.replaced, [{ workflow_id: 'web', run_number: 1 }]);
    assert.equal(await status(store, 'web', 1), 'cancelled');
    assert.equal((await read(store, (r) => r.getRun('web', 1)))?.finished_at_ms, 1200);

    // api's run 1 ends: its run 2 starts, from any workflow's start of queued runs.
    const c = await claimOne(store, 1300, 'a');
    assert.equal(c.job.workflow_id, 'api');
    await complete(store, c.lease.lease_id, {}, 1400);
    assert.equal(await status(store, 'api', 1), 'success');
    const out = await store.startQueuedRuns('api', 1500);
    assert.deepEqual(out.started.map((r) => [r.workflow_id, r.run_number, r.status, r.concurrency_group]), [['api', 2, 'running', 'deploy-prod']]);
    assert.equal((await start(store, 'web', 1600, 'deploy-prod')).kind, 'queued', 'and the group is busy again');
  });

  withStore('a queued run waits for its group even when its own workflow has a free slot, and starts from its own workflow once another frees the group', async (store) => {
    await define(store, 'a-wf', { max_runs: 1, when_full: 'reject', group: 'g' });
    await define(store, 'b-wf', { max_runs: 1, when_full: 'reject', group: 'g' });
    assert.equal((await start(store, 'a-wf', 1000, 'g')).kind, 'started');
    assert.equal((await start(store, 'b-wf', 1100, 'g')).kind, 'queued');
    const c = await claimOne(store, 1200, 'a');
    await complete(store, c.lease.lease_id, {}, 1300);
    const out = await store.startQueuedRuns('b-wf', 1400);
    assert.deepEqual(out.started.map((r) => [r.workflow_id, r.run_number]), [['b-wf', 1]]);
    assert.deepEqual(out.changes.map((x) => x.job_id), ['a']);
  });

  withStore('cancel_in_progress: the start waits and names the running run to cancel; once it is cancelled the start goes ahead', async (store) => {
    await define(store, 'old', { max_runs: 1, when_full: 'reject', group: 'g' });
    await define(store, 'new', { max_runs: 1, when_full: 'reject', group: 'g', cancel_in_progress: true });
    assert.equal((await start(store, 'old', 1000, 'g')).kind, 'started');
    const out = await start(store, 'new', 1100, 'g', true);
    assert.equal(out.kind, 'queued');
    assert.deepEqual(out.kind === 'queued' && out.supersede, [{ workflow_id: 'old', run_number: 1 }]);
    assert.equal((await store.cancelRun('old', 1200, 1)).kind, 'cancelled');
    const started = await store.startQueuedRuns('new', 1300);
    assert.deepEqual(started.started.map((r) => [r.workflow_id, r.status]), [['new', 'running']]);
  });

  withStore('with the group free, max_runs and when_full decide as before; a run without a group ignores groups', async (store) => {
    await define(store, 'w', { max_runs: 1, when_full: 'reject', group: 'g' });
    await define(store, 'free', { max_runs: 1, when_full: 'reject' });
    assert.equal((await start(store, 'w', 1000, 'g-1')).kind, 'started');
    assert.deepEqual(await start(store, 'w', 1100, 'g-2'), { kind: 'active', run_number: 1, run_numbers: [1] }, "group g-2 is free, the workflow's one slot is not");
    assert.equal((await start(store, 'free', 1200, null)).kind, 'started');
    assert.equal((await read(store, (r) => r.getRun('free', 1)))?.concurrency_group, null);
  });
}

/** Starts of one group from separate connections at the same instant: exactly one runs, at most one waits. */
export async function groupStartRace(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another()]);
  const stores = [store, ...others];
  try {
    for (let round = 0; round < 5; round++) {
      const group = `deploy-${round}`;
      const wfs = Array.from({ length: 6 }, (_, i) => `r${round}-w${i}`);
      for (const wf of wfs) await define(store, wf, { max_runs: 1, when_full: 'reject', group });
      const outcomes = await Promise.all(wfs.map((wf, i) => start(stores[i % stores.length]!, wf, 1000 + round, group)));
      assert.equal(outcomes.filter((o) => o.kind === 'started').length, 1, `round ${round}: ${JSON.stringify(outcomes.map((o) => o.kind))}`);
      assert.equal(outcomes.filter((o) => o.kind === 'queued').length, 5);
      const runs = await read(store, (r) => r.getRuns(wfs.map((wf) => ({ workflow_id: wf, run_number: 1 }))));
      assert.equal(runs.filter((r) => r.status === 'running').length, 1);
      assert.equal(runs.filter((r) => r.status === 'queued').length, 1, 'each newer start replaced the waiting one: one waits');
      assert.equal(runs.filter((r) => r.status === 'cancelled').length, 4);
      // Every store asks to start every queued run at once: the group is busy, none starts.
      const asked = await Promise.all(stores.flatMap((s) => wfs.map((wf) => s.startQueuedRuns(wf, 2000))));
      assert.equal(asked.flatMap((o) => o.started).length, 0);
    }
  } finally {
    await Promise.all(others.map((s) => s.close()));
  }
}
