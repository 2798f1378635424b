/**
 * Conditional jobs end to end (README "Workflow definitions", `if:`): a real `weft server` and a real
 * `weft worker`; a cleanup job runs after a failure and after a cancel, and reads its needs' results.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { sandbox as makeSandbox, serverProcess as server, spawnWeft, track, type Sandbox } from '../helpers/server.js';

const sandbox = (t: TestContext) => makeSandbox(t, 'weft-conditions-');

async function worker(t: TestContext, sb: Sandbox, serverUrl: string) {
  const p = track(
    t,
    spawnWeft(['worker'], { SERVER_URL: serverUrl, POLL_SECS: '0.2', CANCEL_POLL_SECS: '0.2', KILL_GRACE_SECS: '1', WORKER_LABELS: undefined, CONCURRENCY: undefined }, sb.dir),
  );
  await p.waitFor(/weft worker \S+ started/);
  return p;
}

type Api = ReturnType<typeof client>;
const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

async function stdout(api: Api, wf: string, job: string): Promise<string[]> {
  const r = await api.get(`/api/workflows/${wf}/jobs/${job}/logs`);
  assert.equal(r.status, 200, r.text);
  return (r.body as any[]).flatMap((c) => c.data.split('\n').filter((l: string) => l !== ''));
}

test('a cleanup job with if: always() runs after a failure and prints $WEFT_NEEDS_<JOB>_RESULT; the run still fails', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url);
  await api.createWorkflow({
    id: 'release',
    jobs: {
      'build-x': { run: 'echo building; exit 3' },
      deploy: { needs: 'build-x', run: 'echo deploying' },
      cleanup: { needs: 'build-x', if: 'always()', run: 'echo "build=$WEFT_NEEDS_BUILD_X_RESULT"' },
      notify: { needs: ['deploy', 'cleanup'], if: '${{ failure() }}', run: 'echo "deploy=$WEFT_NEEDS_DEPLOY_RESULT cleanup=$WEFT_NEEDS_CLEANUP_RESULT"' },
      celebrate: { needs: 'cleanup', if: 'success()', run: 'echo party' },
    },
  });
  await api.run('release');
  const doc = await api.settled('release');
  assert.equal(doc.status, 'failed', 'a failed job fails the run, whatever ran after it');
  const states = Object.fromEntries(doc.jobs.map((j: any) => [j.id, j.state]));
  assert.deepEqual(states, { 'build-x': 'failed', deploy: 'skipped', cleanup: 'success', notify: 'success', celebrate: 'skipped' });
  assert.deepEqual(await stdout(api, 'release', 'cleanup'), ['build=failure']);
  assert.deepEqual(await stdout(api, 'release', 'notify'), ['deploy=skipped cleanup=success']);
  assert.deepEqual([jobOf(doc, 'cleanup').condition, jobOf(doc, 'cleanup').needs_results], ['always()', { 'build-x': 'failure' }]);
  assert.deepEqual([jobOf(doc, 'deploy').condition, jobOf(doc, 'deploy').error], ['success()', 'upstream job "build-x" failed']);
  assert.equal(jobOf(doc, 'celebrate').error, 'a job above upstream job "cleanup" failed');
});

test('after a cancel, always() and cancelled() jobs still run and see cancelled; the run ends cancelled', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url);
  await api.createWorkflow({
    id: 'long',
    jobs: {
      work: { run: 'echo started; sleep 30' },
      next: { needs: 'work', run: 'echo never' },
      cleanup: { needs: 'work', if: 'always()', run: 'echo "work=$WEFT_NEEDS_WORK_RESULT"' },
      'on-cancel': { needs: 'next', if: 'cancelled()', run: 'echo "next=$WEFT_NEEDS_NEXT_RESULT"' },
    },
  });
  await api.run('long');
  await until(async () => (await api.jobState('long', 'work')).state === 'running', 'work to run');
  const cancel = await api.post('/api/workflows/long/cancel');
  assert.equal(cancel.status, 202, cancel.text);
  assert.deepEqual([...cancel.body.cancelled_jobs].sort(), ['next', 'work']);
  const doc = await api.settled('long');
  assert.equal(doc.status, 'cancelled');
  const states = Object.fromEntries(doc.jobs.map((j: any) => [j.id, j.state]));
  assert.deepEqual(states, { work: 'cancelled', next: 'cancelled', cleanup: 'success', 'on-cancel': 'success' });
  assert.deepEqual(await stdout(api, 'long', 'cleanup'), ['work=cancelled']);
  assert.deepEqual(await stdout(api, 'long', 'on-cancel'), ['next=cancelled']);
});

test('a bad if: is a 400 naming the job and field; the claim answer carries the needs results in env', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const bad = await api.post('/api/workflows', { id: 'bad', jobs: { a: { run: 'x' }, b: { needs: 'a', if: 'always', run: 'x' } } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.error, 'invalid_workflow');
  assert.match(bad.body.message, /job 'b', field 'if': must be one of success\(\), failure\(\), always\(\), cancelled\(\), got string 'always' \(did you mean 'always\(\)'\?\)/);
  const arrayForm = await api.post('/api/workflows', { id: 'arr', jobs: [{ id: 'a', command: 'x', if: 'always()' }] });
  assert.equal(arrayForm.status, 400, arrayForm.text);
  assert.match(arrayForm.body.message, /job 'a', field 'if': 'if' is read only in the contract form/);

  await api.createWorkflow({ id: 'env', env: { KEEP: '1' }, jobs: { a: { run: 'x' }, b: { needs: 'a', if: 'always()', run: 'x' }, c: { needs: 'a', run: 'x' } } });
  await api.run('env');
  const a = await api.claim();
  const failed = await api.post(`/api/jobs/${a!.lease.lease_id}/fail`, { error: 'no', retryable: false });
  assert.equal(failed.status, 200, failed.text);
  const b = await api.claim();
  assert.equal(b?.job.job_id, 'b');
  assert.deepEqual(b!.job.env, { KEEP: '1', WEFT_NEEDS_A_RESULT: 'failure' });
  assert.equal(await api.claim(), null, 'c was skipped');
});
