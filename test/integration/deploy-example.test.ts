/**
 * The README's deployment (workflows/deploy.yml, README "Deployments") end to end, with a real
 * `weft server` holding a secret key and a real `weft worker`: the build waits for approval, `weft
 * approve` lets the deploy run with its secret (which no log shows), a second deploy to the same
 * environment waits for the first, then starts and waits for its own approval, which `weft reject`
 * turns down.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { cliWithStdin, runCli, type FileServer } from '../helpers/cli.js';
import { ROOT, sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

const DEADLINE = 120_000;

test('workflows/deploy.yml: build → approval → deploy with a secret, one deploy per environment at a time', async (t) => {
  const sb = sandbox(t, 'weft-deploy-');
  fs.copyFileSync(path.join(ROOT, 'workflows', 'deploy.yml'), path.join(sb.workflowsDir, 'deploy.yml'));
  const srv = await serverProcess(t, sb, { WEFT_SECRET_KEY: randomBytes(32).toString('base64') });
  const api = client(srv.url);
  const cli = { url: srv.url, dir: sb.dir } as FileServer;
  const KEY = `key-${randomBytes(10).toString('hex')}`;
  const set = await cliWithStdin(['secret', 'set', 'DEPLOY_KEY'], KEY, { SERVER_URL: srv.url });
  assert.equal(set.code, 0, set.stderr);
  track(t, spawnWeft(['worker'], { SERVER_URL: srv.url, POLL_SECS: '0.2', WORK_DIR: path.join(sb.dir, 'work') }, sb.dir));

  const jobOf = async (run: number, job: string) => (await api.get(`/api/workflows/deploy/runs/${run}`)).body.jobs.find((j: any) => j.id === job);
  const waitFor = (run: number, job: string, state: string) =>
    until(async () => ((await jobOf(run, job))?.state === state ? true : null), `run ${run}'s ${job} to be ${state}`, DEADLINE, 100);

  const first = await api.post('/api/workflows/deploy/run', { inputs: { env: 'prod' } });
  assert.equal(first.status, 202, first.text);
  await waitFor(1, 'approve', 'awaiting_approval');
  assert.equal((await jobOf(1, 'approve')).approval.message, 'Deploy this build?');

  // A second deploy to prod waits for the first: the group is busy while the first waits for approval.
  const second = await api.post('/api/workflows/deploy/run', { inputs: { env: 'prod' } });
  assert.equal(second.status, 202, second.text);
  assert.deepEqual([second.body.run.status, second.body.run.concurrency_group], ['queued', 'deploy-prod']);

  const approved = await runCli(t, cli, ['approve', 'deploy', 'approve', '--run', '1', '--comment', 'ship it']);
  assert.equal(approved.code, 0, approved.output);
  await waitFor(1, 'deploy', 'success');
  const log = (await api.get('/api/workflows/deploy/jobs/deploy/logs?run=1')).body.map((c: any) => c.data).join('');
  assert.match(log, /deploying app 1\.4\.0 \(1\.4\.0\) to prod with key \*\*\*/);
  assert.ok(!log.includes(KEY), 'the key is hidden in the log');

  // The first run over, the second starts by itself and waits for its own approval; a reject ends it.
  await waitFor(2, 'approve', 'awaiting_approval');
  const rejected = await runCli(t, cli, ['reject', 'deploy', 'approve', '--run', '2', '--comment', 'not today']);
  assert.equal(rejected.code, 0, rejected.output);
  const run2 = await until(async () => {
    const doc = (await api.get('/api/workflows/deploy/runs/2')).body;
    return doc.status === 'failed' ? doc : null;
  }, 'run 2 to fail', DEADLINE, 100);
  const states = Object.fromEntries(run2.jobs.map((j: any) => [j.id, j.state]));
  assert.deepEqual(states, { build: 'success', approve: 'failed', deploy: 'skipped' });
  assert.equal(run2.jobs.find((j: any) => j.id === 'approve').approval.comment, 'not today');
  assert.equal((await api.get('/api/workflows/deploy/runs/1')).body.status, 'success');
});
