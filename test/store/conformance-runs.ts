/** Conformance: workflows, starting runs and cancelling them. */
import assert from 'node:assert/strict';
import { labelKey } from '../../src/domain/labels.js';
import type { Case } from './conformance.js';
import {
  HASH,
  buildJobs,
  change,
  claim,
  claimOne,
  complete,
  job,
  labelSetsOf,
  lease,
  read,
  runStatus,
  sortedChanges,
  start,
  wfRecord,
} from './fixtures.js';

export function runCases(withStore: Case): void {
  withStore('a run records what started it and keeps the definition it used, through edits of its workflow, until the workflow is deleted', async (store) => {
    const v1 = wfRecord('w', 1000);
    await store.createWorkflow({ ...v1, definition: { ...v1.definition, env: { V: '1' } } });
    const jobs = buildJobs('w', 1000, { a: {} });
    const one = await store.startRun({ workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 1000, trigger: 'manual' });
    assert.deepEqual(one.kind === 'started' && [one.run.trigger, one.run.definition_hash], ['manual', HASH]);
    const a = await claimOne(store, 1100, 'a');
    await complete(store, a.lease.lease_id, {}, 1200);
    // The workflow is edited: run 2 uses the new definition, run 1 keeps the old one.
    assert.equal(await store.saveWorkflow(wfRecord('w', 1300, { hash: 'h2', definition: { ...v1.definition, env: { V: '2' } } })), 'updated');
    const again = buildJobs('w', 1400, { a: {} });
    const two = await store.startRun({ workflow_id: 'w', expected_hash: 'h2', jobs: again, label_sets: labelSetsOf(again), now_ms: 1400, trigger: 'schedule' });
    assert.deepEqual(two.kind === 'started' && [two.run.trigger, two.run.definition_hash], ['schedule', 'h2']);
    const runs = await read(store, (r) => r.listRuns('w', 10, 0));
    assert.deepEqual(runs.map((r) => [r.run_number, r.trigger, r.definition_hash]), [[2, 'schedule', 'h2'], [1, 'manual', HASH]]);
    assert.deepEqual((await read(store, (r) => r.getRunDefinition('w', HASH)))?.env, { V: '1' });
    assert.deepEqual((await read(store, (r) => r.getRunDefinition('w', 'h2')))?.env, { V: '2' });
    assert.equal(await read(store, (r) => r.getRunDefinition('w', 'nope')), null);
    assert.equal(await read(store, (r) => r.getRunDefinition('other', HASH)), null);
    await store.cancelRun('w', 1500);
    assert.equal(await store.deleteWorkflow('w', { max_runs: 10, max_log_chunks: 1000 }), 'deleted');
    assert.equal(await read(store, (r) => r.getRunDefinition('w', HASH)), null, 'deleted with the workflow');
  });

  withStore('createWorkflow creates once; a taken id answers exists and changes nothing', async (store) => {
    assert.equal(await store.createWorkflow(wfRecord('a', 1000)), 'created');
    assert.equal(await store.createWorkflow(wfRecord('a', 2000, { name: 'Other', hash: 'h2', source: 'file' })), 'exists');
    assert.deepEqual(await read(store, (r) => r.getWorkflow('a')), wfRecord('a', 1000));
    assert.equal(await read(store, (r) => r.getWorkflow('zz')), null);
  });

  withStore('saveWorkflow: created, unchanged for the same hash and source, updated in place otherwise', async (store) => {
    assert.equal(await store.saveWorkflow(wfRecord('a', 1000)), 'created');
    assert.deepEqual(await read(store, (r) => r.getWorkflow('a')), wfRecord('a', 1000));
    await start(store, 'a', 1500, { j: {} });

    assert.equal(await store.saveWorkflow(wfRecord('a', 2000, { name: 'Ignored' })), 'unchanged');
    assert.deepEqual(await read(store, (r) => r.getWorkflow('a')), wfRecord('a', 1000, { latest_run: 1 }));

    const renamed = wfRecord('a', 9999, { name: 'Renamed', hash: 'h2', updated_at_ms: 3000 });
    assert.equal(await store.saveWorkflow(renamed), 'updated');
    // created_at_ms is taken only on creation; the run history and latest_run stay.
    assert.deepEqual(await read(store, (r) => r.getWorkflow('a')), { ...renamed, created_at_ms: 1000, latest_run: 1 });
    assert.equal((await runStatus(store, 'a')).status, 'running');

    const moved = wfRecord('a', 1000, { name: 'Renamed', hash: 'h2', source: 'file', updated_at_ms: 4000 });
    assert.equal(await store.saveWorkflow(moved), 'updated', 'a different source alone is an update');
    assert.deepEqual(await read(store, (r) => r.getWorkflow('a')), { ...moved, latest_run: 1 });
  });

  withStore('listWorkflows pages by id and filters by a job state of the latest run (idle counts as pending)', async (store) => {
    for (const id of ['c', 'a', 'b']) await store.createWorkflow(wfRecord(id));
    await start(store, 'ran', 1000, { x: {}, y: { needs: ['x'] } });
    const ids = async (q: { limit: number; offset: number; jobStatus?: 'pending' | 'queued' | 'failed' }) =>
      (await read(store, (r) => r.listWorkflows(q))).map((w) => w.id);
    assert.deepEqual(await ids({ limit: 2, offset: 1 }), ['b', 'c']);
    assert.deepEqual(await ids({ limit: 10, offset: 0, jobStatus: 'queued' }), ['ran']);
    assert.deepEqual(await ids({ limit: 10, offset: 0, jobStatus: 'pending' }), ['a', 'b', 'c', 'ran']);
    assert.deepEqual(await ids({ limit: 10, offset: 0, jobStatus: 'failed' }), []);
    // Search: id or name containing the text, case ignored, with the state filter and paging.
    await store.saveWorkflow(wfRecord('zeta', 1000, { name: 'Nightly Build' }));
    const found = async (search: string, extra: { jobStatus?: 'queued' | 'pending'; offset?: number } = {}) =>
      (await read(store, (r) => r.listWorkflows({ limit: 10, offset: extra.offset ?? 0, search, jobStatus: extra.jobStatus }))).map((w) => w.id);
    assert.deepEqual(await found('ZET'), ['zeta']);
    assert.deepEqual(await found('nightly'), ['zeta'], 'by name');
    assert.deepEqual(await found('a'), ['a', 'ran', 'zeta']);
    assert.deepEqual(await found('a', { offset: 1 }), ['ran', 'zeta']);
    assert.deepEqual(await found('a', { jobStatus: 'queued' }), ['ran']);
    assert.deepEqual(await found('%'), [], 'no wildcard meaning');
  });

  withStore('listRuns pages a workflow\'s runs newest first; jobCountsOfRuns counts each run\'s jobs by state', async (store) => {
    await start(store, 'h', 1000, { x: {}, y: { needs: ['x'] } });
    const first = await claimOne(store, 1100, 'x');
    await complete(store, first.lease.lease_id, {}, 1200);
    await complete(store, (await claimOne(store, 1300, 'y')).lease.lease_id, {}, 1400);
    await store.startRun({ workflow_id: 'h', expected_hash: HASH, jobs: buildJobs('h', 2000, { x: {}, y: { needs: ['x'] } }), label_sets: [], now_ms: 2000 });
    await start(store, 'other', 3000, { z: {} });
    const runs = await read(store, (r) => r.listRuns('h', 10, 0));
    assert.deepEqual(
      runs.map((r) => [r.run_number, r.status, r.created_at_ms]),
      [
        [2, 'running', 2000],
        [1, 'success', 1000],
      ],
    );
    assert.deepEqual(
      (await read(store, (r) => r.listRuns('h', 1, 1))).map((r) => r.run_number),
      [1],
    );
    assert.deepEqual(await read(store, (r) => r.listRuns('none', 10, 0)), []);
    const counts = await read(store, (r) => r.jobCountsOfRuns([...runs, { workflow_id: 'other', run_number: 1 }, { workflow_id: 'h', run_number: 9 }]));
    const key = (c: { workflow_id: string; run_number: number; status: string; count: number }) => `${c.workflow_id}/${c.run_number}/${c.status}=${c.count}`;
    assert.deepEqual(counts.map(key).sort(), ['h/1/success=2', 'h/2/pending=1', 'h/2/queued=1', 'other/1/queued=1']);
    assert.deepEqual(await read(store, (r) => r.jobCountsOfRuns([])), []);
  });

  withStore('startRun refuses an unknown workflow and a stale hash, changing nothing', async (store) => {
    const jobs = buildJobs('w', 1000, { a: {} });
    const req = { workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 1000 };
    assert.deepEqual(await store.startRun(req), { kind: 'not_found' });
    await store.createWorkflow(wfRecord('w'));
    assert.deepEqual(await store.startRun({ ...req, expected_hash: 'other' }), { kind: 'stale' });
    assert.equal((await read(store, (r) => r.getWorkflow('w')))?.latest_run, 0);
    assert.equal(await read(store, (r) => r.getRun('w', 1)), null);
    assert.deepEqual(await read(store, (r) => r.getRunJobs('w', 1)), []);
  });

  withStore('startRun: run 1 with roots queued and the rest pending, in the given row order, label sets recorded', async (store) => {
    await store.createWorkflow(wfRecord('w'));
    const jobs = buildJobs('w', 5000, {
      build: {},
      lint: { labels: ['linux'] },
      test: { needs: ['build'], labels: ['gpu', 'linux'] },
      deploy: { needs: ['test', 'lint'], max_retries: 2, backoff: { kind: 'fixed', delay_secs: 3 }, timeout_secs: 60 },
    });
    const out = await store.startRun({ workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 5000 });
    assert.deepEqual(out, {
      kind: 'started',
      run: { workflow_id: 'w', run_number: 1, status: 'running', created_at_ms: 5000, finished_at_ms: null, inputs: {}, rerun_of: null, concurrency_group: null, trigger: null, definition_hash: HASH },
      changes: ['build', 'lint', 'test', 'deploy'].map((id) => change('w', id)),
    });
    const rows = await read(store, (r) => r.getRunJobs('w', 1));
    assert.deepEqual(rows.map((j) => j.job_id), ['build', 'lint', 'test', 'deploy']);
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i]!.row_id > rows[i - 1]!.row_id, 'row_id follows the given order');
    assert.deepEqual(
      rows.map(({ row_id: _row, ...rest }) => rest),
      jobs.map((j) => ({ ...j, run_number: 1 })),
    );
    assert.deepEqual(rows.map((j) => [j.status, j.pending_needs]), [['queued', 0], ['queued', 0], ['pending', 1], ['pending', 2]]);
    assert.equal((await read(store, (r) => r.getWorkflow('w')))?.latest_run, 1);

    const sets = await read(store, (r) => r.labelSetsSince(0));
    assert.deepEqual(
      sets.map((s) => ({ key: s.key, labels: s.labels })).sort((a, b) => a.key.localeCompare(b.key)),
      [
        { key: '', labels: [] },
        { key: labelKey(['gpu', 'linux']), labels: ['gpu', 'linux'] },
        { key: labelKey(['linux']), labels: ['linux'] },
      ],
    );
    const last = Math.max(...sets.map((s) => s.seq));
    // A second workflow brings one known set and one new one: only the new one is added after `last`.
    await start(store, 'v', 6000, { p: { labels: ['linux'] }, q: { labels: ['arm'] } });
    const added = await read(store, (r) => r.labelSetsSince(last));
    assert.deepEqual(added.map((s) => ({ key: s.key, labels: s.labels })), [{ key: labelKey(['arm']), labels: ['arm'] }]);
    assert.ok(added[0]!.seq > last, 'seq grows');
    assert.equal((await read(store, (r) => r.labelSetsSince(0))).length, 4);
  });

  withStore('startRun answers active while the latest run runs; numbers go 1, 2, 3', async (store) => {
    assert.equal(await start(store, 'w', 1000, { a: {} }), 1);
    const jobs = buildJobs('w', 1100, { a: {} });
    const again = { workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 1100 };
    assert.deepEqual(await store.startRun(again), { kind: 'active', run_number: 1, run_numbers: [1] });
    const c = await claimOne(store, 1200, 'a');
    await complete(store, c.lease.lease_id, {}, 1300);
    assert.deepEqual(await runStatus(store, 'w', 1), { status: 'success', finished_at_ms: 1300 });
    assert.equal(await start(store, 'w', 1400, { a: {} }), 2);
    assert.equal((await store.cancelRun('w', 1500)).kind, 'cancelled');
    assert.equal(await start(store, 'w', 1600, { a: {} }), 3);
    assert.deepEqual(
      (await read(store, (r) => r.getRuns([1, 2, 3].map((n) => ({ workflow_id: 'w', run_number: n })))))
        .map((r) => [r.run_number, r.status])
        .sort(),
      [[1, 'success'], [2, 'cancelled'], [3, 'running']],
    );
    assert.equal((await read(store, (r) => r.getWorkflow('w')))?.latest_run, 3);
    assert.deepEqual((await read(store, (r) => r.getRunJobs('w', 3))).map((j) => [j.job_id, j.status]), [['a', 'queued']]);
  });

  withStore('cancelRun: unknown workflow not_found, never run or already over idle', async (store) => {
    assert.deepEqual(await store.cancelRun('nope', 1000), { kind: 'not_found' });
    await store.createWorkflow(wfRecord('w'));
    assert.deepEqual(await store.cancelRun('w', 1000), { kind: 'idle' });
    await start(store, 'w', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a');
    await complete(store, c.lease.lease_id, {}, 1100);
    assert.deepEqual(await store.cancelRun('w', 1200), { kind: 'idle' });
    assert.equal((await runStatus(store, 'w')).status, 'success');
  });

  withStore('cancelRun cancels pending, queued and running jobs and their leases; late lease calls change nothing', async (store) => {
    await start(store, 'w', 1000, {
      run: { timeout_secs: 60 },
      done: {},
      waiting: {},
      below: { needs: ['run'] },
    });
    const [running, finished] = await claim(store, 2000, { max: 2 });
    assert.deepEqual([running?.job.job_id, finished?.job.job_id], ['run', 'done']);
    await complete(store, finished!.lease.lease_id, { o: '1' }, 2500);
    assert.equal((await job(store, 'w', 'run')).deadline_ms, 62_000);

    const out = await store.cancelRun('w', 3000);
    assert.equal(out.kind, 'cancelled');
    if (out.kind !== 'cancelled') return;
    assert.equal(out.run_number, 1);
    assert.deepEqual(out.jobs, ['run', 'waiting', 'below'], 'the cancelled jobs in row order');
    assert.deepEqual(sortedChanges(out.changes), sortedChanges(out.jobs.map((id) => change('w', id))));
    for (const id of ['run', 'waiting', 'below']) {
      const j = await job(store, 'w', id);
      assert.deepEqual([j.status, j.finished_at_ms, j.deadline_ms], ['cancelled', 3000, null], id);
    }
    assert.equal((await job(store, 'w', 'done')).status, 'success');
    assert.deepEqual(await runStatus(store, 'w'), { status: 'cancelled', finished_at_ms: 3000 });
    const leaseId = running!.lease.lease_id;
    assert.equal((await lease(store, leaseId)).state, 'cancelled');
    assert.equal((await lease(store, finished!.lease.lease_id)).state, 'completed');
    assert.deepEqual(await read(store, (r) => r.activeLeases()), []);
    assert.deepEqual(await store.cancelRun('w', 3100), { kind: 'idle' });

    const hb = await store.heartbeat(leaseId, 3200);
    assert.equal(hb.kind, 'cancelled');
    assert.equal(hb.kind === 'cancelled' && hb.lease.lease_id, leaseId);
    const before = await job(store, 'w', 'run');
    const done = await store.complete(leaseId, { late: 'yes' }, 3300);
    assert.deepEqual(done, { kind: 'cancelled', job: before });
    const failed = await store.fail(leaseId, 'boom', true, 3400);
    assert.deepEqual(failed, { kind: 'cancelled', job: before });
    assert.deepEqual(await job(store, 'w', 'run'), before, 'a late complete or fail changes nothing');
    assert.equal((await lease(store, leaseId)).state, 'cancelled');

    const logs = await store.pushLogs(leaseId, [{ sequence: 0, data: 'last words' }], 3500);
    assert.equal(logs.kind, 'stored');
    assert.equal(logs.kind === 'stored' && logs.accepted, 1);
    const chunks = await read(store, (r) => r.getLogChunks({ workflow_id: 'w', run_number: 1, job_id: 'run', attempt: 0 }));
    assert.deepEqual(chunks.map((c) => c.data), ['last words']);
    assert.deepEqual(await store.timeOutJobs(1_000_000, 10), { changes: [], ended: [], ran: [] }, 'a cancelled job has no deadline left');
    assert.deepEqual(await store.expireLeases(1_000_000, 10), { changes: [], ended: [], ran: [] }, 'a cancelled lease is not active');
    assert.deepEqual(await runStatus(store, 'w'), { status: 'cancelled', finished_at_ms: 3000 });
  });

  withStore('startRun keeps a run\'s inputs; a re-run starts with kept jobs succeeded, and its other jobs wait only for what runs again', async (store) => {
    await store.createWorkflow(wfRecord('w'));
    const specs = { a: {}, b: {}, c: { needs: ['a', 'b'] }, d: { needs: ['c'] } };
    const first = buildJobs('w', 1000, specs);
    const one = await store.startRun({ workflow_id: 'w', expected_hash: HASH, jobs: first, label_sets: labelSetsOf(first), now_ms: 1000, inputs: { x: '1' } });
    assert.equal(one.kind, 'started');
    assert.deepEqual(await read(store, (r) => r.getRun('w', 1)), {
      workflow_id: 'w', run_number: 1, status: 'running', created_at_ms: 1000, finished_at_ms: null, inputs: { x: '1' }, rerun_of: null, concurrency_group: null,
      trigger: null, definition_hash: HASH,
    });
    const a = await claimOne(store, 1100, 'a');
    await complete(store, a.lease.lease_id, { k: 'v' }, 1200);
    const b = await claimOne(store, 1300, 'b');
    assert.equal((await store.fail(b.lease.lease_id, 'boom', false, 1400)).kind, 'failed');
    assert.deepEqual(await runStatus(store, 'w', 1), { status: 'failed', finished_at_ms: 1400 });
    const aDone = await job(store, 'w', 'a', 1);

    // Run 2 as the engine plans a re-run of what failed: a kept, b queued with nothing to wait for,
    // c waiting for b alone (a's outputs already with it), d waiting for c.
    const again = buildJobs('w', 2000, specs).map((j) => {
      if (j.job_id === 'a') {
        const { row_id: _r, run_number: _n, ...kept } = aDone;
        return kept;
      }
      if (j.job_id === 'c') return { ...j, pending_needs: 1, upstream_outputs: { a: { k: 'v' } } };
      return j;
    });
    const two = await store.startRun({
      workflow_id: 'w', expected_hash: HASH, jobs: again, label_sets: labelSetsOf(again), now_ms: 2000, inputs: { x: '1' }, rerun_of: 1, trigger: 'rerun',
    });
    assert.equal(two.kind, 'started');
    const run2 = await read(store, (r) => r.getRun('w', 2));
    assert.deepEqual(run2, {
      workflow_id: 'w', run_number: 2, status: 'running', created_at_ms: 2000, finished_at_ms: null, inputs: { x: '1' }, rerun_of: 1, concurrency_group: null,
      trigger: 'rerun', definition_hash: HASH,
    });
    assert.deepEqual((await read(store, (r) => r.listRuns('w', 10, 0))).map((r) => [r.run_number, r.rerun_of, r.inputs]), [[2, 1, { x: '1' }], [1, null, { x: '1' }]]);
    const kept = await job(store, 'w', 'a', 2);
    assert.deepEqual([kept.status, kept.outputs, kept.started_at_ms, kept.finished_at_ms], ['success', { k: 'v' }, 1100, 1200]);

    // Only b is claimable; completing it queues c with both upstream outputs, in needs order.
    const claimed = await claim(store, 2100, { max: 10 });
    assert.deepEqual(claimed.map((c) => c.job.job_id), ['b']);
    const done = await complete(store, claimed[0]!.lease.lease_id, { m: 'n' }, 2200);
    assert.deepEqual(done.enqueued, ['c']);
    const c = await claimOne(store, 2300, 'c');
    assert.deepEqual(c.job.upstream_outputs, { a: { k: 'v' }, b: { m: 'n' } });
    assert.deepEqual(Object.keys(c.job.upstream_outputs), ['a', 'b']);
    await complete(store, c.lease.lease_id, {}, 2400);
    assert.deepEqual(await runStatus(store, 'w', 2), { status: 'running', finished_at_ms: null }, 'd is still to run');
    const d = await claimOne(store, 2500, 'd');
    await complete(store, d.lease.lease_id, {}, 2600);
    assert.deepEqual(await runStatus(store, 'w', 2), { status: 'success', finished_at_ms: 2600 });
  });

  withStore('a re-run whose jobs are cancelled ends cancelled, its kept jobs still succeeded', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: {} });
    const a = await claimOne(store, 1100, 'a');
    await complete(store, a.lease.lease_id, { k: 'v' }, 1200);
    assert.equal((await store.cancelRun('w', 1300)).kind, 'cancelled');
    const { row_id: _r, run_number: _n, ...kept } = await job(store, 'w', 'a', 1);
    const jobs = [kept, ...buildJobs('w', 2000, { a: {}, b: {} }).filter((j) => j.job_id === 'b')];
    assert.equal((await store.startRun({ workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 2000, rerun_of: 1 })).kind, 'started');
    const out = await store.cancelRun('w', 2100);
    assert.deepEqual(out.kind === 'cancelled' ? out.jobs : out, ['b']);
    assert.deepEqual(await runStatus(store, 'w', 2), { status: 'cancelled', finished_at_ms: 2100 });
    assert.deepEqual((await read(store, (r) => r.getRunJobs('w', 2))).map((j) => [j.job_id, j.status]), [['a', 'success'], ['b', 'cancelled']]);
  });
}
