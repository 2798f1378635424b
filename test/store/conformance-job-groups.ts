/**
 * Conformance: concurrency groups of jobs (README "Concurrency groups"): the claim takes no job of a
 * group while another job of it runs, across workflows; a job arriving in the group replaces the
 * waiting one (cancelled, with what is below it decided); with cancel_in_progress it cancels the
 * running one, whose lease is voided; and claims or settlings racing on separate connections never run
 * two jobs of a group at once nor cancel anything twice.
 */
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { claim, claimOne, complete, job, runStatus, start, type Spec } from './fixtures.js';

const LIMIT = 64;

/** One workflow `wf` whose run has job `deploy` in `group`, and below it `notify`. */
function deploy(store: Store, wf: string, now: number, group: string, extra: Spec = {}): Promise<number> {
  return start(store, wf, now, { deploy: { group, ...extra }, notify: { needs: ['deploy'] } });
}

export function jobGroupCases(withStore: Case): void {
  withStore('a job of a group is not claimed while another job of it runs, in any workflow; it is once that one ends', async (store) => {
    await deploy(store, 'api', 1000, 'prod');
    assert.equal((await store.settleJobGroups(1000, LIMIT)).changes.length, 0, 'the first arrival replaces nothing');
    const running = await claimOne(store, 1100, 'deploy');
    await deploy(store, 'web', 1200, 'prod');
    await start(store, 'docs', 1200, { deploy: { group: 'staging' } });
    const settled = await store.settleJobGroups(1200, LIMIT);
    assert.deepEqual([settled.changes, settled.workflows.sort()], [[], ['docs', 'web']]);
    const got = await claim(store, 1300, { max: 5 });
    assert.deepEqual(got.map((c) => c.job.workflow_id), ['docs'], "web's deploy waits: api's runs");
    await complete(store, running.lease.lease_id, {}, 1400);
    const next = await claim(store, 1500, { max: 5 });
    assert.deepEqual(next.map((c) => `${c.job.workflow_id}/${c.job.job_id}`).sort(), ['api/notify', 'web/deploy']);
    assert.equal((await job(store, 'web', 'deploy')).concurrency_group, 'prod');
  });

  withStore('an arrival replaces the waiting job of its group: cancelled with the reason, what is below it skipped, its run settled', async (store) => {
    await deploy(store, 'a', 1000, 'prod');
    await store.settleJobGroups(1000, LIMIT);
    await claimOne(store, 1100, 'deploy');
    await deploy(store, 'b', 1200, 'prod');
    await store.settleJobGroups(1200, LIMIT);
    await deploy(store, 'c', 1300, 'prod');
    const out = await store.settleJobGroups(1400, LIMIT);
    const replaced = await job(store, 'b', 'deploy');
    assert.equal(replaced.status, 'cancelled');
    assert.equal(replaced.error, 'replaced in concurrency group "prod" by job "deploy" of run #1 of "c"');
    assert.equal(replaced.finished_at_ms, 1400);
    assert.equal((await job(store, 'b', 'notify')).status, 'skipped');
    assert.deepEqual(await runStatus(store, 'b'), { status: 'cancelled', finished_at_ms: 1400 });
    assert.deepEqual(out.changes.map((c) => `${c.workflow_id}/${c.job_id}`).sort(), ['b/deploy', 'b/notify']);
    assert.equal((await job(store, 'a', 'deploy')).status, 'running', 'the running job is left alone');
    assert.equal((await job(store, 'c', 'deploy')).status, 'queued');
    assert.deepEqual((await store.settleJobGroups(1500, LIMIT)).groups, 0, 'settled once: nothing is left to settle');
  });

  withStore("cancel_in_progress: the arrival cancels the group's running job, voids its lease, and is claimable at once", async (store) => {
    await deploy(store, 'old', 1000, 'prod');
    await store.settleJobGroups(1000, LIMIT);
    const running = await claimOne(store, 1100, 'deploy');
    await deploy(store, 'new', 1200, 'prod', { cancel_in_progress: true });
    const out = await store.settleJobGroups(1300, LIMIT);
    assert.deepEqual(out.changes.map((c) => `${c.workflow_id}/${c.job_id}`).sort(), ['old/deploy', 'old/notify']);
    const cancelled = await job(store, 'old', 'deploy');
    assert.equal(cancelled.status, 'cancelled');
    assert.match(cancelled.error ?? '', /^cancelled in progress in concurrency group "prod" by job "deploy" of run #1 of "new"$/);
    assert.equal((await store.heartbeat(running.lease.lease_id, 1400)).kind, 'cancelled', 'the worker learns at its next call');
    const next = await claimOne(store, 1500, 'deploy');
    assert.equal(next.job.workflow_id, 'new');
  });

  withStore('without cancel_in_progress the running job is kept; a retry of a group job keeps the group and waits its turn', async (store) => {
    await deploy(store, 'a', 1000, 'prod', { max_retries: 1 });
    await store.settleJobGroups(1000, LIMIT);
    const first = await claimOne(store, 1100, 'deploy');
    await deploy(store, 'b', 1200, 'prod');
    assert.deepEqual((await store.settleJobGroups(1200, LIMIT)).changes, []);
    const failed = await store.fail(first.lease.lease_id, 'boom', true, 1300);
    assert.equal(failed.kind, 'failed');
    assert.equal((await job(store, 'a', 'deploy')).status, 'queued', 'retried');
    assert.deepEqual((await store.settleJobGroups(1300, LIMIT)).changes, [], 'a retry is no arrival: it replaces nothing');
    const got = await claim(store, 1400, { max: 5 });
    assert.equal(got.length, 1, 'one of the two waiting jobs of the group, not both');
  });
}

/**
 * Jobs of one group queued in many workflows, claimed from separate connections at once: exactly one
 * runs; and settlings racing from those connections cancel each replaced job once.
 */
export async function jobGroupRaces(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another()]);
  const stores = [store, ...others];
  try {
    for (let round = 0; round < 5; round++) {
      const group = `deploy-${round}`;
      const wfs = Array.from({ length: 6 }, (_, i) => `r${round}-w${i}`);
      for (const [i, wf] of wfs.entries()) await start(store, wf, 1000 + round * 100 + i, { deploy: { group } });
      const claims = await Promise.all(stores.flatMap((s, i) => [s, s].map((x, k) => claim(x, 2000 + round, { max: 4, worker: `w${i}-${k}` }))));
      const claimed = claims.flat();
      assert.equal(claimed.length, 1, `round ${round}: ${claimed.map((c) => c.job.workflow_id).join(', ')}`);
      const settled = await Promise.all(stores.map((s) => s.settleJobGroups(3000 + round, LIMIT)));
      const cancelled = settled.flatMap((o) => o.changes).map((c) => c.workflow_id);
      assert.equal(cancelled.length, 4, `round ${round}: each waiting job but the newest is cancelled once: ${cancelled.join(', ')}`);
      assert.equal(new Set(cancelled).size, 4);
      const states = await Promise.all(wfs.map(async (wf) => (await job(store, wf, 'deploy')).status));
      assert.deepEqual(states.filter((s) => s === 'running').length, 1);
      assert.deepEqual(states.filter((s) => s === 'queued').length, 1);
    }
  } finally {
    await Promise.all(others.map((s) => s.close()));
  }
}
