/**
 * What started a run and the definition it used (README "Dashboard") through real HTTP: a start is
 * `manual`, a re-run `rerun`, a scheduled fire `schedule`, shown on the run and in the run history;
 * GET …/runs/{n}/definition answers the definition run n used after the workflow was edited, and a run
 * from before definitions were kept answers 404 `definition_not_recorded`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import path from 'node:path';
import { client } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';

test('runs say what started them and keep the definition they used', async (t) => {
  let now = Date.UTC(2026, 0, 5, 1, 59);
  const srv = await startInProcess({ now: () => now });
  t.after(() => srv.close());
  const api = client(srv.url);
  const v1 = { id: 'ship', on: { schedule: [{ cron: '0 2 * * *' }] }, env: { STAGE: 'one' }, jobs: { a: { run: 'echo one' } } };
  await api.createWorkflow(v1);

  const started = await api.post('/api/workflows/ship/run', {});
  assert.equal(started.status, 202, started.text);
  assert.equal(started.body.run.trigger, 'manual');
  const firstHash = started.body.run.definition_hash;
  assert.match(firstHash, /^\S+$/);
  const a = await api.claim('w');
  assert.equal((await api.post(`/api/jobs/${a!.lease.lease_id}/fail`, { error: 'boom', retryable: false })).status, 200);

  // The workflow is edited; run 1 keeps the definition it used.
  const edited = await api.put('/api/workflows/ship', { ...v1, env: { STAGE: 'two' }, jobs: { a: { run: 'echo two' } } });
  assert.equal(edited.status, 200, edited.text);
  const used = await api.get('/api/workflows/ship/runs/1/definition');
  assert.equal(used.status, 200, used.text);
  assert.deepEqual([used.body.env, used.body.jobs.a.run], [{ STAGE: 'one' }, 'echo one']);
  assert.deepEqual((await api.get('/api/workflows/ship/definition')).body.env, { STAGE: 'two' });

  const again = await api.post('/api/workflows/ship/runs/1/rerun', {});
  assert.equal(again.status, 202, again.text);
  assert.equal(again.body.run.trigger, 'rerun');
  assert.notEqual(again.body.run.definition_hash, firstHash, 'a re-run is planned from the current definition');
  assert.equal((await api.get('/api/workflows/ship/runs/2/definition')).body.env.STAGE, 'two');
  const b = await api.claim('w');
  assert.equal((await api.post(`/api/jobs/${b!.lease.lease_id}/complete`, { outputs: {} })).status, 200);

  // 02:00 comes: the reaper's schedule pass fires run 3.
  now = Date.UTC(2026, 0, 5, 2, 0, 1);
  await srv.engine.housekeeping.fireSchedules();
  const history = await api.get('/api/workflows/ship/runs');
  assert.deepEqual(history.body.map((r: any) => [r.run_number, r.trigger]), [[3, 'schedule'], [2, 'rerun'], [1, 'manual']]);

  // A run from before definitions were kept.
  const db = new Database(path.join(srv.dir, 'weft.db'));
  db.prepare('UPDATE runs SET trigger = NULL, definition_hash = NULL WHERE run_number = 1').run();
  db.close();
  const old = await api.get('/api/workflows/ship/runs/1/definition');
  assert.equal(old.status, 404, old.text);
  assert.equal(old.body.error, 'definition_not_recorded');
  assert.match(old.body.message, /GET \/api\/workflows\/ship\/definition answers the current one/);
  assert.equal((await api.get('/api/workflows/ship/runs/1')).body.run.trigger, null);
  const missing = await api.get('/api/workflows/ship/runs/9/definition');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'run_not_found');
});
