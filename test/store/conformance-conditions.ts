/**
 * Conformance: conditional jobs (README "Workflow definitions", `if:`; docs/architecture.md
 * "Conditions"): what runs below a job that ended, what a cancel spares, and how the run ends.
 */
import assert from 'node:assert/strict';
import type { WorkflowDefinition } from '../../src/domain/model.js';
import { planRun } from '../../src/engine/run-plan.js';
import type { JobRecord, Store } from '../../src/store/store.js';
import type { Case, ConformanceOptions, StoreHandle } from './conformance.js';
import { claim, claimOne, complete, HASH, job, lease, pool, runStatus, start, wfRecord } from './fixtures.js';

/** Starts a run of `def` with the jobs the engine plans for it (roots decided by their conditions). */
async function startPlanned(store: Store, def: WorkflowDefinition, now: number) {
  await store.saveWorkflow(wfRecord(def.id, now));
  const { jobs, labelSets } = planRun(def, now);
  const out = await store.startRun({ workflow_id: def.id, expected_hash: HASH, jobs, label_sets: labelSets, now_ms: now });
  assert.equal(out.kind, 'started');
  return out.kind === 'started' ? out.run : null;
}

const spec = (id: string, over: Partial<WorkflowDefinition['jobs'][number]> = {}): WorkflowDefinition['jobs'][number] => ({
  id, name: id, command: 'true', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null, ...over,
});

async function failFor(store: Store, leaseId: string, now: number) {
  const out = await store.fail(leaseId, 'boom', false, now);
  assert.equal(out.kind, 'failed');
  return out;
}

const brief = (j: JobRecord) => ({
  status: j.status,
  pending_needs: j.pending_needs,
  needs_results: j.needs_results,
  failed_upstream: j.failed_upstream,
});

export function conditionCases(withStore: Case): void {
  withStore('a failure: success() below is skipped, always() runs and sees it, the run ends failed though always() succeeded', async (store) => {
    await start(store, 'w', 1000, {
      a: {},
      build: { needs: ['a'] },
      cleanup: { needs: ['a'], condition: 'always' },
      after: { needs: ['build'] },
    });
    const a = await claimOne(store, 1000, 'a');
    const out = await failFor(store, a.lease.lease_id, 2000);
    assert.deepEqual(new Set(out.changes.map((c) => c.job_id)), new Set(['a', 'build', 'after', 'cleanup']));
    for (const id of ['build', 'after']) {
      const j = await job(store, 'w', id);
      assert.deepEqual([j.status, j.error, j.finished_at_ms], ['skipped', 'upstream job "a" failed', 2000], id);
    }
    const cleanup = await job(store, 'w', 'cleanup');
    assert.deepEqual(brief(cleanup), { status: 'queued', pending_needs: 0, needs_results: { a: 'failure' }, failed_upstream: true });
    assert.deepEqual([cleanup.enqueued_at_ms, cleanup.upstream_outputs], [2000, { a: {} }]);
    assert.equal((await runStatus(store, 'w')).status, 'running', 'the run waits for the always() job');
    const c = await claimOne(store, 3000, 'cleanup');
    await complete(store, c.lease.lease_id, {}, 4000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'failed', finished_at_ms: 4000 });
  });

  withStore('all succeed: always() runs, failure() and cancelled() are skipped with what is below them, the run succeeds', async (store) => {
    await start(store, 'w', 1000, {
      a: {},
      cleanup: { needs: ['a'], condition: 'always' },
      onfail: { needs: ['a'], condition: 'failure' },
      oncancel: { needs: ['a'], condition: 'cancelled' },
      report: { needs: ['onfail'] },
      tally: { needs: ['onfail', 'cleanup'], condition: 'always' },
    });
    const a = await claimOne(store, 1000, 'a');
    const out = await complete(store, a.lease.lease_id, { A: '1' }, 2000);
    assert.deepEqual(out.enqueued, ['cleanup']);
    const onfail = await job(store, 'w', 'onfail');
    assert.deepEqual([onfail.status, onfail.error], ['skipped', 'if: failure() is false: no upstream job failed']);
    const oncancel = await job(store, 'w', 'oncancel');
    assert.deepEqual([oncancel.status, oncancel.error], ['skipped', 'if: cancelled() is false: the run was not cancelled']);
    assert.deepEqual([(await job(store, 'w', 'report')).status, (await job(store, 'w', 'report')).error], ['skipped', 'if: failure() is false: no upstream job failed']);
    const cleanup = await job(store, 'w', 'cleanup');
    assert.deepEqual(brief(cleanup), { status: 'queued', pending_needs: 0, needs_results: {}, failed_upstream: false });
    assert.deepEqual(cleanup.upstream_outputs, { a: { A: '1' } });
    assert.deepEqual(brief(await job(store, 'w', 'tally')), { status: 'pending', pending_needs: 1, needs_results: { onfail: 'skipped' }, failed_upstream: false });
    const c = await claimOne(store, 3000, 'cleanup');
    const out2 = await complete(store, c.lease.lease_id, { C: '2' }, 4000);
    assert.deepEqual(out2.enqueued, ['tally']);
    assert.deepEqual((await job(store, 'w', 'tally')).upstream_outputs, { onfail: {}, cleanup: { C: '2' } });
    const t = await claimOne(store, 5000, 'tally');
    await complete(store, t.lease.lease_id, {}, 6000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'success', finished_at_ms: 6000 }, 'skipped jobs do not fail a run');
  });

  withStore('failure() runs when any job above it failed, also through skipped ones; success() below an always() after a failure is skipped', async (store) => {
    await start(store, 'w', 1000, {
      a: {},
      b: { needs: ['a'] },
      notify: { needs: ['b'], condition: 'failure' },
      cleanup: { needs: ['a'], condition: 'always' },
      deploy: { needs: ['cleanup'] },
      rollback: { needs: ['cleanup'], condition: 'failure' },
    });
    const a = await claimOne(store, 1000, 'a');
    await failFor(store, a.lease.lease_id, 2000);
    assert.equal((await job(store, 'w', 'b')).status, 'skipped');
    assert.deepEqual(brief(await job(store, 'w', 'notify')), { status: 'queued', pending_needs: 0, needs_results: { b: 'skipped' }, failed_upstream: true });
    const [first, second] = await claim(store, 3000, { max: 2 });
    assert.deepEqual([first?.job.job_id, second?.job.job_id].sort(), ['cleanup', 'notify']);
    const cleanup = [first!, second!].find((c) => c.job.job_id === 'cleanup')!;
    const out = await complete(store, cleanup.lease.lease_id, {}, 4000);
    assert.deepEqual(out.enqueued, ['rollback']);
    const deploy = await job(store, 'w', 'deploy');
    assert.deepEqual([deploy.status, deploy.error], ['skipped', 'a job above upstream job "cleanup" failed']);
    assert.deepEqual(brief(await job(store, 'w', 'rollback')), { status: 'queued', pending_needs: 0, needs_results: {}, failed_upstream: true });
  });

  withStore('a failure() job whose needs all succeeded is skipped, and the join below it still waits for its other need', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: {}, f: { needs: ['a'], condition: 'failure' }, j: { needs: ['f', 'b'], condition: 'always' } });
    const [ca, cb] = await claim(store, 1000, { max: 2 });
    await complete(store, ca!.lease.lease_id, {}, 2000);
    assert.deepEqual(brief(await job(store, 'w', 'j')), { status: 'pending', pending_needs: 1, needs_results: { f: 'skipped' }, failed_upstream: false });
    const out = await complete(store, cb!.lease.lease_id, {}, 3000);
    assert.deepEqual(out.enqueued, ['j']);
  });

  withStore('cancel: always() and cancelled() jobs are spared and run, seeing cancelled; the rest is cancelled; the run ends cancelled', async (store) => {
    await start(store, 'w', 1000, {
      a: {},
      s: { needs: ['a'] },
      f: { needs: ['a'], condition: 'failure' },
      cleanup: { needs: ['a'], condition: 'always' },
      notify: { needs: ['s'], condition: 'cancelled' },
      last: { needs: ['cleanup', 'notify'], condition: 'always' },
    });
    const a = await claimOne(store, 1000, 'a');
    const out = await store.cancelRun('w', 2000);
    assert.equal(out.kind, 'cancelled');
    assert.deepEqual(out.kind === 'cancelled' ? [...out.jobs].sort() : [], ['a', 'f', 's']);
    assert.deepEqual(new Set(out.kind === 'cancelled' ? out.changes.map((c) => c.job_id) : []), new Set(['a', 'f', 's', 'cleanup', 'notify']));
    assert.equal((await lease(store, a.lease.lease_id)).state, 'cancelled');
    assert.deepEqual(brief(await job(store, 'w', 'cleanup')), { status: 'queued', pending_needs: 0, needs_results: { a: 'cancelled' }, failed_upstream: false });
    assert.deepEqual(brief(await job(store, 'w', 'notify')), { status: 'queued', pending_needs: 0, needs_results: { s: 'cancelled' }, failed_upstream: false });
    assert.deepEqual(brief(await job(store, 'w', 'last')), { status: 'pending', pending_needs: 2, needs_results: {}, failed_upstream: false });
    assert.equal((await job(store, 'w', 'last')).run_cancelled, true);
    assert.equal((await runStatus(store, 'w')).status, 'running', 'the spared jobs are still to run');
    const [c1, c2] = await claim(store, 3000, { max: 2 });
    await complete(store, c1!.lease.lease_id, {}, 4000);
    const out2 = await complete(store, c2!.lease.lease_id, {}, 4000);
    assert.deepEqual(out2.enqueued, ['last']);
    const l = await claimOne(store, 5000, 'last');
    await complete(store, l.lease.lease_id, {}, 6000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'cancelled', finished_at_ms: 6000 });
  });

  withStore('cancel while only an always() job runs: it goes on and the run ends cancelled; a second cancel stops a spared job', async (store) => {
    await start(store, 'w', 1000, { a: {}, cleanup: { needs: ['a'], condition: 'always' } });
    await complete(store, (await claimOne(store, 1000, 'a')).lease.lease_id, {}, 2000);
    const c = await claimOne(store, 2000, 'cleanup');
    const out = await store.cancelRun('w', 3000);
    assert.deepEqual(out.kind === 'cancelled' && out.jobs, []);
    assert.equal((await store.heartbeat(c.lease.lease_id, 3500)).kind, 'renewed', 'the spared job keeps its lease');
    await complete(store, c.lease.lease_id, {}, 4000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'cancelled', finished_at_ms: 4000 });

    await start(store, 'w', 5000, { a: {}, cleanup: { needs: ['a'], condition: 'always' } });
    const a2 = await claimOne(store, 5000, 'a');
    assert.equal((await store.cancelRun('w', 6000)).kind, 'cancelled');
    assert.equal((await lease(store, a2.lease.lease_id)).state, 'cancelled');
    const c2 = await claimOne(store, 6000, 'cleanup');
    const again = await store.cancelRun('w', 7000);
    assert.deepEqual(again.kind === 'cancelled' && again.jobs, ['cleanup'], 'the second cancel stops it');
    assert.equal((await store.heartbeat(c2.lease.lease_id, 7500)).kind, 'cancelled');
    assert.deepEqual(await runStatus(store, 'w', 2), { status: 'cancelled', finished_at_ms: 7000 });
  });

  withStore('a run whose roots a condition skips at the start: counted as finished; with nothing left it is over at once, success', async (store) => {
    const run = await startPlanned(store, { id: 'w', name: 'w', trigger: null, env: {}, jobs: [
      spec('a'), spec('onfail', { condition: 'failure' }), spec('below', { needs: ['onfail'] }),
    ] }, 1000);
    assert.deepEqual([run?.status, run?.finished_at_ms], ['running', null]);
    assert.deepEqual([(await job(store, 'w', 'onfail')).status, (await job(store, 'w', 'below')).status], ['skipped', 'skipped']);
    await complete(store, (await claimOne(store, 1000, 'a')).lease.lease_id, {}, 2000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'success', finished_at_ms: 2000 });

    const all = await startPlanned(store, { id: 'v', name: 'v', trigger: null, env: {}, jobs: [spec('c', { condition: 'cancelled' })] }, 3000);
    assert.deepEqual([all?.status, all?.finished_at_ms], ['success', 3000]);
    assert.deepEqual(await runStatus(store, 'v'), { status: 'success', finished_at_ms: 3000 });
    assert.equal((await startPlanned(store, { id: 'v', name: 'v', trigger: null, env: {}, jobs: [spec('c')] }, 4000))?.run_number, 2, 'and the next run starts');
  });

  withStore('a root always() job is spared by a cancel and runs', async (store) => {
    await start(store, 'w', 1000, { a: {}, r: { condition: 'always' } });
    const out = await store.cancelRun('w', 2000);
    assert.deepEqual(out.kind === 'cancelled' && out.jobs, ['a']);
    const r = await claimOne(store, 3000, 'r');
    await complete(store, r.lease.lease_id, {}, 4000);
    assert.deepEqual(await runStatus(store, 'w'), { status: 'cancelled', finished_at_ms: 4000 });
  });
}

/**
 * `n` runs of b, c and j (`always()`, needs both): b fails for good and c completes at the same
 * instant through two stores, or both complete. j is queued exactly once, with what it saw.
 */
export async function alwaysJoinRace(store: Store, left: Store, right: Store, n: number, failOne: boolean): Promise<void> {
  const wfs = Array.from({ length: n }, (_, i) => `aj${failOne ? 'f' : 's'}${i}`);
  await pool(wfs, 8, (wf) => start(store, wf, 1000, { b: {}, c: {}, j: { needs: ['b', 'c'], condition: 'always' } }));
  const leases = new Map<string, string>();
  for (;;) {
    const got = await claim(store, 2000, { max: 200, ttl: 600 });
    for (const c of got) leases.set(`${c.job.workflow_id}/${c.job.job_id}`, c.lease.lease_id);
    if (got.length < 200) break;
  }
  assert.equal(leases.size, 2 * n);
  const outs = await Promise.all(
    wfs.flatMap((wf) => [
      failOne ? left.fail(leases.get(`${wf}/b`)!, 'boom', false, 3000) : left.complete(leases.get(`${wf}/b`)!, { B: wf }, 3000),
      right.complete(leases.get(`${wf}/c`)!, { C: wf }, 3000),
    ]),
  );
  for (const o of outs) assert.ok(o.kind === 'completed' || o.kind === 'failed', JSON.stringify(o));
  const js = await pool(wfs, 8, (wf) => job(store, wf, 'j'));
  wfs.forEach((wf, i) => {
    const j = js[i]!;
    const want = failOne ? { b: 'failure' } : {};
    assert.deepEqual([j.status, j.pending_needs, j.needs_results, j.failed_upstream], ['queued', 0, want, failOne], wf);
    assert.deepEqual(j.upstream_outputs, { b: failOne ? {} : { B: wf }, c: { C: wf } }, wf);
  });
  const claimed = await claim(store, 4000, { max: 2 * n + 5, ttl: 600 });
  assert.deepEqual(claimed.map((c) => c.job.job_id).filter((id) => id !== 'j'), []);
  assert.equal(new Set(claimed.map((c) => c.job.workflow_id)).size, n, 'each run’s j handed out once');
  assert.equal(claimed.length, n);
  await Promise.all(claimed.map((c) => store.complete(c.lease.lease_id, {}, 5000)));
  for (const wf of wfs) assert.equal((await runStatus(store, wf)).status, failOne ? 'failed' : 'success', wf);
}

export function conditionRaceCases(withStore: Case, _opts: ConformanceOptions): void {
  for (const failOne of [true, false]) {
    const what = failOne ? 'one fails and the other completes' : 'both complete';
    withStore(`the two needs of an always() join end at the same instant (${what}): it is queued exactly once`, async (store, h: StoreHandle) => {
      const [left, right] = await Promise.all([h.another(), h.another()]);
      try {
        await alwaysJoinRace(store, left, right, 100, failOne);
      } finally {
        await Promise.all([left.close(), right.close()]);
      }
    }, { timeout: 120_000 });
  }
}
