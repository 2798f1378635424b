/**
 * Conformance: matrix jobs (README "Matrix, fan-out and artifacts"): instances as rows, a need on a
 * group waiting for every instance, fail_fast cancelling the unfinished siblings, max_parallel capping
 * the instances leased at once (also under concurrent claims from other stores).
 */
import assert from 'node:assert/strict';
import type { JobSpec, WorkflowDefinition } from '../../src/domain/model.js';
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

/** plan → shard (for_each over plan's `list`) → join. */
function fanDef(id: string, needs: string[] = ['plan'], maxParallel: number | null = null): WorkflowDefinition {
  return def(id, [
    ...needs.map((n) => spec(n)),
    spec('shard', {
      needs,
      for_each: { job: 'plan', key: 'list' },
      strategy: { matrix: {}, combos: [], fail_fast: true, max_parallel: maxParallel },
      env: { X: 'x-${{ item.k }}' },
    }),
    spec('join', { needs: ['shard'] }),
  ]);
}

export function fanOutCases(withStore: Case): void {
  withStore('for_each: the completion of its need replaces the job by one queued instance per item, and rewires the job below', async (store) => {
    await startPlanned(store, fanDef('fo'), 1000);
    assert.equal((await job(store, 'fo', 'shard')).for_each?.key, 'list');
    const p = await claimOne(store, 1000, 'plan');
    const out = await complete(store, p.lease.lease_id, { list: '["a", {"k": 1}]' }, 2000);
    assert.ok(out);
    const jobs = await store.read((r) => r.getRunJobs('fo', 1));
    assert.deepEqual(jobs.map((j) => j.job_id), ['plan', 'join', 'shard~0', 'shard~1']);
    const [a, b] = [jobs[2]!, jobs[3]!];
    assert.deepEqual([a.name, a.status, a.env.WEFT_ITEM, a.env.WEFT_ITEM_INDEX, a.item, a.item_index, a.group_id, a.env.X], ['shard (a)', 'queued', 'a', '0', 'a', 0, 'shard', 'x-']);
    assert.deepEqual([b.name, b.env.WEFT_ITEM, b.env.X, b.item], ['shard (1)', '{"k":1}', 'x-1', { k: 1 }]);
    assert.deepEqual(a.upstream_outputs, { plan: { list: '["a", {"k": 1}]' } });
    const join = jobs[1]!;
    assert.deepEqual([join.needs, join.pending_needs], [['shard~0', 'shard~1'], 2]);
    for (const c of await claim(store, 3000, { max: 5 })) await complete(store, c.lease.lease_id, { r: c.job.job_id }, 3100);
    const ready = await job(store, 'fo', 'join');
    assert.deepEqual([ready.status, ready.upstream_outputs], ['queued', { 'shard~0': { r: 'shard~0' }, 'shard~1': { r: 'shard~1' } }]);
    const j = await claimOne(store, 4000, 'join');
    await complete(store, j.lease.lease_id, {}, 4100);
    assert.deepEqual(await runStatus(store, 'fo'), { status: 'success', finished_at_ms: 4100 });
  });

  withStore('for_each: an empty list ends the job success with no instances; a list that is not one fails it with a clear error', async (store) => {
    await startPlanned(store, fanDef('empty'), 1000);
    const p = await claimOne(store, 1000, 'plan');
    await complete(store, p.lease.lease_id, { list: '[]' }, 2000);
    const shard = await job(store, 'empty', 'shard');
    assert.deepEqual([shard.status, shard.outputs], ['success', {}]);
    assert.equal((await job(store, 'empty', 'join')).status, 'queued');

    for (const [wf, list, want] of [
      ['notarray', '{"a": 1}', /must be a JSON array of strings or objects, got an object/],
      ['toolong', JSON.stringify(Array.from({ length: 1001 }, (_, i) => String(i))), /1001 items; at most 1000/],
      ['unset', undefined, /output "list" of job "plan" is not set/],
      ['badjson', 'nope', /is not JSON/],
    ] as const) {
      await startPlanned(store, fanDef(wf), 1000);
      const q = await claimOne(store, 1000, 'plan');
      await complete(store, q.lease.lease_id, list === undefined ? {} : { list }, 2000);
      const failed = await job(store, wf, 'shard');
      assert.equal(failed.status, 'failed', wf);
      assert.match(failed.error ?? '', want);
      assert.equal((await job(store, wf, 'join')).status, 'skipped');
      assert.deepEqual(await runStatus(store, wf), { status: 'failed', finished_at_ms: 2000 });
    }
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

/**
 * The two needs of a fan-out of 100 items complete at the same instant from two stores: exactly one of
 * the completions expands it, each instance exists once; then the 100 instances complete from several
 * stores at once and the join below is queued exactly once, with every instance's outputs.
 */
export function fanOutRaceCases(withStore: Case, runs: number): void {
  withStore(`for_each over 100 items: needs completing at once from two stores expand it exactly once (${runs} runs)`, async (store, h: StoreHandle) => {
    const others = await Promise.all(Array.from({ length: 3 }, () => h.another()));
    try {
      const items = JSON.stringify(Array.from({ length: 100 }, (_, i) => `s${i}`));
      for (let r = 0; r < runs; r++) {
        const wf = `race${r}`;
        await startPlanned(store, fanDef(wf, ['plan', 'other']), 1000);
        const [p, o] = [await claimOne(store, 1000, 'plan'), await claimOne(store, 1000, 'other')];
        await Promise.all([complete(others[0]!, p.lease.lease_id, { list: items }, 2000), complete(others[1]!, o.lease.lease_id, {}, 2000)]);
        const jobs = await store.read((rd) => rd.getRunJobs(wf, 1));
        const instances = jobs.filter((j) => j.group_id === 'shard');
        assert.equal(instances.length, 100, `${wf}: ${instances.length} instances`);
        assert.equal(new Set(instances.map((j) => j.job_id)).size, 100);
        assert.ok(!jobs.some((j) => j.job_id === 'shard'), 'the fan-out job is replaced by its instances');
        const join = jobs.find((j) => j.job_id === 'join')!;
        assert.deepEqual([join.needs.length, join.pending_needs], [100, 100]);
      }
      // The last run's instances complete from four stores at once.
      const wf = `race${runs - 1}`;
      const all: Array<Promise<unknown>> = [];
      const stores = [store, ...others];
      for (let round = 0; round < 50; round++) {
        const got = (await Promise.all(stores.map((s) => claim(s, 3000 + round, { max: 10 })))).flat();
        if (got.length === 0) break;
        all.push(...got.map((c, i) => complete(stores[i % stores.length]!, c.lease.lease_id, { i: c.job.job_id }, 4000)));
        await Promise.all(all);
      }
      const join = await job(store, wf, 'join');
      assert.equal(join.status, 'queued');
      assert.equal(Object.keys(join.upstream_outputs).length, 100);
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
  }, { timeout: 300_000 });
}
