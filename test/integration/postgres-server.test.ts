/**
 * The whole stack on PostgreSQL: a spawned `weft server` with DATABASE_URL=postgres://…, a real
 * `weft worker`, and a `kill -9` of the server after which everything is still there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';
import { reportClaimsBeforeWaiters } from '../helpers/report-claims.js';

test('server and worker on PostgreSQL: a run succeeds and survives kill -9 of the server', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t, 'weft-pg-');
  const env = { ...sb.env, DATABASE_URL: db.url, REAP_INTERVAL_SECS: '0.5' };
  const first = await serverProcess(t, sb, env);
  const api = client(first.url);
  await api.createWorkflow({
    id: 'pg',
    jobs: {
      make: { run: 'echo building; echo "::set-output artifact=app.tgz"' },
      ship: { run: 'echo "shipping $UPSTREAM_MAKE_ARTIFACT" >&2', needs: 'make' },
    },
  });
  await api.run('pg');
  const worker = track(t, spawnWeft(['worker'], { SERVER_URL: first.url, POLL_SECS: '0.2', WORKER_ID: 'pg-worker' }, sb.dir));
  const done = await api.settled('pg', 20_000);
  assert.equal(done.status, 'success');
  assert.deepEqual(done.jobs.find((j: any) => j.id === 'make').outputs, { artifact: 'app.tgz' });
  // Settled means durable; the worker gets its answer a moment later. Kill once it has it.
  await worker.waitFor(/"job_id":"ship"[^\n]*job succeeded[^\n]*reported/, 10_000);

  first.kill('SIGKILL');
  await first.exited;
  worker.kill('SIGTERM');
  assert.equal(await worker.exited, 0);

  const second = await serverProcess(t, sb, env);
  const again = client(second.url);
  const after = await again.status('pg');
  assert.equal(after.status, 'success');
  assert.equal(after.run_number, 1);
  const logs = await again.get('/api/workflows/pg/jobs/ship/logs');
  assert.deepEqual(
    logs.body.map((c: any) => [c.stream, c.data]),
    [['stderr', 'shipping app.tgz\n']],
  );
  const workers = (await again.get('/api/workers')).body;
  assert.ok(workers.some((w: any) => w.worker_id === 'pg-worker'));
  assert.equal((await again.run('pg')).run_number, 2);
});

test('PostgreSQL: the claim a report-batch carries gets the job its complete enqueued, in the same answer', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t, 'weft-pg-chain-');
  const server = await serverProcess(t, sb, { ...sb.env, DATABASE_URL: db.url });
  const api = client(server.url);
  const jobs = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`s${i}`, i === 0 ? { run: 'true' } : { run: 'true', needs: `s${i - 1}` }]));
  await api.createWorkflow({ id: 'chain', jobs });
  await api.run('chain');
  const claim = { worker_id: 'w', labels: [], lease_ttl_secs: 30, max_jobs: 1 };
  let held = (await api.post('/api/jobs/claim-batch', claim)).body.claims[0];
  assert.equal(held?.job.job_id, 's0');
  // Each complete enqueues the next step; the claim beside it must see it (a claim sent at the same
  // time as the complete ran beside it and came back empty).
  for (let i = 1; i < 12; i++) {
    const r = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: held.lease.lease_id, outcome: 'complete' }], claim });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results[0].status, 200, r.text);
    assert.equal(r.body.claims[0]?.job.job_id, `s${i}`, `step ${i}: ${r.text}`);
    held = r.body.claims[0];
  }
});

test("PostgreSQL: the job a report's complete enqueues goes to the claim that report carries, not to a waiting claim of the same worker or another", async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t, 'weft-pg-held-');
  const server = await serverProcess(t, sb, { ...sb.env, DATABASE_URL: db.url });
  await reportClaimsBeforeWaiters(server.url);
});
