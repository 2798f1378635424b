/**
 * Concurrency groups of jobs (README "Concurrency groups") through real HTTP: definitions refused with
 * a reason, the group evaluated from inputs and matrix values and shown on each job, a job waiting
 * while another workflow's job of its group runs, an arrival replacing the waiting job and, with
 * cancel_in_progress, cancelling the running one; and with real `weft worker`s, on SQLite (one server)
 * and on PostgreSQL (three servers), jobs of one group in two workflows never overlapping (the jobs
 * record their own start and end).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track } from '../helpers/server.js';

const DEADLINE = 120_000;

test("a job's group is checked with the definition, evaluated per instance, and held across workflows; arrivals replace and cancel", async (t) => {
  const srv = await startInProcess();
  t.after(() => srv.close());
  const api = client(srv.url);
  const refused = async (job: Record<string, unknown>, field: RegExp, message: RegExp) => {
    const r = await api.post('/api/workflows', { id: `bad-${Math.random().toString(36).slice(2)}`, inputs: { env: { default: 'prod' } }, jobs: { b: { run: 'true' }, a: { needs: 'b', run: 'true', ...job } } });
    assert.equal(r.status, 400, r.text);
    const issue = r.body.issues.find((i: any) => field.test(i.field));
    assert.ok(issue, `${JSON.stringify(r.body.issues)} names ${field}`);
    assert.match(issue.message, message);
  };
  await refused({ concurrency: { cancel_in_progress: true } }, /^concurrency\.group$/, /is required/);
  await refused({ concurrency: { group: 'g', max_runs: 2 } }, /^concurrency\.max_runs$/, /a workflow's setting/);
  await refused({ concurrency: { group: 'g-${{ needs.b.outputs.x }}' } }, /^concurrency\.group$/, /only inputs, matrix values and the event/);
  await refused({ concurrency: { group: 'g-${{ inputs.nope }}' } }, /^concurrency\.group$/, /unknown input 'nope'/);
  await refused({ concurrency: { group: 'g-${{ matrix.region }}' } }, /^concurrency\.group$/, /no strategy\.matrix/);
  await refused({ concurrency: 7 }, /^concurrency$/, /a mapping \{group, cancel_in_progress\?\} or a group name/);

  const deploy = (id: string, cancel = false) => ({
    id,
    inputs: { env: { default: 'prod' } },
    jobs: {
      build: { run: 'true', labels: [id] },
      deploy: { needs: 'build', run: 'true', labels: [id], concurrency: { group: 'deploy-${{ inputs.env }}', ...(cancel ? { cancel_in_progress: true } : {}) } },
      notify: { needs: 'deploy', run: 'true', labels: [id] },
    },
  });
  await api.createWorkflow(deploy('api'));
  await api.createWorkflow(deploy('web'));
  await api.createWorkflow(deploy('docs'));
  await api.createWorkflow(deploy('hotfix', true));
  assert.deepEqual((await api.get('/api/workflows/api/definition')).body.jobs.deploy.concurrency, { group: 'deploy-${{ inputs.env }}' });
  await api.createWorkflow({
    id: 'regions',
    jobs: { roll: { strategy: { matrix: { region: ['eu', 'us'] } }, concurrency: 'roll-${{ matrix.region }}', run: 'true', labels: ['regions'] } },
  });
  await api.run('regions');
  const instances = (await api.status('regions')).jobs.map((j: any) => [j.id, j.concurrency_group]);
  assert.deepEqual(instances, [['roll~0', 'roll-eu'], ['roll~1', 'roll-us']]);

  /** Runs `id` up to its deploy: build claimed and completed, so deploy arrives in its group. */
  const toDeploy = async (id: string) => {
    await api.run(id);
    const build = await api.claim('w', [id]);
    assert.equal(build?.job.job_id, 'build');
    assert.equal((await api.post(`/api/jobs/${build!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    await until(async () => ((await api.jobState(id, 'deploy')).state === 'queued' ? true : null), `${id}'s deploy to be queued`, DEADLINE, 20);
  };
  await toDeploy('api');
  const apiDeploy = await api.claim('w', ['api']);
  assert.equal(apiDeploy?.job.job_id, 'deploy');
  assert.equal((await api.jobState('api', 'deploy')).concurrency_group, 'deploy-prod');

  await toDeploy('web');
  assert.equal(await api.claim('w', ['web']), null, "web's deploy waits: api's deploy runs");
  const waiting = await api.jobState('web', 'deploy');
  assert.deepEqual([waiting.state, waiting.concurrency_group], ['queued', 'deploy-prod']);
  assert.deepEqual(waiting.concurrency_holder, { workflow_id: 'api', run_number: 1, job_id: 'deploy' }, 'the status names the job it waits for');
  assert.deepEqual((await api.get('/api/workflows/web/runs/1')).body.jobs.find((j: any) => j.id === 'deploy').concurrency_holder.workflow_id, 'api');

  // docs' deploy arrives: it replaces web's waiting one, whose run ends cancelled, notify skipped.
  await toDeploy('docs');
  await until(async () => ((await api.jobState('web', 'deploy')).state === 'cancelled' ? true : null), "web's deploy to be replaced", DEADLINE, 20);
  assert.equal((await api.jobState('web', 'deploy')).error, 'replaced in concurrency group "deploy-prod" by job "deploy" of run #1 of "docs"');
  assert.equal((await api.jobState('web', 'notify')).state, 'skipped');
  await until(async () => ((await api.status('web')).status === 'cancelled' ? true : null), "web's run to end cancelled", DEADLINE, 20);

  // api's deploy ends: docs' deploy is claimable.
  assert.equal((await api.post(`/api/jobs/${apiDeploy!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  const docsDeploy = await api.claim('w', ['docs']);
  assert.equal(docsDeploy?.job.job_id, 'deploy');

  // hotfix's deploy has cancel_in_progress: it cancels docs' running deploy, whose worker is told so.
  await toDeploy('hotfix');
  await until(async () => ((await api.jobState('docs', 'deploy')).state === 'cancelled' ? true : null), "docs' deploy to be cancelled", DEADLINE, 20);
  assert.match((await api.jobState('docs', 'deploy')).error, /^cancelled in progress in concurrency group "deploy-prod" by job "deploy" of run #1 of "hotfix"$/);
  assert.equal((await api.get('/api/jobs/docs/deploy/cancelled')).body, true);
  assert.equal((await api.post(`/api/jobs/${docsDeploy!.lease.lease_id}/heartbeat`)).status, 409);
  assert.equal((await api.claim('w', ['hotfix']))?.job.job_id, 'deploy', 'the arrival runs at once');
});

async function neverOverlap(t: import('node:test').TestContext, store: 'sqlite' | 'postgres'): Promise<void> {
  const sb = sandbox(t, `weft-job-groups-${store}-`);
  let env: Record<string, string> = { ...sb.env, REAP_INTERVAL_SECS: '0.5' };
  if (store === 'postgres') {
    const db = await createDatabase();
    t.after(() => db.drop());
    env = { ...env, DATABASE_URL: db.url };
  }
  const servers = store === 'postgres' ? [await serverProcess(t, sb, env), await serverProcess(t, sb, env), await serverProcess(t, sb, env)] : [await serverProcess(t, sb, env)];
  const apis = servers.map((s) => client(s.url));
  // Three workers, so that a free worker is never what keeps two deploys apart.
  for (let i = 0; i < 3; i++) track(t, spawnWeft(['worker'], { SERVER_URL: servers[i % servers.length]!.url, POLL_SECS: '0.2', WORKER_ID: `jg-${i}` }, sb.dir));
  // Each deploy records when it ran, by the worker's clock (one machine: one clock).
  const wf = (id: string) => ({
    id,
    jobs: {
      build: { run: 'true' },
      deploy: { needs: 'build', concurrency: 'deploy-prod', run: 'echo "::set-output start=$(date +%s%3N)"; sleep 0.6; echo "::set-output end=$(date +%s%3N)"' },
    },
  });
  await apis[0]!.createWorkflow(wf('api'));
  await apis[0]!.createWorkflow(wf('web'));
  const spans: Array<{ who: string; start: number; end: number }> = [];
  for (let wave = 0; wave < 3; wave++) {
    const answers = await Promise.all([apis[wave % apis.length]!.post('/api/workflows/api/run', {}), apis[(wave + 1) % apis.length]!.post('/api/workflows/web/run', {})]);
    for (const a of answers) assert.equal(a.status, 202, a.text);
    const ended = async (id: string) => {
      const s = await apis[0]!.status(id);
      return ['success', 'failed', 'cancelled'].includes(s.status) ? s : null;
    };
    const done = await until(async () => {
      const both = await Promise.all([ended('api'), ended('web')]);
      return both.every(Boolean) ? both : null;
    }, `wave ${wave} to end`, DEADLINE, 100);
    for (const [i, s] of done.entries()) {
      const d = s!.jobs.find((j: any) => j.id === 'deploy');
      assert.equal(d.concurrency_group, 'deploy-prod');
      // Both deploys arrive close together; the later one may replace the earlier one while it waits.
      if (d.state === 'cancelled') {
        assert.match(d.error, /^replaced in concurrency group "deploy-prod"/);
        continue;
      }
      assert.equal(d.state, 'success', JSON.stringify(d));
      spans.push({ who: `${i === 0 ? 'api' : 'web'}#${wave}`, start: Number(d.outputs.start), end: Number(d.outputs.end) });
    }
  }
  assert.ok(spans.length >= 3, `a deploy ran in each wave: ${JSON.stringify(spans)}`);
  spans.sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) {
    assert.ok(spans[i]!.start >= spans[i - 1]!.end, `${spans[i]!.who} started before ${spans[i - 1]!.who} ended: ${JSON.stringify(spans)}`);
  }
}

test('SQLite, real workers: deploys of two workflows in one group never overlap', (t) => neverOverlap(t, 'sqlite'));
test('PostgreSQL, 3 servers with a worker each: deploys of two workflows in one group never overlap', (t) => neverOverlap(t, 'postgres'));
