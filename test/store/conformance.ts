/**
 * One behavioural suite for every Store implementation. Each backend's test file calls
 * `storeConformance` with a factory that returns a fresh, empty store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobRecord, NewJob, Store, WorkflowRecord } from '../../src/store/store.js';
import type { WorkflowDefinition } from '../../src/domain/types.js';
import { labelKey } from '../../src/domain/labels.js';

const def = (id: string): WorkflowDefinition => ({
  id,
  name: id.toUpperCase(),
  trigger: 'push',
  env: {},
  jobs: [
    { id: 'a', name: 'a', command: 'echo a', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null },
  ],
});

const wfRecord = (id: string, now = 1000): WorkflowRecord => ({
  id,
  name: id.toUpperCase(),
  trigger: 'push',
  definition: def(id),
  source: 'api',
  hash: 'h1',
  created_at_ms: now,
  updated_at_ms: now,
  latest_run: 0,
});

function newJob(workflow_id: string, run_number: number, job_id: string, over: Partial<NewJob> = {}): NewJob {
  const labels = over.labels ?? [];
  return {
    workflow_id,
    run_number,
    job_id,
    name: job_id,
    command: `echo ${job_id}`,
    env: { K: 'v' },
    labels,
    label_key: labelKey(labels),
    needs: [],
    dependents: [],
    max_retries: 0,
    backoff: { kind: 'none' },
    timeout_secs: null,
    status: 'queued',
    attempt: 0,
    enqueued_at_ms: 100,
    delayed_until_ms: 0,
    ready_at_ms: 100,
    started_at_ms: null,
    finished_at_ms: null,
    deadline_ms: null,
    error: null,
    outputs: null,
    upstream_outputs: {},
    worker_id: null,
    lease_id: null,
    ...over,
  };
}

async function seedRun(store: Store, wf: string, jobs: NewJob[]): Promise<JobRecord[]> {
  return store.tx(async (ops) => {
    if (!(await ops.getWorkflow(wf))) await ops.insertWorkflow(wfRecord(wf));
    await ops.insertRun({ workflow_id: wf, run_number: 1, status: 'running', created_at_ms: 1, finished_at_ms: null });
    await ops.setLatestRun(wf, 1);
    for (const j of jobs) await ops.ensureLabelSet({ key: j.label_key, labels: j.labels });
    await ops.insertJobs(jobs);
    return ops.getRunJobs(wf, 1);
  });
}

export function storeConformance(name: string, open: () => Promise<Store & { dispose?: () => Promise<void> }>): void {
  describe(`Store conformance: ${name}`, () => {
    const withStore = (title: string, fn: (store: Store) => Promise<void>) =>
      test(title, async () => {
        const store = await open();
        try {
          await fn(store);
        } finally {
          await store.close();
          await store.dispose?.();
        }
      });

    withStore('workflows: insert, get, update in place, list ordered by id with paging', async (store) => {
      await store.tx(async (ops) => {
        for (const id of ['b', 'a', 'c']) await ops.insertWorkflow(wfRecord(id));
      });
      const a = await store.read((ops) => ops.getWorkflow('a'));
      assert.deepEqual(a, wfRecord('a'));
      assert.equal(await store.read((ops) => ops.getWorkflow('zz')), null);
      const changed = { ...def('a'), name: 'Renamed' };
      await store.tx((ops) => ops.updateWorkflowDefinition('a', changed, 'h2', 'file', 2000));
      const a2 = (await store.read((ops) => ops.getWorkflow('a')))!;
      assert.equal(a2.name, 'Renamed');
      assert.equal(a2.hash, 'h2');
      assert.equal(a2.source, 'file');
      assert.equal(a2.updated_at_ms, 2000);
      assert.equal(a2.created_at_ms, 1000);
      const page = await store.read((ops) => ops.listWorkflows({ limit: 2, offset: 1 }));
      assert.deepEqual(page.map((w) => w.id), ['b', 'c']);
    });

    withStore('transactions roll back entirely when the function throws', async (store) => {
      await assert.rejects(
        store.tx(async (ops) => {
          await ops.insertWorkflow(wfRecord('x'));
          throw new Error('stop');
        }),
        /stop/,
      );
      assert.equal(await store.read((ops) => ops.getWorkflow('x')), null);
      // The store is still usable afterwards.
      await store.tx((ops) => ops.insertWorkflow(wfRecord('y')));
      assert.ok(await store.read((ops) => ops.getWorkflow('y')));
    });

    withStore('listWorkflows filters by a job state of the latest run; idle workflows count as pending', async (store) => {
      await seedRun(store, 'ran', [newJob('ran', 1, 'a', { status: 'running' }), newJob('ran', 1, 'b', { status: 'pending' })]);
      await store.tx((ops) => ops.insertWorkflow(wfRecord('idle')));
      const ids = async (s: any) => (await store.read((ops) => ops.listWorkflows({ limit: 10, offset: 0, jobStatus: s }))).map((w) => w.id);
      assert.deepEqual(await ids('running'), ['ran']);
      assert.deepEqual(await ids('pending'), ['idle', 'ran']);
      assert.deepEqual(await ids('failed'), []);
    });

    withStore('jobs: insert, read back every field, patch', async (store) => {
      const [a] = await seedRun(store, 'w', [newJob('w', 1, 'a', { labels: ['x'], needs: [], upstream_outputs: { u: { k: 'v' } } })]);
      assert.ok(a);
      assert.equal(a.job_id, 'a');
      assert.deepEqual(a.labels, ['x']);
      assert.deepEqual(a.env, { K: 'v' });
      assert.deepEqual(a.upstream_outputs, { u: { k: 'v' } });
      assert.deepEqual(a.backoff, { kind: 'none' });
      await store.tx((ops) => ops.updateJob(a.row_id, { status: 'success', outputs: { o: '1' }, finished_at_ms: 5 }));
      const again = (await store.read((ops) => ops.getJob('w', 1, 'a')))!;
      assert.equal(again.status, 'success');
      assert.deepEqual(again.outputs, { o: '1' });
      assert.equal(again.finished_at_ms, 5);
      assert.deepEqual(await store.read((ops) => ops.getJobByRowId(a.row_id)), again);
      assert.equal(await store.read((ops) => ops.getJob('w', 1, 'zz')), null);
    });

    withStore('nextClaimable: label keys, readiness time, oldest first with a stable tie-break', async (store) => {
      const gpu = ['gpu'];
      await seedRun(store, 'w', [
        newJob('w', 1, 'late', { ready_at_ms: 300, enqueued_at_ms: 300 }),
        newJob('w', 1, 'early', { ready_at_ms: 100 }),
        newJob('w', 1, 'tie', { ready_at_ms: 100 }),
        newJob('w', 1, 'gpu', { labels: gpu, label_key: labelKey(gpu), ready_at_ms: 50 }),
        newJob('w', 1, 'delayed', { ready_at_ms: 10_000, delayed_until_ms: 10_000 }),
        newJob('w', 1, 'waiting', { status: 'pending', ready_at_ms: 0 }),
      ]);
      const next = (keys: string[], now: number) => store.tx((ops) => ops.nextClaimable(keys, now));
      assert.equal((await next([''], 1000))?.job_id, 'early');
      assert.equal((await next(['', labelKey(gpu)], 1000))?.job_id, 'gpu');
      assert.equal(await next([labelKey(['other'])], 1000), null);
      assert.equal(await next([''], 99), null, 'nothing is ready before its ready_at_ms');
      const order: string[] = [];
      for (;;) {
        const j = await store.tx(async (ops) => {
          const found = await ops.nextClaimable([''], 20_000);
          if (found) await ops.updateJob(found.row_id, { status: 'running' });
          return found;
        });
        if (!j) break;
        order.push(j.job_id);
      }
      assert.deepEqual(order, ['early', 'tie', 'late', 'delayed']);
    });

    withStore('concurrent claiming transactions never take the same job', async (store) => {
      const jobs = Array.from({ length: 40 }, (_, i) => newJob('w', 1, `j${i}`, { ready_at_ms: i }));
      await seedRun(store, 'w', jobs);
      const taken: string[] = [];
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (;;) {
            const j = await store.tx(async (ops) => {
              const found = await ops.nextClaimable([''], 1_000_000);
              if (found) await ops.updateJob(found.row_id, { status: 'running' });
              return found;
            });
            if (!j) return;
            taken.push(j.job_id);
          }
        }),
      );
      assert.equal(taken.length, 40);
      assert.equal(new Set(taken).size, 40);
    });

    withStore('getJobs reads named jobs of a run; presentStates tells which states occur', async (store) => {
      await seedRun(store, 'w', [
        newJob('w', 1, 'a', { status: 'success', dependents: ['b', 'c'] }),
        newJob('w', 1, 'b', { status: 'pending', needs: ['a'] }),
        newJob('w', 1, 'c', { status: 'running', needs: ['a'] }),
      ]);
      const got = await store.read((ops) => ops.getJobs('w', 1, ['c', 'a', 'missing']));
      assert.deepEqual(got.map((j) => j.job_id), ['a', 'c']);
      assert.deepEqual(got[0]!.dependents, ['b', 'c']);
      assert.deepEqual(await store.read((ops) => ops.getJobs('w', 1, [])), []);
      const states = await store.read((ops) => ops.presentStates('w', 1));
      assert.deepEqual([...states].sort(), ['pending', 'running', 'success']);
      assert.deepEqual([...(await store.read((ops) => ops.presentStates('w', 2)))], []);
    });

    withStore('timedOutJobs finds running jobs past their deadline only', async (store) => {
      await seedRun(store, 'w', [
        newJob('w', 1, 'over', { status: 'running', deadline_ms: 500 }),
        newJob('w', 1, 'within', { status: 'running', deadline_ms: 5000 }),
        newJob('w', 1, 'none', { status: 'running' }),
        newJob('w', 1, 'done', { status: 'success', deadline_ms: 100 }),
      ]);
      const found = await store.read((ops) => ops.timedOutJobs(1000, 10));
      assert.deepEqual(found.map((j) => j.job_id), ['over']);
    });

    withStore('label sets are stored once', async (store) => {
      await store.tx(async (ops) => {
        await ops.ensureLabelSet({ key: labelKey(['a']), labels: ['a'] });
        await ops.ensureLabelSet({ key: labelKey(['a']), labels: ['a'] });
        await ops.ensureLabelSet({ key: '', labels: [] });
      });
      const sets = await store.read((ops) => ops.listLabelSets());
      assert.equal(sets.length, 2);
      assert.deepEqual(sets.find((s) => s.key === labelKey(['a']))?.labels, ['a']);
    });

    withStore('leases: insert, patch, expired and active queries', async (store) => {
      const [a, b] = await seedRun(store, 'w', [newJob('w', 1, 'a'), newJob('w', 1, 'b')]);
      const lease = (id: string, row: number, expires: number) => ({
        lease_id: id,
        job_row_id: row,
        workflow_id: 'w',
        run_number: 1,
        job_id: 'a',
        attempt: 0,
        worker_id: 'wk',
        ttl_secs: 30,
        granted_at_ms: 0,
        renewed_at_ms: 0,
        expires_at_ms: expires,
        state: 'active' as const,
      });
      await store.tx(async (ops) => {
        await ops.insertLease(lease('l1', a!.row_id, 100));
        await ops.insertLease(lease('l2', b!.row_id, 10_000));
      });
      assert.deepEqual(await store.read((ops) => ops.getLease('l1')), lease('l1', a!.row_id, 100));
      assert.deepEqual((await store.read((ops) => ops.expiredLeases(500, 10))).map((l) => l.lease_id), ['l1']);
      await store.tx((ops) => ops.updateLease('l1', { state: 'expired' }));
      assert.deepEqual(await store.read((ops) => ops.expiredLeases(500, 10)), []);
      assert.deepEqual((await store.read((ops) => ops.activeLeases())).map((l) => l.lease_id), ['l2']);
      await store.tx((ops) => ops.updateLease('l2', { renewed_at_ms: 50, expires_at_ms: 99_999 }));
      const l2 = (await store.read((ops) => ops.getLease('l2')))!;
      assert.equal(l2.expires_at_ms, 99_999);
      assert.equal(l2.renewed_at_ms, 50);
      assert.equal(await store.read((ops) => ops.getLease('nope')), null);
    });

    withStore('log chunks: duplicates stored once, read in sequence order, after a sequence, per attempt', async (store) => {
      await seedRun(store, 'w', [newJob('w', 1, 'a')]);
      const chunk = (attempt: number, sequence: number, data: string) => ({
        workflow_id: 'w',
        run_number: 1,
        job_id: 'a',
        attempt,
        sequence,
        stream: 'stdout' as const,
        data,
        timestamp_ms: 1,
      });
      await store.tx((ops) => ops.insertLogChunks([chunk(0, 2, 'c'), chunk(0, 0, 'a'), chunk(0, 1, 'b')]));
      await store.tx((ops) => ops.insertLogChunks([chunk(0, 1, 'DUPLICATE'), chunk(1, 0, 'retry')]));
      const q = { workflow_id: 'w', run_number: 1, job_id: 'a' };
      const all = await store.read((ops) => ops.getLogChunks({ ...q, attempt: 0 }));
      assert.deepEqual(all.map((c) => c.data), ['a', 'b', 'c']);
      const later = await store.read((ops) => ops.getLogChunks({ ...q, attempt: 0, afterSequence: 0, limit: 1 }));
      assert.deepEqual(later.map((c) => c.data), ['b']);
      assert.equal(await store.read((ops) => ops.latestLogAttempt('w', 1, 'a')), 1);
      assert.equal(await store.read((ops) => ops.latestLogAttempt('w', 1, 'zz')), null);
    });

    withStore('workers: upsert keeps registration time, touch creates unknown workers', async (store) => {
      await store.tx((ops) => ops.upsertWorker({ worker_id: 'w1', labels: ['a'], registered_at_ms: 10, last_seen_ms: 10 }));
      await store.tx((ops) => ops.touchWorker('w1', 20));
      await store.tx((ops) => ops.touchWorker('w2', 30, ['z']));
      const ws = await store.read((ops) => ops.listWorkers());
      assert.deepEqual(ws, [
        { worker_id: 'w1', labels: ['a'], registered_at_ms: 10, last_seen_ms: 20 },
        { worker_id: 'w2', labels: ['z'], registered_at_ms: 30, last_seen_ms: 30 },
      ]);
    });

    withStore('runs: insert, read and settle', async (store) => {
      await seedRun(store, 'w', [newJob('w', 1, 'a')]);
      await store.tx((ops) => ops.updateRun('w', 1, 'success', 77));
      assert.deepEqual(await store.read((ops) => ops.getRun('w', 1)), {
        workflow_id: 'w',
        run_number: 1,
        status: 'success',
        created_at_ms: 1,
        finished_at_ms: 77,
      });
      assert.equal(await store.read((ops) => ops.getRun('w', 2)), null);
    });
  });
}
