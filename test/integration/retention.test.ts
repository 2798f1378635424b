/**
 * Retention (README "Retention") and deleting workflows, against real servers: the reaper of a spawned
 * `weft server` pruning by RETAIN_RUNS, `DELETE /api/workflows/{id}` on an in-process server, and
 * `weft prune` as a real process on a SQLite file and on PostgreSQL. Needs `npm run build` first
 * (bin/weft runs dist/).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowApiError, WorkflowClient } from '../../src/client/index.js';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track } from '../helpers/server.js';

type Client = ReturnType<typeof client>;

/** One run of `id` (a single job `a`) worked to success by the test, with `lines` log chunks. */
async function workRun(c: Client, id: string, lines = 2): Promise<number> {
  const started = await c.run(id);
  const claim = await c.claim('tester');
  assert.ok(claim, `run ${started.run_number} of ${id} has a job to claim`);
  const chunks = Array.from({ length: lines }, (_, i) => ({ sequence: i, data: `run ${started.run_number} line ${i}\n` }));
  assert.equal((await c.post(`/api/jobs/${claim.lease.lease_id}/logs`, { chunks })).status, 200);
  assert.equal((await c.post(`/api/jobs/${claim.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await c.settled(id);
  return started.run_number as number;
}

async function createOneJob(c: Client, id: string): Promise<void> {
  const r = await c.put(`/api/workflows/${id}`, { jobs: { a: { run: 'echo hi' } } });
  assert.equal(r.status, 201, r.text);
}

const logsOfRun = (c: Client, id: string, run: number) => c.get(`/api/workflows/${id}/jobs/a/logs?run=${run}`);

test('the reaper of `weft server` keeps the newest RETAIN_RUNS runs; logs of a pruned run answer 404 run_not_found', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { RETAIN_RUNS: '2', REAP_INTERVAL_SECS: '0.1' });
  assert.match(server.output(), /"retain_runs":2/, 'the start line names the policy');
  const c = client(server.url);
  await createOneJob(c, 'ci');
  for (let i = 1; i <= 4; i++) assert.equal(await workRun(c, 'ci'), i);

  const gone = await until(
    async () => {
      const [one, two] = await Promise.all([logsOfRun(c, 'ci', 1), logsOfRun(c, 'ci', 2)]);
      return one.status === 404 && two.status === 404 ? [one, two] : null;
    },
    'runs 1 and 2 to be pruned',
    15_000,
    50,
  );
  for (const r of gone) {
    assert.equal(r.body.error, 'run_not_found', r.text);
    assert.match(r.body.message, /retention/);
  }
  for (const run of [3, 4]) {
    const r = await logsOfRun(c, 'ci', run);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.map((ch: { data: string }) => ch.data), [`run ${run} line 0\n`, `run ${run} line 1\n`]);
  }
  const status = await c.status('ci');
  assert.deepEqual([status.run_number, status.status], [4, 'success']);
  // A fifth run starts as usual, numbered on, and run 3 goes in its turn.
  assert.equal(await workRun(c, 'ci'), 5);
  await until(async () => (await logsOfRun(c, 'ci', 3)).status === 404, 'run 3 to be pruned', 15_000, 50);
  assert.equal((await logsOfRun(c, 'ci', 4)).status, 200);
  assert.match(server.output(), /retention deleted finished runs/);
});

test('`weft scheduler` applies retention beside an API_ONLY server', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { API_ONLY: '1', RETAIN_RUNS: '1' });
  const c = client(server.url);
  await createOneJob(c, 'split');
  await workRun(c, 'split');
  await workRun(c, 'split');
  assert.equal((await logsOfRun(c, 'split', 1)).status, 200, 'an API_ONLY server runs no reaper, so no retention');
  const scheduler = track(t, spawnWeft(['scheduler'], { ...sb.env, RETAIN_RUNS: '1', REAP_INTERVAL_SECS: '0.1' }, sb.dir));
  await scheduler.waitFor(/weft scheduler started/);
  await until(async () => (await logsOfRun(c, 'split', 1)).status === 404, 'the scheduler to prune run 1', 15_000, 50);
  assert.equal((await logsOfRun(c, 'split', 2)).status, 200);
});

test('a malformed RETAIN_RUNS or RETAIN_DAYS stops the server at start, naming the variable', async (t) => {
  const sb = sandbox(t);
  const bad: Array<[string, string]> = [['RETAIN_RUNS', '0'], ['RETAIN_RUNS', '2.5'], ['RETAIN_DAYS', '-1'], ['RETAIN_DAYS', 'week']];
  for (const [name, value] of bad) {
    const p = track(t, spawnWeft(['server'], { ...sb.env, PORT: '0', [name]: value }, sb.dir));
    assert.equal(await p.exited, 2, p.output());
    assert.match(p.output(), new RegExp(`${name}="${value}" is not valid`));
  }
});

test('DELETE /api/workflows/{id}: 404 unknown, 409 workflow_active while a run is active, then 200 after a cancel', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const c = client(s.url);
  const del = (id: string) => c.del(`/api/workflows/${id}`);

  const unknown = await del('nope');
  assert.equal(unknown.status, 404, unknown.text);
  assert.equal(unknown.body.error, 'workflow_not_found');
  const tooLong = await del('x'.repeat(300));
  assert.deepEqual([tooLong.status, tooLong.body.error], [400, 'invalid_request']);

  await createOneJob(c, 'w');
  await workRun(c, 'w');
  await c.run('w');
  const claim = await c.claim('tester');
  assert.ok(claim);
  const busy = await del('w');
  assert.equal(busy.status, 409, busy.text);
  assert.equal(busy.body.error, 'workflow_active');
  assert.match(busy.body.message, /cancel/);
  assert.equal((await c.get('/api/workflows/w/status')).status, 200, 'nothing was deleted');
  assert.equal((await logsOfRun(c, 'w', 1)).status, 200);

  assert.equal((await c.post('/api/workflows/w/cancel')).status, 202);
  const done = await del('w');
  assert.equal(done.status, 200, done.text);
  assert.deepEqual(done.body, { deleted: 'w' });
  assert.equal((await c.get('/api/workflows/w/status')).body.error, 'workflow_not_found');
  assert.equal((await logsOfRun(c, 'w', 1)).status, 404);
  assert.equal((await c.post(`/api/jobs/${claim.lease.lease_id}/heartbeat`, {})).body.error, 'lease_not_found');
  assert.equal((await del('w')).status, 404, 'a second delete finds nothing');

  // The id is free again: a new workflow starts from run 1 with no old logs.
  await createOneJob(c, 'w');
  const again = await c.run('w');
  assert.equal(again.run_number, 1);
  const logs = await c.get('/api/workflows/w/jobs/a/logs');
  assert.deepEqual([logs.status, logs.body], [200, []]);

  // The SDK's call, on a workflow that never ran.
  const sdk = new WorkflowClient(s.url);
  await createOneJob(c, 'idle');
  assert.deepEqual(await sdk.deleteWorkflow('idle'), { deleted: 'idle' });
  await assert.rejects(sdk.deleteWorkflow('idle'), (err: unknown) => err instanceof WorkflowApiError && err.status === 404 && err.error === 'workflow_not_found');
});

/** `weft prune <args>` as a process on `env`'s store; its exit code and output. */
async function prune(t: TestContext, args: string[], env: Record<string, string | undefined>, cwd: string) {
  const p = track(t, spawnWeft(['prune', ...args], env, cwd));
  const code = await p.exited;
  return { code, output: p.output() };
}

async function pruneCommand(t: TestContext, storeEnv: Record<string, string | undefined>) {
  const sb = sandbox(t);
  const env = { ...sb.env, ...storeEnv, RETAIN_RUNS: undefined, RETAIN_DAYS: undefined };
  const server = await serverProcess(t, sb, env);
  const c = client(server.url);
  await createOneJob(c, 'nightly');
  for (let i = 1; i <= 3; i++) await workRun(c, 'nightly', 3);

  const nothing = await prune(t, [], env, sb.dir);
  assert.equal(nothing.code, 2, nothing.output);
  assert.match(nothing.output, /nothing to do: set RETAIN_RUNS or RETAIN_DAYS/);

  const dry = await prune(t, ['--dry-run'], { ...env, RETAIN_RUNS: '1' }, sb.dir);
  assert.equal(dry.code, 0, dry.output);
  assert.match(dry.output, /^nightly\s+1\s+success\s+\S+Z\s+1\s+3$/m);
  assert.match(dry.output, /^nightly\s+2\s+success\s+\S+Z\s+1\s+3$/m);
  assert.match(dry.output, /would delete 2 runs \(2 jobs, 6 log chunks\); nothing was deleted/);
  assert.equal((await logsOfRun(c, 'nightly', 1)).status, 200, 'a dry run deletes nothing');

  // The option wins over RETAIN_RUNS.
  const real = await prune(t, ['--retain-runs', '1', '--json'], { ...env, RETAIN_RUNS: '5' }, sb.dir);
  assert.equal(real.code, 0, real.output);
  const body = JSON.parse(real.output);
  assert.deepEqual(
    body.runs.map((r: { workflow_id: string; run_number: number; jobs: number; log_chunks: number }) => [r.workflow_id, r.run_number, r.jobs, r.log_chunks]),
    [['nightly', 1, 1, 3], ['nightly', 2, 1, 3]],
  );
  assert.deepEqual([body.dry_run, body.retain_runs, body.total], [false, 1, { runs: 2, jobs: 2, log_chunks: 6 }]);
  for (const run of [1, 2]) assert.equal((await logsOfRun(c, 'nightly', run)).status, 404);
  assert.equal((await logsOfRun(c, 'nightly', 3)).status, 200);

  const again = await prune(t, ['--retain-days', '0.0001'], env, sb.dir);
  assert.equal(again.code, 0, again.output);
  assert.match(again.output, /nothing to delete/, 'the latest run stays, however old');
}

test('weft prune on a SQLite file: nothing to do without a setting (exit 2), --dry-run lists, then deletes', async (t) => {
  await pruneCommand(t, {});
});

test('weft prune on PostgreSQL', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  await pruneCommand(t, { DATABASE_URL: db.url });
});
