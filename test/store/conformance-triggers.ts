/**
 * Conformance: runs started from outside (README "Triggers and notifications"): the listener index kept
 * in step with each saved definition, a run's event kept beside it, a delivery key that starts one run
 * however often (and however many stores at once) it is sent, and all of it gone with its run or workflow.
 */
import assert from 'node:assert/strict';
import type { WorkflowTriggers } from '../../src/domain/model.js';
import type { StartRunOutcome, StartRunRequest, Store } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { buildJobs, claimOne, complete, HASH, labelSetsOf, read, wfRecord } from './fixtures.js';

function listening(id: string, triggers: WorkflowTriggers, over: { hash?: string; max_runs?: number; queue?: boolean } = {}) {
  const rec = wfRecord(id, 1000, { hash: over.hash ?? HASH });
  rec.definition = {
    ...rec.definition,
    triggers,
    ...(over.max_runs || over.queue ? { concurrency: { max_runs: over.max_runs ?? 1, when_full: over.queue ? 'queue' : 'reject' } } : {}),
  };
  return rec;
}

function startReq(wf: string, now: number, over: Partial<StartRunRequest> = {}): StartRunRequest {
  const jobs = buildJobs(wf, now, { a: {} });
  return { workflow_id: wf, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now, ...over };
}

const event = (payload: unknown, name = 'push') => ({ name, payload: JSON.stringify(payload) });
const listeners = (store: Store, kind: 'event' | 'workflow_run', key: string) => read(store, (r) => r.listeners(kind, key));

/** Works run `run` of `wf` (one job `a`) to success. */
async function finish(store: Store, wf: string, now: number): Promise<void> {
  const c = await claimOne(store, now, 'a');
  assert.equal(c.job.workflow_id, wf);
  await complete(store, c.lease.lease_id, {}, now);
}

export function triggerCases(withStore: Case): void {
  withStore('the listener index follows each created, saved and deleted definition', async (store) => {
    assert.equal(await store.createWorkflow(listening('deploy-a', { events: ['deployed', 'released'] })), 'created');
    assert.equal(await store.createWorkflow(listening('deploy-b', { events: ['deployed'], workflow_run: { workflows: ['build'], types: ['success'] } })), 'created');
    assert.equal(await store.createWorkflow(wfRecord('plain')), 'created');
    // A create that finds the id taken changes nothing, the index included.
    assert.equal(await store.createWorkflow(listening('deploy-a', { events: ['other'] })), 'exists');
    assert.deepEqual(await listeners(store, 'event', 'deployed'), ['deploy-a', 'deploy-b']);
    assert.deepEqual(await listeners(store, 'event', 'released'), ['deploy-a']);
    assert.deepEqual(await listeners(store, 'event', 'other'), []);
    assert.deepEqual(await listeners(store, 'workflow_run', 'build'), ['deploy-b']);
    assert.deepEqual(await listeners(store, 'event', 'build'), [], 'kinds are apart');

    // A save that changes the definition replaces its rows; one that keeps it (same hash) keeps them.
    assert.equal(await store.saveWorkflow(listening('deploy-a', { events: ['released', 'rolled-back'] }, { hash: 'h2' })), 'updated');
    assert.deepEqual(await listeners(store, 'event', 'deployed'), ['deploy-b']);
    assert.deepEqual(await listeners(store, 'event', 'rolled-back'), ['deploy-a']);
    assert.deepEqual(await listeners(store, 'event', 'released'), ['deploy-a']);
    assert.equal(await store.saveWorkflow(listening('deploy-a', { events: ['released', 'rolled-back'] }, { hash: 'h2' })), 'unchanged');
    assert.equal(await store.saveWorkflow(wfRecord('deploy-b', 1000, { hash: 'h3' })), 'updated');
    assert.deepEqual(await listeners(store, 'workflow_run', 'build'), [], 'a definition without triggers has no rows');
    assert.equal(await store.saveWorkflow(listening('new-one', { workflow_run: { workflows: ['build', 'lint'], types: ['completed'] } })), 'created');
    assert.deepEqual(await listeners(store, 'workflow_run', 'lint'), ['new-one']);

    // Deleting a workflow takes its rows with it, runs or not.
    const started = await store.startRun(startReq('new-one', 2000));
    assert.equal(started.kind, 'started');
    await finish(store, 'new-one', 2100);
    assert.equal(await store.deleteWorkflow('new-one', { max_runs: 100, max_log_chunks: 1000 }), 'deleted');
    assert.deepEqual(await listeners(store, 'workflow_run', 'build'), []);
    assert.equal(await store.deleteWorkflow('deploy-a', { max_runs: 100, max_log_chunks: 1000 }), 'deleted');
    assert.deepEqual(await listeners(store, 'event', 'rolled-back'), []);
  });

  withStore("a run keeps its event's name and payload; a run without one has neither", async (store) => {
    await store.createWorkflow(listening('hook', { webhook: { secret: 'GH' } }, { max_runs: 2 }));
    const payload = { ref: 'refs/heads/main', text: 'x'.repeat(200_000), nested: { a: [1, 2, { b: null }] } };
    const one = await store.startRun(startReq('hook', 1000, { trigger: 'webhook', event: event(payload) }));
    assert.equal(one.kind, 'started');
    assert.equal(one.kind === 'started' && one.run.event_name, 'push');
    const two = await store.startRun(startReq('hook', 1100, { trigger: 'manual' }));
    assert.equal(two.kind === 'started' && two.run.event_name, null);
    const [run1, run2] = await read(store, (r) => Promise.all([r.getRun('hook', 1), r.getRun('hook', 2)]));
    assert.deepEqual([run1?.event_name, run1?.trigger, run2?.event_name], ['push', 'webhook', null]);
    assert.deepEqual(JSON.parse((await read(store, (r) => r.getRunEvent('hook', 1)))!), payload);
    assert.equal(await read(store, (r) => r.getRunEvent('hook', 2)), null);
    assert.equal(await read(store, (r) => r.getRunEvent('hook', 9)), null);
    const listed = await read(store, (r) => r.listRuns('hook', 10, 0));
    assert.deepEqual(listed.map((r) => [r.run_number, r.event_name]), [[2, null], [1, 'push']]);
  });

  withStore('a delivery key starts one run: a repeat answers that run and changes nothing; a refused start records no key', async (store) => {
    await store.createWorkflow(listening('hook', { webhook: { secret: 'GH' } }));
    const first = await store.startRun(startReq('hook', 1000, { trigger: 'webhook', event: event({ n: 1 }), delivery_key: 'webhook/d-1' }));
    assert.equal(first.kind, 'started');
    const again = await store.startRun(startReq('hook', 1100, { trigger: 'webhook', event: event({ n: 2 }), delivery_key: 'webhook/d-1' }));
    assert.equal(again.kind, 'duplicate');
    assert.deepEqual(again.kind === 'duplicate' && [again.run.run_number, again.run.status, again.run.event_name], [1, 'running', 'push']);
    assert.equal((await read(store, (r) => r.getWorkflow('hook')))?.latest_run, 1, 'no run was made');
    assert.deepEqual(JSON.parse((await read(store, (r) => r.getRunEvent('hook', 1)))!), { n: 1 }, 'the first delivery is what the run keeps');
    // A repeat is found even when the definition changed since (a stale hash is not asked about).
    const stale = await store.startRun(startReq('hook', 1150, { expected_hash: 'other', delivery_key: 'webhook/d-1' }));
    assert.equal(stale.kind, 'duplicate');

    // The one-active-run rule refuses another delivery: no key recorded, so its redelivery starts once the run ended.
    const refused = await store.startRun(startReq('hook', 1200, { trigger: 'webhook', event: event({ n: 3 }), delivery_key: 'webhook/d-2' }));
    assert.equal(refused.kind, 'active');
    await finish(store, 'hook', 1300);
    const redelivered = await store.startRun(startReq('hook', 1400, { trigger: 'webhook', event: event({ n: 3 }), delivery_key: 'webhook/d-2' }));
    assert.deepEqual(redelivered.kind === 'started' && redelivered.run.run_number, 2);

    // Keys are per workflow: the same key for another workflow starts its own run.
    await store.createWorkflow(listening('other', { events: ['deployed'] }));
    const elsewhere = await store.startRun(startReq('other', 1500, { trigger: 'event', event: event({}, 'deployed'), delivery_key: 'webhook/d-1' }));
    assert.equal(elsewhere.kind, 'started');
  });

  withStore('a queued run records its key and event as a started one does', async (store) => {
    await store.createWorkflow(listening('q', { events: ['deployed'] }, { queue: true }));
    assert.equal((await store.startRun(startReq('q', 1000, { trigger: 'event', event: event({ v: 1 }, 'deployed'), delivery_key: 'event/deployed/a' }))).kind, 'started');
    const queued = await store.startRun(startReq('q', 1100, { trigger: 'event', event: event({ v: 2 }, 'deployed'), delivery_key: 'event/deployed/b' }));
    assert.equal(queued.kind, 'queued');
    const repeat = await store.startRun(startReq('q', 1200, { trigger: 'event', event: event({ v: 2 }, 'deployed'), delivery_key: 'event/deployed/b' }));
    assert.deepEqual(repeat.kind === 'duplicate' && [repeat.run.run_number, repeat.run.status], [2, 'queued']);
    assert.deepEqual(JSON.parse((await read(store, (r) => r.getRunEvent('q', 2)))!), { v: 2 });
    assert.equal((await read(store, (r) => r.getRun('q', 2)))?.event_name, 'deployed');
  });

  withStore('retention deletes a run with its event and its delivery key', async (store) => {
    await store.createWorkflow(listening('hook', { webhook: { secret: 'GH' } }));
    for (let i = 1; i <= 3; i++) {
      const out = await store.startRun(startReq('hook', 1000 * i, { trigger: 'webhook', event: event({ i }), delivery_key: `webhook/d-${i}` }));
      assert.equal(out.kind, 'started');
      await finish(store, 'hook', 1000 * i + 10);
    }
    const pruned = await store.pruneRuns({ retain_runs: 1, finished_before_ms: null, max_runs: 100, max_log_chunks: 1000, dry_run: false });
    assert.deepEqual(pruned.runs.map((r) => r.run_number), [1, 2]);
    assert.equal(await read(store, (r) => r.getRunEvent('hook', 1)), null);
    assert.deepEqual(JSON.parse((await read(store, (r) => r.getRunEvent('hook', 3)))!), { i: 3 });
    // The key of a deleted run went with it (README "Webhooks": a delivery is remembered as long as its run).
    const again = await store.startRun(startReq('hook', 5000, { trigger: 'webhook', event: event({ i: 1 }), delivery_key: 'webhook/d-1' }));
    assert.deepEqual(again.kind === 'started' && again.run.run_number, 4);
    const repeat3 = await store.startRun(startReq('hook', 5100, { delivery_key: 'webhook/d-3' }));
    assert.equal(repeat3.kind, 'duplicate');
  });
}

/**
 * Twelve starts of one delivery key through three stores at once (three connections, or three
 * pools), round after round: exactly one starts a run, every other answers that very run.
 */
export async function deliveryRace(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another()]);
  const stores = [store, ...others];
  try {
    await store.createWorkflow(listening('hook', { webhook: { secret: 'GH' } }, { max_runs: 100 }));
    for (let round = 0; round < 10; round++) {
      const key = `webhook/race-${round}`;
      const outcomes: StartRunOutcome[] = await Promise.all(
        Array.from({ length: 12 }, (_, i) => stores[i % stores.length]!.startRun(startReq('hook', 1000 + round, { trigger: 'webhook', event: event({ round, i }), delivery_key: key }))),
      );
      const started = outcomes.filter((o) => o.kind === 'started');
      assert.equal(started.length, 1, `round ${round}: ${JSON.stringify(outcomes.map((o) => o.kind))}`);
      const number = started[0]!.kind === 'started' ? started[0]!.run.run_number : 0;
      assert.ok(outcomes.every((o) => o.kind === 'started' || (o.kind === 'duplicate' && o.run.run_number === number)), JSON.stringify(outcomes));
      assert.equal((await read(store, (r) => r.getWorkflow('hook')))?.latest_run, round + 1, 'one run a round');
    }
  } finally {
    await Promise.all(others.map((s) => s.close()));
  }
}
