/**
 * The README's complete pipeline (workflows/release.yml, README "Matrix, fan-out and artifacts") run
 * end to end by a real `weft server` and a real `weft worker`: build once, a matrix tests the build's
 * artifact, a fan-out over the regions a planning job outputs deploys it, and a collecting job sees
 * every instance's output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client } from '../helpers/http.js';
import { ROOT, sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

test('workflows/release.yml: build → matrix test on the build → fan-out deploy → collect, with artifacts and outputs', async (t) => {
  const sb = sandbox(t, 'weft-release-');
  fs.copyFileSync(path.join(ROOT, 'workflows', 'release.yml'), path.join(sb.workflowsDir, 'release.yml'));
  const srv = await serverProcess(t, sb);
  const api = client(srv.url);
  const worker = track(t, spawnWeft(['worker'], { SERVER_URL: srv.url, POLL_SECS: '0.2', CONCURRENCY: '4', WORK_DIR: path.join(sb.dir, 'work') }, sb.dir));
  await worker.waitFor(/weft worker \S+ started/);

  await api.run('release');
  const doc = await api.settled('release', 120_000);
  const states = doc.jobs.map((j: any) => [j.id, j.state, j.error]);
  assert.equal(doc.status, 'success', JSON.stringify(states));

  assert.deepEqual(
    doc.jobs.filter((j: any) => j.group === 'test').map((j: any) => j.name),
    ['test (node18, unit)', 'test (node18, integration)', 'test (node20, unit)', 'test (node20, integration)', 'test (node20, e2e)'],
  );
  const deploys = doc.jobs.filter((j: any) => j.group === 'deploy');
  assert.deepEqual(deploys.map((j: any) => [j.id, j.name, j.item]), [
    ['deploy~0', 'deploy (eu)', 'eu'],
    ['deploy~1', 'deploy (us)', 'us'],
    ['deploy~2', 'deploy (ap)', 'ap'],
  ]);
  const collect = doc.jobs.find((j: any) => j.id === 'collect');
  assert.deepEqual([...collect.depends_on].sort(), [...doc.jobs.filter((j: any) => j.group).map((j: any) => j.id)].sort(), 'collect waits for every instance');

  const log = async (job: string) => {
    const r = await api.get(`/api/workflows/release/jobs/${encodeURIComponent(job)}/logs`);
    assert.equal(r.status, 200, r.text);
    return (r.body as Array<{ data: string }>).map((c) => c.data).join('');
  };
  assert.match(await log('deploy~1'), /deploying app 1\.4\.0 to us/, 'the fan-out instance downloaded the build');
  const collected = await log('collect');
  assert.match(collected, /tested: \["node18\/unit","node18\/integration","node20\/unit","node20\/integration","node20\/e2e"\]/);
  assert.match(collected, /deployed: \["eu","us","ap"\]/);

  const artifacts = await api.get(`/api/workflows/release/runs/${doc.run_number}/artifacts`);
  assert.equal(artifacts.status, 200, artifacts.text);
  assert.deepEqual(artifacts.body.artifacts.map((a: any) => [a.job_id, a.name, a.size]), [['build', 'dist/app.txt', 10]]);
});
