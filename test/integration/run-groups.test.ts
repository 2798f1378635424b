/**
 * Concurrency groups of runs (README "Concurrency groups") through real HTTP: definitions refused with
 * a reason, the group evaluated from the run's inputs and shown on the run, a waiting run started when
 * another workflow's run frees the group; and on PostgreSQL, three `weft server`s with a `weft worker`
 * each, runs of two workflows started at once through different servers never overlapping (the jobs
 * record their own start and end), and cancel_in_progress cancelling the run in progress.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track } from '../helpers/server.js';

const DEADLINE = 120_000;

test('a group is checked with the definition, evaluated from the inputs, shown on the run, and freed across workflows', async (t) => {
  const srv = await startInProcess();
  t.after(() => srv.close());
  const api = client(srv.url);
  const refused = async (concurrency: unknown, field: RegExp, message: RegExp) => {
    const r = await api.post('/api/workflows', { id: `bad-${Math.random().toString(36).slice(2)}`, inputs: { env: { default: 'prod' } }, concurrency, jobs: { a: { run: 'true' } } });
    assert.equal(r.status, 400, r.text);
    const issue = r.body.issues.find((i: any) => field.test(i.field));
    assert.ok(issue, `${JSON.stringify(r.body.issues)} names ${field}`);
    assert.match(issue.message, message);
  };
  await refused({ cancel_in_progress: true }, /^concurrency\.cancel_in_progress$/, /needs a group/);
  await refused({ group: '' }, /^concurrency\.group$/, /non-empty text/);
  await refused({ group: 'g-${{ inputs.nope }}' }, /^concurrency\.group$/, /unknown input 'nope' \(declared: env\)/);
  await refused({ group: 'g-${{ needs.a.result }}' }, /^concurrency\.group$/, /only \$\{\{ inputs\.<name> \}\}/);
  await refused({ group: 'g', cancel_in_progress: 'yes' }, /^concurrency\.cancel_in_progress$/, /true or false/);
  await refused({ group: 'g', cancel_inprogress: true }, /^concurrency\.cancel_inprogress$/, /cancel_in_progress/);

  const gated = (id: string) => ({
    id,
    inputs: { env: { default: 'prod' } },
    concurrency: { group: 'deploy-${{ inputs.env }}' },
    jobs: { ship: { run: 'true', labels: [id] } },
  });
  await api.createWorkflow(gated('api'));
  await api.createWorkflow(gated('web'));
  const def = await api.get('/api/workflows/api/definition');
  assert.deepEqual(def.body.concurrency, { group: 'deploy-${{ inputs.env }}' }, 'the definition keeps the group as written');

  const first = await api.post('/api/workflows/api/run', {});
  assert.equal(first.status, 202, first.text);
  assert.equal(first.body.run.concurrency_group, 'deploy-prod');
  assert.equal(first.body.run.status, 'running');
  const staging = await api.post('/api/workflows/web/run', { inputs: { env: 'staging' } });
  assert.equal(staging.body.run.status, 'running', 'another group is not held up');
  // The prod group is busy: the start waits, although web itself allows one run and refuses a second.
  const queued = await api.post('/api/workflows/web/run', {});
  assert.equal(queued.status, 202, queued.text);
  assert.deepEqual([queued.body.run.status, queued.body.run.concurrency_group], ['queued', 'deploy-prod']);
  const history = await api.get('/api/workflows/web/runs');
  assert.deepEqual(history.body.map((r: any) => [r.run_number, r.status, r.concurrency_group]), [[2, 'queued', 'deploy-prod'], [1, 'running', 'deploy-staging']]);

  // web's own slot frees; its prod run still waits for the group, which api holds.
  const c0 = await api.claim('w', ['web']);
  assert.equal((await api.post(`/api/jobs/${c0!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await api.get('/api/workflows/web/runs/2')).body.run.status, 'queued');
  // A reaper pass meanwhile (the group still busy) must not make this server forget that web waits on it.
  await srv.engine.housekeeping.reap();
  assert.equal((await api.get('/api/workflows/web/runs/2')).body.run.status, 'queued');
  // api's run ends: web's waiting run starts at once, without a reaper, though another workflow freed it.
  const c1 = await api.claim('w', ['api']);
  assert.equal((await api.post(`/api/jobs/${c1!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await api.get('/api/workflows/web/runs/2')).body.run.status, 'running');
  assert.equal((await api.claim('w', ['web']))?.job.run_number, 2);

  // An input that makes the group empty is refused at the start.
  const empty = await api.post('/api/workflows/api/run', { inputs: { env: '' } });
  assert.equal(empty.status, 202, 'deploy- is a group still');
  await api.createWorkflow({ id: 'blank', inputs: { g: { default: 'x' } }, concurrency: { group: '${{ inputs.g }}' }, jobs: { a: { run: 'true' } } });
  const blank = await api.post('/api/workflows/blank/run', { inputs: { g: '  ' } });
  assert.equal(blank.status, 400, blank.text);
  assert.match(blank.body.message, /concurrency\.group '\$\{\{ inputs\.g \}\}' becomes empty/);
});

test('PostgreSQL, 3 servers: runs of two workflows in one group never overlap; cancel_in_progress cancels the run in progress', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t, 'weft-groups-pg-');
  const env = { ...sb.env, DATABASE_URL: db.url, REAP_INTERVAL_SECS: '0.5' };
  const servers = [await serverProcess(t, sb, env), await serverProcess(t, sb, env), await serverProcess(t, sb, env)];
  const apis = servers.map((s) => client(s.url));
  servers.forEach((s, i) => track(t, spawnWeft(['worker'], { SERVER_URL: s.url, POLL_SECS: '0.2', WORKER_ID: `groups-${i}` }, sb.dir)));

  // Each job records when it ran, by the worker's clock (one machine: one clock).
  const deploy = (id: string) => ({
    id,
    inputs: { env: { default: 'prod' } },
    concurrency: { group: 'deploy-${{ inputs.env }}' },
    jobs: {
      ship: { run: 'echo "::set-output start=$(date +%s%3N)"; sleep 0.6; echo "::set-output end=$(date +%s%3N)"' },
    },
  });
  await apis[0]!.createWorkflow(deploy('api'));
  await apis[0]!.createWorkflow(deploy('web'));

  for (let wave = 0; wave < 2; wave++) {
    // Three starts at once through three servers: one runs, one waits, the older waiting one is replaced.
    const answers = await Promise.all([
      apis[0]!.post('/api/workflows/api/run', {}),
      apis[1]!.post('/api/workflows/web/run', {}),
      apis[2]!.post('/api/workflows/api/run', {}),
    ]);
    for (const a of answers) assert.ok(a.status === 202 || a.status === 409, a.text);
    await until(
      async () => {
        const both = await Promise.all(['api', 'web'].map((id) => apis[wave % 3]!.get(`/api/workflows/${id}/runs`)));
        return both.every((r) => r.body.every((run: any) => !['running', 'queued'].includes(run.status))) ? true : null;
      },
      `wave ${wave} to end`,
      DEADLINE,
      100,
    );
  }
  const runs: Array<{ id: string; run: any }> = [];
  for (const id of ['api', 'web']) {
    for (const summary of (await apis[0]!.get(`/api/workflows/${id}/runs`)).body) {
      runs.push({ id, run: (await apis[0]!.get(`/api/workflows/${id}/runs/${summary.run_number}`)).body });
    }
  }
  const ran = runs.filter((r) => r.run.status === 'success');
  assert.ok(ran.length >= 2, `at least one run per wave ran: ${JSON.stringify(runs.map((r) => [r.id, r.run.run.status]))}`);
  assert.ok(runs.every((r) => ['success', 'cancelled'].includes(r.run.status)), JSON.stringify(runs.map((r) => r.run.status)));
  const spans = ran.map((r) => {
    const o = r.run.jobs[0].outputs;
    return { who: `${r.id}#${r.run.run_number}`, start: Number(o.start), end: Number(o.end) };
  });
  spans.sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) {
    assert.ok(spans[i]!.start >= spans[i - 1]!.end, `${spans[i]!.who} started before ${spans[i - 1]!.who} ended: ${JSON.stringify(spans)}`);
  }

  // cancel_in_progress: a newer start cancels the run in progress and runs at once.
  const preview = (id: string) => ({ id, concurrency: { group: 'preview', cancel_in_progress: true }, jobs: { build: { run: 'sleep 60' } } });
  await apis[0]!.createWorkflow(preview('p1'));
  await apis[0]!.createWorkflow(preview('p2'));
  await apis[0]!.run('p1');
  await until(async () => ((await apis[1]!.jobState('p1', 'build'))?.state === 'running' ? true : null), 'p1 to run', DEADLINE, 100);
  const newer = await apis[1]!.post('/api/workflows/p2/run', {});
  assert.equal(newer.status, 202, newer.text);
  await until(async () => ((await apis[2]!.status('p1')).status === 'cancelled' ? true : null), 'p1 to be cancelled', DEADLINE, 100);
  await until(async () => ((await apis[2]!.jobState('p2', 'build'))?.state === 'running' ? true : null), 'p2 to run', DEADLINE, 100);
  assert.equal((await apis[0]!.post('/api/workflows/p2/cancel')).status, 202);
});
