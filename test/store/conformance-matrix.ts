/**
 * Conformance: matrix jobs (README "Matrix, fan-out and artifacts"): instances as rows, a need on a
 * group waiting for every instance, fail_fast cancelling the unfinished siblings, max_parallel capping
 * the instances leased at once (also under concurrent claims from other stores).
 */
import assert from 'node:assert/strict';
import type { JobSpec, WorkflowDefinition } from '../../src/domain/types.js';
import { planRun } from '../../src/engine/run-plan.js';
import type { Store } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { claim, claimOne, complete, HASH, job, lease, runStatus, wfRecord } from './fixtures.js';

const spec = (id: string, over: Partial<JobSpec> = {}): JobSpec => ({
  id, name: id, command: 'true', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null, ...over,
});

const combos = (n: number) => Array.from({ length: n }, (_, i) => ({ shard: i }));

function def(id: string, jobs: JobSpec[]): WorkflowDefinition {
  return { id, name: id, trigger: null, env: {}, jobs };
}

async function startPlanned(store: Store, d: WorkflowDefinition, now: number): Promise<void> {
  await store.saveWorkflow(wfRecord(d.id, now));
  const { jobs, labelSets } = planRun(d, now);
  const out = await store.startRun({ workflow_id: d.id, expected_hash: HASH, jobs, label_sets: labelSets, now_ms: now });
  assert.equal(out.kind, 'started');
}

export function matrixCases(withStore: Case): void {
  withStore('a matrix job becomes one row per instance; a need on it waits for all and receives each instance\'s outputs', async (store) => {
    await startPlanned(store, def('m', [
      spec('test', { strategy: { matrix: {}, combos: [{ os: 'a', v: 1 }, { os: 'b', v: 1 }], fail_fast: true, max_parallel: null } }),
      spec('after', { needs: ['test'] }),
    ]), 1000);
    const t0 = await job(store, 'm', 'test~0');
    assert.deepEqual([t0.name, t0.group_id, t0.matrix, t0.env.WEFT_MATRIX_OS, t0.env.WEFT_MATRIX_V], ['test (a, 1)', 'test', { os: 'a', v: 1 }, 'a', '1']);
    const after = await job(store, 'm', 'after');
    assert.deepEqual([after.needs, after.pending_needs, after.group_id], [['test~0', 'test~1'], 2, null]);
    const a = await claimOne(store, 1000, 'test~0');
    await complete(store, a.lease.lease_id, { k: 'x' }, 1100);
    assert.equal((await job(store, 'm', 'after')).status, 'pending', 'one instance is not the whole group');
    const b = await claimOne(store, 1200, 'test~1');
    await complete(store, b.lease.lease_id, { k: 'y' }, 1300);
    const ready = await job(store, 'm', 'after');
    assert.equal(ready.status, 'queued');
    assert.deepEqual(ready.upstream_outputs, { 'test~0': { k: 'x' }, 'test~1': { k: 'y' } });
  });

  withStore('fail_fast: an instance failing for good cancels its queued and running siblings; the run ends failed, always() below still runs', async (store) => {
    await startPlanned(store, def('ff', [
      spec('test', { strategy: { matrix: {}, combos: combos(3), fail_fast: true, max_parallel: null } }),
      spec('after', { needs: ['test'] }),
      spec('report', { needs: ['test'], condition: 'always' }),
    ]), 1000);
    const [first, second] = await claim(store, 1000, { max: 2 });
    assert.deepEqual([first!.job.job_id, second!.job.job_id], ['test~0', 'test~1']);
    const out = await store.fail(first!.lease.lease_id, 'boom', false, 2000);
    assert.equal(out.kind, 'failed');
    const running = await job(store, 'ff', 'test~1');
    const queued = await job(store, 'ff', 'test~2');
    for (const j of [running, queued]) {
      assert.equal(j.status, 'cancelled', j.job_id);
      assert.match(j.error ?? '', /fail_fast.*test~0/);
    }
    assert.equal((await lease(store, second!.lease.lease_id)).state, 'cancelled', 'the running sibling\'s worker hears of it');
    assert.equal((await job(store, 'ff', 'after')).status, 'skipped');
    const report = await job(store, 'ff', 'report');
    assert.equal(report.status, 'queued');
    assert.deepEqual(report.needs_results, { 'test~0': 'failure', 'test~1': 'cancelled', 'test~2': 'cancelled' });
    const r = await claimOne(store, 3000, 'report');
    await complete(store, r.lease.lease_id, {}, 3100);
    assert.deepEqual(await runStatus(store, 'ff'), { status: 'failed', finished_at_ms: 3100 });
  });

  withStore('fail_fast: false leaves the siblings running', async (store) => {
    await startPlanned(store, def('nf', [spec('test', { strategy: { matrix: {}, combos: combos(2), fail_fast: false, max_parallel: null } })]), 1000);
    const [first, second] = await claim(store, 1000, { max: 2 });
    await store.fail(first!.lease.lease_id, 'boom', false, 2000);
    assert.equal((await job(store, 'nf', 'test~1')).status, 'running');
    await complete(store, second!.lease.lease_id, {}, 2100);
    assert.deepEqual(await runStatus(store, 'nf'), { status: 'failed', finished_at_ms: 2100 });
  });

  withStore('max_parallel: a claim takes no more instances of a group than its room, other jobs still flow', async (store) => {
    await startPlanned(store, def('mp', [
      spec('test', { strategy: { matrix: {}, combos: combos(5), fail_fast: true, max_parallel: 2 } }),
      spec('other'),
    ]), 1000);
    const got = await claim(store, 1000, { max: 10 });
    assert.deepEqual(got.map((c) => c.job.job_id).sort(), ['other', 'test~0', 'test~1']);
    assert.deepEqual(await claim(store, 1001, { max: 10 }), [], 'the group is full');
    await complete(store, got.find((c) => c.job.job_id === 'test~0')!.lease.lease_id, {}, 1100);
    assert.deepEqual((await claim(store, 1200, { max: 10 })).map((c) => c.job.job_id), ['test~2']);
  });
}

/** Claims racing from several stores never lease more instances of a group than max_parallel. */
export function matrixRaceCases(withStore: Case): void {
  withStore('max_parallel holds under concurrent claims from several stores', async (store, h: StoreHandle) => {
    const others = await Promise.all(Array.from({ length: 4 }, () => h.another()));
    try {
      const cap = 3;
      await startPlanned(store, def('race', [spec('test', { strategy: { matrix: {}, combos: combos(40), fail_fast: false, max_parallel: cap } })]), 1000);
      let done = 0;
      for (let round = 0; done < 40; round++) {
        assert.ok(round < 200, 'the instances keep flowing');
        const claims = await Promise.all([store, ...others].flatMap((s) => [claim(s, 2000 + round, { max: 2 }), claim(s, 2000 + round, { max: 2 })]));
        const got = claims.flat();
        const running = (await store.read((r) => r.getRunJobs('race', 1))).filter((j) => j.status === 'running');
        assert.ok(running.length <= cap, `round ${round}: ${running.length} instances running at once (max_parallel ${cap})`);
        for (const c of got) await complete(store, c.lease.lease_id, {}, 3000 + round);
        done += got.length;
      }
      assert.equal(done, 40);
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
  }, { timeout: 120_000 });
}
