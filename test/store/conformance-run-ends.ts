/**
 * Conformance: the run-end outbox (docs/architecture.md "Run ends"): every way a run ends (its last
 * job completing or failing, a cancel while it runs, a cancel while it is queued) records the end
 * once for each consumer, in the same transaction; a consumer's finish removes only its own entries,
 * and finishing twice, or entries finished by another connection, change nothing.
 */
import assert from 'node:assert/strict';
import type { Concurrency } from '../../src/domain/model.js';
import { RUN_END_CONSUMERS, type RunEnd } from '../../src/store/run-end-types.js';
import type { Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { HASH, buildJobs, claimOne, complete, labelSetsOf, start, wfRecord } from './fixtures.js';

const ends = async (store: Store, consumer: (typeof RUN_END_CONSUMERS)[number] = 'notify', limit = 100) =>
  (await store.pendingRunEnds(consumer, limit)).map((e: RunEnd) => `${e.workflow_id}#${e.run_number} ${e.state} @${e.ended_at_ms}`);

export function runEndCases(withStore: Case, opts: { concurrency?: boolean }): void {
  withStore('a run ending records its end once per consumer, with its state and time; running runs record nothing', async (store) => {
    await start(store, 'ok', 1000, { a: {}, b: { needs: ['a'] } });
    await start(store, 'bad', 1050, { x: {} });
    await start(store, 'open', 1060, { y: {} });
    const a = await claimOne(store, 1100, 'a');
    await complete(store, a.lease.lease_id, {}, 1200);
    assert.deepEqual(await ends(store), [], 'a run with a job left records nothing');
    const x = await claimOne(store, 1250, 'x');
    await claimOne(store, 1260, 'y');
    const b = await claimOne(store, 1300, 'b');
    await complete(store, b.lease.lease_id, {}, 1400);
    assert.equal((await store.fail(x.lease.lease_id, 'boom', false, 1600)).kind, 'failed');
    for (const consumer of RUN_END_CONSUMERS) {
      assert.deepEqual(await ends(store, consumer), ['ok#1 success @1400', 'bad#1 failed @1600'], consumer);
    }
    const [first] = await store.pendingRunEnds('follow', 1);
    assert.equal(first!.workflow_id, 'ok', 'oldest first, and the limit holds');
    assert.equal(typeof first!.seq, 'number');
  });

  withStore("a consumer's finish removes only its own entries; twice changes nothing", async (store) => {
    await start(store, 'w', 1000, { a: {} });
    await store.cancelRun('w', 1100);
    const [entry] = await store.pendingRunEnds('call', 10);
    assert.equal(entry!.state, 'cancelled', 'a cancel of a running run is an end');
    await store.finishRunEnds('call', [entry!.seq]);
    await store.finishRunEnds('call', [entry!.seq]);
    await store.finishRunEnds('call', []);
    assert.deepEqual(await ends(store, 'call'), []);
    assert.deepEqual(await ends(store, 'notify'), ['w#1 cancelled @1100']);
    assert.deepEqual(await ends(store, 'follow'), ['w#1 cancelled @1100']);
  });

  withStore('a queued run cancelled before it started is an end too; starting it is not', async (store) => {
    const rec = wfRecord('q', 1000);
    const concurrency: Concurrency = { max_runs: 1, when_full: 'queue' };
    await store.saveWorkflow({ ...rec, definition: { ...rec.definition, concurrency } });
    const ask = (now: number) => {
      const jobs = buildJobs('q', now, { a: {} });
      return store.startRun({ workflow_id: 'q', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now });
    };
    assert.equal((await ask(1000)).kind, 'started');
    assert.equal((await ask(1100)).kind, 'queued');
    assert.equal((await ask(1200)).kind, 'queued');
    await store.cancelRun('q', 1300, 2);
    assert.deepEqual(await ends(store), ['q#2 cancelled @1300']);
    const a = await claimOne(store, 1400, 'a');
    await complete(store, a.lease.lease_id, {}, 1500);
    await store.startQueuedRuns('q', 1600);
    assert.deepEqual(await ends(store), ['q#2 cancelled @1300', 'q#1 success @1500'], 'run 3 started: no end');
  });

  if (opts.concurrency !== false) withStore('entries finished on another connection are gone for this one', async (store, handle) => {
    await start(store, 'w', 1000, { a: {} });
    const a = await claimOne(store, 1100, 'a');
    await complete(store, a.lease.lease_id, {}, 1200);
    const other = await handle.another();
    try {
      const seen = await other.pendingRunEnds('follow', 10);
      assert.equal(seen.length, 1);
      await other.finishRunEnds('follow', seen.map((e) => e.seq));
      assert.deepEqual(await ends(store, 'follow'), []);
      assert.deepEqual(await ends(store, 'notify'), ['w#1 success @1200']);
    } finally {
      await other.close();
    }
  });
}
