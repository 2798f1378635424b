/**
 * The whole stack on PostgreSQL: a spawned `weft server` with DATABASE_URL=postgres://…, a real
 * `weft worker`, and a `kill -9` of the server after which everything is still there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

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
