/**
 * Schedules with real processes (docs/api.md "Schedules"): an API_ONLY `weft server`, two `weft
 * scheduler` processes racing on the same database every 0.2 s, and a `weft worker`, on SQLite and on
 * PostgreSQL at once. A workflow scheduled every minute starts at the next minute with the worker
 * running it, and the two schedulers' logs together tell of one start for that time, no skip. A
 * scheduler started after a time passed starts that run at once. Waits for one minute boundary.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track, type SpawnedProcess } from '../helpers/server.js';

const MINUTE = 60_000;
const workflow = (id: string) => ({
  id,
  on: { schedule: [{ cron: '* * * * *' }] },
  jobs: { first: { run: 'echo "::set-output at=$(date +%s)"' }, second: { needs: 'first', run: 'echo second' } },
});

function scheduler(t: TestContext, env: Record<string, string | undefined>, cwd: string): Promise<SpawnedProcess> {
  const p = track(t, spawnWeft(['scheduler'], { ...env, REAP_INTERVAL_SECS: '0.2', LOG_FORMAT: 'json' }, cwd));
  return p.waitFor(/weft scheduler started/).then(() => p);
}

const started = (p: SpawnedProcess, id: string) =>
  p.output().split('\n').filter((l) => l.includes('"msg":"scheduled run started') && l.includes(`"workflow_id":"${id}"`));
const skipped = (p: SpawnedProcess) => p.output().split('\n').filter((l) => l.includes('scheduled run skipped'));

async function scenario(t: TestContext, kind: 'sqlite' | 'postgres'): Promise<void> {
  const sb = sandbox(t, `weft-sched-${kind}-`);
  let env = sb.env;
  if (kind === 'postgres') {
    const db = await createDatabase();
    t.after(db.drop);
    env = { ...env, DATABASE_URL: db.url };
  }
  const server = await serverProcess(t, sb, { ...env, API_ONLY: '1' });
  const api = client(server.url);
  const [s1, s2] = await Promise.all([scheduler(t, env, sb.dir), scheduler(t, env, sb.dir)]);
  track(t, spawnWeft(['worker'], { SERVER_URL: server.url, WORKER_ID: `w-${kind}`, LONG_POLL_SECS: '1' }, sb.dir));

  const created = await api.createWorkflow(workflow('every-minute'));
  const fireAt = created.next_fire_at_ms as number;
  assert.equal(fireAt % MINUTE, 0, 'a whole minute');
  assert.ok(fireAt > Date.now() - 1000 && fireAt <= Date.now() + MINUTE, `the next minute: ${new Date(fireAt).toISOString()}`);
  const listed = (await api.get('/api/workflows')).body as Array<{ id: string; next_fire_at_ms: number | null }>;
  assert.equal(listed.find((w) => w.id === 'every-minute')?.next_fire_at_ms, fireAt);
  assert.equal((await api.createWorkflow({ id: 'unscheduled', jobs: { a: { run: 'true' } } })).next_fire_at_ms, null);

  const done = await api.settled('every-minute', MINUTE + 30_000);
  assert.equal(done.status, 'success', JSON.stringify(done));
  assert.equal(done.run_number, 1);
  assert.ok(done.run.created_at_ms >= fireAt && done.run.created_at_ms < fireAt + 5000, `started at ${done.run.created_at} for ${new Date(fireAt).toISOString()}`);
  assert.ok(Number(done.jobs[0].outputs.at) * 1000 >= fireAt - 1000, 'the worker ran it after the time');
  assert.equal(done.next_fire_at_ms, fireAt + MINUTE);
  assert.equal([...started(s1, 'every-minute'), ...started(s2, 'every-minute')].length, 1, `one start in:\n${s1.output()}\n${s2.output()}`);
  assert.deepEqual([...skipped(s1), ...skipped(s2)], []);

}

/** A second database whose scheduler starts only after the time passed: it starts the run at once. */
async function lateScheduler(t: TestContext, kind: 'sqlite' | 'postgres'): Promise<void> {
  const late = sandbox(t, `weft-sched-late-${kind}-`);
  let lateEnv = late.env;
  if (kind === 'postgres') {
    const db = await createDatabase();
    t.after(db.drop);
    lateEnv = { ...lateEnv, DATABASE_URL: db.url };
  }
  const lateServer = await serverProcess(t, late, { ...lateEnv, API_ONLY: '1' });
  const lateApi = client(lateServer.url);
  const due = (await lateApi.createWorkflow(workflow('late'))).next_fire_at_ms as number;
  await until(() => Date.now() > due + 500, 'the time to pass', MINUTE + 5000, 200);
  assert.equal((await lateApi.status('late')).run_number, null, 'nothing starts it without a scheduler');
  await scheduler(t, lateEnv, late.dir);
  const run = await until(async () => (await lateApi.status('late')).run, 'the run the scheduler starts at its start', 10_000, 50);
  assert.equal(run.number, 1);
  assert.equal((await lateApi.status('late')).next_fire_at_ms, due + MINUTE);
}

test('a workflow scheduled every minute starts once at the minute, run by a real worker, on SQLite and PostgreSQL', { timeout: 150_000 }, async (t) => {
  await Promise.all([scenario(t, 'sqlite'), scenario(t, 'postgres'), lateScheduler(t, 'sqlite'), lateScheduler(t, 'postgres')]);
});
