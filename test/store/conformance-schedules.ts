/**
 * Conformance: schedules (docs/architecture.md "Schedules"). next_fire_at_ms as saves keep or replace
 * it, the due list, and fireSchedule, alone and raced by several stores on one database.
 */
import assert from 'node:assert/strict';
import type { Schedule } from '../../src/domain/model.js';
import type { FireScheduleRequest, Store } from '../../src/store/store.js';
import type { Case, ConformanceOptions } from './conformance.js';
import { buildJobs, HASH, labelSetsOf, read, wfRecord } from './fixtures.js';

const DAILY: Schedule[] = [{ cron: '0 2 * * *', timezone: null, catch_up: 'latest' }];
const HOURLY: Schedule[] = [{ cron: '0 * * * *', timezone: null, catch_up: 'latest' }];

function scheduled(id: string, now: number, next: number | null, schedules: Schedule[] = DAILY, hash = HASH) {
  return wfRecord(id, now, {
    hash,
    next_fire_at_ms: next,
    definition: { id, name: id.toUpperCase(), trigger: 'push', env: {}, jobs: [], schedules },
  });
}

function fireRequest(id: string, fireAt: number, next: number | null, now: number, start = true): FireScheduleRequest {
  const jobs = buildJobs(id, now, { a: {}, b: { needs: ['a'] } });
  return { workflow_id: id, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now, fire_at_ms: fireAt, next_fire_at_ms: next, start };
}

const nextOf = async (store: Store, id: string) => (await read(store, (r) => r.getWorkflow(id)))?.next_fire_at_ms;

export function scheduleCases(withStore: Case, opts: ConformanceOptions): void {
  withStore('next_fire_at_ms: stored on creation, kept by a save with the same schedules, replaced when they change', async (store) => {
    assert.equal(await store.saveWorkflow(scheduled('s', 1000, 5000)), 'created');
    assert.equal(await nextOf(store, 's'), 5000);
    assert.equal(await nextOf(store, 'plain').catch(() => undefined), undefined);
    await store.createWorkflow(wfRecord('plain'));
    assert.equal(await nextOf(store, 'plain'), null, 'a workflow without schedules has null');
    // The jobs changed (another hash), the schedules did not: a due time still waiting is kept.
    assert.equal(await store.saveWorkflow(scheduled('s', 2000, 9000, DAILY, 'h2')), 'updated');
    assert.equal(await nextOf(store, 's'), 5000);
    assert.equal(await store.saveWorkflow(scheduled('s', 3000, 7000, HOURLY, 'h3')), 'updated');
    assert.equal(await nextOf(store, 's'), 7000);
    assert.equal(await store.saveWorkflow(wfRecord('s', 4000, { hash: 'h4' })), 'updated');
    assert.equal(await nextOf(store, 's'), null, 'schedules removed');
    assert.equal(await store.saveWorkflow(scheduled('s', 5000, 8000, HOURLY, 'h5')), 'updated');
    assert.equal(await nextOf(store, 's'), 8000);
  });

  withStore('dueSchedules lists workflows due at a time, earliest first, up to the limit', async (store) => {
    await store.saveWorkflow(scheduled('c', 1, 3000));
    await store.saveWorkflow(scheduled('a', 1, 2000));
    await store.saveWorkflow(scheduled('b', 1, 9000));
    await store.saveWorkflow(wfRecord('none'));
    const due = async (now: number, limit = 10) => (await read(store, (r) => r.dueSchedules(now, limit))).map((w) => [w.id, w.next_fire_at_ms]);
    assert.deepEqual(await due(1999), []);
    assert.deepEqual(await due(3000), [['a', 2000], ['c', 3000]]);
    assert.deepEqual(await due(10_000, 2), [['a', 2000], ['c', 3000]]);
    assert.deepEqual(await due(10_000), [['a', 2000], ['c', 3000], ['b', 9000]]);
  });

  withStore('fireSchedule starts the run and moves the time on once; a second call with the same time is taken', async (store) => {
    await store.saveWorkflow(scheduled('s', 1000, 5000));
    const out = await store.fireSchedule(fireRequest('s', 5000, 8000, 5100));
    assert.equal(out.kind, 'started');
    assert.equal(out.kind === 'started' && out.run.run_number, 1);
    assert.deepEqual(out.kind === 'started' && out.changes.map((c) => c.job_id), ['a', 'b']);
    assert.equal(await nextOf(store, 's'), 8000);
    assert.equal((await read(store, (r) => r.getWorkflow('s')))!.latest_run, 1);
    assert.deepEqual(await store.fireSchedule(fireRequest('s', 5000, 8000, 5200)), { kind: 'taken' });
    assert.deepEqual((await read(store, (r) => r.getRunJobs('s', 1))).map((j) => [j.job_id, j.status]), [['a', 'queued'], ['b', 'pending']]);
    assert.equal(await read(store, (r) => r.getRun('s', 2)), null);
  });

  withStore('fireSchedule while a run is active skips it and moves the time on; start false only moves it', async (store) => {
    await store.saveWorkflow(scheduled('s', 1000, 5000));
    assert.equal((await store.fireSchedule(fireRequest('s', 5000, 8000, 5000))).kind, 'started');
    assert.deepEqual(await store.fireSchedule(fireRequest('s', 8000, 11_000, 8000)), { kind: 'skipped', run_number: 1 });
    assert.equal(await nextOf(store, 's'), 11_000);
    assert.equal(await read(store, (r) => r.getRun('s', 2)), null);
    assert.equal((await store.cancelRun('s', 9000)).kind, 'cancelled');
    assert.deepEqual(await store.fireSchedule(fireRequest('s', 11_000, null, 11_500, false)), { kind: 'advanced' });
    assert.equal(await nextOf(store, 's'), null);
    assert.equal(await read(store, (r) => r.getRun('s', 2)), null);
    assert.deepEqual(await read(store, (r) => r.dueSchedules(1e15, 10)), []);
  });

  withStore('fireSchedule: stale after the definition changed, not_found for an unknown workflow', async (store) => {
    await store.saveWorkflow(scheduled('s', 1000, 5000));
    await store.saveWorkflow(scheduled('s', 2000, 5000, DAILY, 'h2'));
    assert.deepEqual(await store.fireSchedule(fireRequest('s', 5000, 8000, 5100)), { kind: 'stale' });
    assert.equal(await nextOf(store, 's'), 5000, 'nothing changed');
    assert.equal(await read(store, (r) => r.getRun('s', 1)), null);
    assert.deepEqual(await store.fireSchedule(fireRequest('zz', 5000, 8000, 5100)), { kind: 'not_found' });
  });

  if (opts.concurrency === false) return;
  withStore('several stores fire the same due times at once: each time starts exactly one run', async (store, h) => {
    const others = await Promise.all([h.another(), h.another()]);
    try {
      const ids = Array.from({ length: 20 }, (_, i) => `w${i}`);
      for (const id of ids) await store.saveWorkflow(scheduled(id, 1, 1000));
      for (let round = 1; round <= 5; round++) {
        const fireAt = round * 1000;
        const now = fireAt + 10;
        const racers = [store, ...others];
        const outs = await Promise.all(
          racers.flatMap((s) => ids.flatMap((id) => [s.fireSchedule(fireRequest(id, fireAt, fireAt + 1000, now)), s.fireSchedule(fireRequest(id, fireAt, fireAt + 1000, now))])),
        );
        const started = outs.filter((o) => o.kind === 'started');
        assert.equal(started.length, ids.length, `round ${round}: one run per workflow`);
        assert.deepEqual(new Set(started.map((o) => o.kind === 'started' && `${o.run.workflow_id}#${o.run.run_number}`)).size, ids.length);
        assert.deepEqual([...new Set(outs.filter((o) => o.kind !== 'started').map((o) => o.kind))], ['taken']);
        for (const id of ids) {
          assert.equal(await nextOf(store, id), fireAt + 1000);
          assert.equal((await store.cancelRun(id, now + 1)).kind, 'cancelled');
        }
      }
      for (const id of ids) assert.equal((await read(store, (r) => r.getWorkflow(id)))!.latest_run, 5);
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  }, { timeout: 120_000 });
}
