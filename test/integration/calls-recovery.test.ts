/**
 * Workflows calling workflows across servers and crashes (README "Workflows calling workflows",
 * "Exactly once"): two `weft server` processes on one PostgreSQL database, both reacting to every
 * change and both reaping, start each calling job's child exactly once per attempt (a retry's new
 * child included); and on SQLite, servers killed with SIGKILL between the steps lose nothing: a call
 * queued but not started, and a child ended but not handed to its caller, are taken up by the next
 * server's reaper pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { freshRun } from '../../src/engine/run-start.js';
import { randomUUID } from 'node:crypto';

const job = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

test('two servers on one PostgreSQL database start each call\'s child exactly once per attempt, a retry\'s included', { timeout: 180_000 }, async (t) => {
  const sb = sandbox(t);
  const db = await createDatabase();
  t.after(() => db.drop());
  const env = { DATABASE_URL: db.url, REAP_INTERVAL_SECS: '1' };
  const a = await serverProcess(t, sb, env);
  const b = await serverProcess(t, sb, env);
  const apiA = client(a.url);
  const apiB = client(b.url);
  const n = 10;
  const markers = path.join(sb.dir, 'failed-');
  // Each instance's first child fails, its second succeeds.
  await apiA.createWorkflow({
    id: 'child',
    concurrency: { max_runs: 50, when_full: 'reject' },
    inputs: { n: { required: true } },
    outputs: { n: '${{ jobs.work.outputs.n }}' },
    jobs: { work: { env: { N: '${{ inputs.n }}' }, run: `if [ ! -f "${markers}$N" ]; then touch "${markers}$N"; exit 1; fi; echo "::set-output n=$N"` } },
  });
  // Saved through B and run through A: both know the caller, both hear every change.
  await apiB.createWorkflow({
    id: 'parent',
    jobs: {
      call: { uses: 'child', with: { n: '${{ matrix.n }}' }, retries: 1, strategy: { matrix: { n: Array.from({ length: n }, (_, i) => i) }, fail_fast: false } },
      sum: { needs: 'call', env: { ALL: '${{ needs.call.outputs.n }}' }, run: 'echo "::set-output all=$ALL"' },
    },
  });
  for (const [i, url] of [a.url, b.url].entries()) {
    const w = track(t, spawnWeft(['worker'], { SERVER_URL: url, WORKER_ID: `w${i}`, CONCURRENCY: '4', POLL_SECS: '0.2', WORKER_LABELS: undefined }, sb.dir));
    await w.waitFor(/weft worker \S+ started/);
  }
  await apiA.run('parent');
  const done = await apiB.settled('parent', 120_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.state, j.error])));
  assert.deepEqual(JSON.parse(job(done, 'sum').outputs.all), Array.from({ length: n }, (_, i) => String(i)));
  const history = (await apiA.get('/api/workflows/child/runs?limit=100')).body as any[];
  assert.equal(history.length, 2 * n, `one child per attempt: ${history.length} runs of child`);
  for (let i = 0; i < n; i++) {
    const id = `call~${i}`;
    const children = history.filter((r) => r.parent.job_id === id).sort((x, y) => x.run_number - y.run_number);
    assert.deepEqual(children.map((r) => r.status), ['failed', 'success'], `${id}: ${JSON.stringify(children)}`);
    assert.equal(job(done, id).attempt, 1);
    assert.deepEqual(job(done, id).child_run, { workflow_id: 'child', run_number: children[1].run_number });
    assert.deepEqual(children.map((r) => r.inputs), [{ n: String(i) }, { n: String(i) }]);
  }
});

test('servers killed between the steps lose nothing: a queued call and an ended child are taken up by the next server', { timeout: 180_000 }, async (t) => {
  const sb = sandbox(t);
  const file = path.join(sb.dir, 'weft.db');
  const env = { REAP_INTERVAL_SECS: '1' };
  const first = await serverProcess(t, sb, env);
  const api = client(first.url);
  await api.createWorkflow({ id: 'child', inputs: { v: { required: true } }, outputs: { v: '${{ jobs.work.outputs.v }}' }, jobs: { work: { run: 'true' } } });
  await api.createWorkflow({ id: 'parent', jobs: { call: { uses: 'child', with: { v: 'seven' } } } });
  first.kill('SIGKILL');
  await first.exited;

  // What a server commits when it starts the run, and then dies before its engine starts the call.
  const store = new SqliteStore(file);
  const wf = (await store.read((r) => r.getWorkflow('parent')))!;
  const start = freshRun(wf, {}, Date.now());
  const started = await store.startRun({ workflow_id: 'parent', expected_hash: wf.hash, jobs: start.jobs, label_sets: start.labelSets, now_ms: Date.now(), inputs: start.inputs, trigger: 'manual' });
  assert.equal(started.kind, 'started');
  assert.equal((await store.read((r) => r.getJob('parent', 1, 'call')))?.status, 'queued');
  await store.close();

  const second = await serverProcess(t, sb, env);
  const api2 = client(second.url);
  const running = await until(async () => {
    const s = await api2.status('parent');
    return job(s, 'call').state === 'running' ? s : null;
  }, "the next server's reaper pass to start the queued call");
  assert.deepEqual(job(running, 'call').child_run, { workflow_id: 'child', run_number: 1 });
  second.kill('SIGKILL');
  await second.exited;

  // The child's job ends through the store alone, as if the server that ended it died before its
  // run-end handler ran: the end is in the outbox, the calling job still runs.
  const again = new SqliteStore(file);
  const [claimed] = await again.claim({ worker_id: 'wk', worker_labels: [], label_keys: [''], ttl_secs: 30, max: 1, lease_ids: [randomUUID()], now_ms: Date.now() });
  assert.equal(claimed?.job.workflow_id, 'child');
  assert.equal((await again.complete(claimed!.lease.lease_id, { v: 'seven' }, Date.now())).kind, 'completed');
  assert.equal((await again.read((r) => r.getRun('child', 1)))?.status, 'success');
  assert.equal((await again.read((r) => r.getJob('parent', 1, 'call')))?.status, 'running');
  assert.equal((await again.pendingRunEnds('call', 10)).length, 1);
  await again.close();

  const third = await serverProcess(t, sb, env);
  const done = await client(third.url).settled('parent', 60_000);
  assert.equal(done.status, 'success');
  assert.deepEqual(job(done, 'call').outputs, { v: 'seven' });
});
