/**
 * Workflows calling workflows end to end (README "Workflows calling workflows"), with a real `weft
 * server` on SQLite and real `weft worker` processes: a job `uses:` another workflow, whose declared
 * outputs reach the jobs after the calling job; a failed child fails its caller's attempt and the
 * caller's retry starts a new child that succeeds; cancelling the caller's run cancels a running child
 * (its worker stops the command); and the refusals of definitions, through HTTP, with their messages.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseSecretKey } from '../../src/engine/secret-box.js';
import { alive } from '../helpers/process.js';
import { client, until } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track, type Sandbox } from '../helpers/server.js';

async function worker(t: TestContext, sb: Sandbox, url: string, id: string) {
  const w = track(t, spawnWeft(['worker'], { SERVER_URL: url, WORKER_ID: id, CONCURRENCY: '2', POLL_SECS: '0.2', CANCEL_POLL_SECS: '0.2', KILL_GRACE_SECS: '1', WORKER_LABELS: 'linux' }, sb.dir));
  await w.waitFor(/weft worker \S+ started/);
  return w;
}

const job = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

test('a job calls a workflow: the child runs on the workers, its outputs reach the jobs after the caller, and parent and child link each other', { timeout: 120_000 }, async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, { REAP_INTERVAL_SECS: '1' });
  const api = client(srv.url);
  await api.createWorkflow({
    id: 'build',
    inputs: { version: { required: true }, flavour: { default: 'plain' } },
    outputs: { artifact: '${{ jobs.compile.outputs.path }}', label: { value: 'v${{ inputs.version }}-${{ inputs.flavour }}', description: 'what was built' } },
    jobs: {
      compile: { labels: ['linux'], env: { V: '${{ inputs.version }}' }, run: 'echo "::set-output path=/out/app-$V.tar"' },
    },
  });
  await api.createWorkflow({
    id: 'release',
    inputs: { version: { default: '1.2.3' } },
    jobs: {
      prepare: { run: 'echo "::set-output flavour=static"' },
      build: { needs: 'prepare', uses: 'build', with: { version: '${{ inputs.version }}', flavour: '${{ needs.prepare.outputs.flavour }}' } },
      publish: {
        needs: 'build',
        env: { ARTIFACT: '${{ needs.build.outputs.artifact }}', LABEL: '${{ needs.build.outputs.label }}' },
        run: 'echo "publishing $ARTIFACT as $LABEL"; echo "::set-output seen=$ARTIFACT|$LABEL"',
      },
    },
  });
  await worker(t, sb, srv.url, 'w1');
  await api.run('release');
  const done = await api.settled('release', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.state, j.error])));
  const caller = job(done, 'build');
  assert.equal(caller.uses, 'build');
  assert.deepEqual(caller.child_run, { workflow_id: 'build', run_number: 1 });
  assert.deepEqual(caller.outputs, { artifact: '/out/app-1.2.3.tar', label: 'v1.2.3-static' });
  assert.equal(caller.worker_id, null, 'no worker ran the calling job');
  assert.deepEqual(job(done, 'publish').outputs, { seen: '/out/app-1.2.3.tar|v1.2.3-static' });

  const child = (await api.get('/api/workflows/build/runs/1')).body;
  assert.equal(child.status, 'success');
  assert.deepEqual(child.run.parent, { workflow_id: 'release', run_number: 1, job_id: 'build' });
  assert.equal(child.run.trigger, 'call');
  assert.deepEqual(child.run.inputs, { version: '1.2.3', flavour: 'static' });
  const history = (await api.get('/api/workflows/build/runs')).body;
  assert.deepEqual(history[0].parent, { workflow_id: 'release', run_number: 1, job_id: 'build' });
  assert.equal(done.run.parent, undefined, 'a run started by hand has no parent');
});

test("a child's failure fails its caller's attempt; the caller's retry starts a new child, which succeeds", { timeout: 120_000 }, async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, { REAP_INTERVAL_SECS: '1' });
  const api = client(srv.url);
  const marker = path.join(sb.dir, 'failed-once');
  await api.createWorkflow({
    id: 'flaky',
    outputs: { tries: '${{ jobs.work.outputs.tries }}' },
    // Fails the first time, for good (its own retries are none), then succeeds.
    jobs: { work: { labels: ['linux'], run: `if [ ! -f "${marker}" ]; then touch "${marker}"; echo boom >&2; exit 3; fi; echo "::set-output tries=2"` } },
  });
  await api.createWorkflow({
    id: 'caller',
    jobs: {
      call: { uses: 'flaky', retries: 1 },
      after: { needs: 'call', env: { T: '${{ needs.call.outputs.tries }}' }, run: 'echo "::set-output t=$T"' },
    },
  });
  await worker(t, sb, srv.url, 'w1');
  await api.run('caller');
  const done = await api.settled('caller', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs));
  const call = job(done, 'call');
  assert.equal(call.attempt, 1, 'the second attempt succeeded');
  assert.deepEqual(call.child_run, { workflow_id: 'flaky', run_number: 2 });
  assert.deepEqual(job(done, 'after').outputs, { t: '2' });
  const first = (await api.get('/api/workflows/flaky/runs/1')).body;
  assert.equal(first.status, 'failed');
  assert.deepEqual(first.run.parent, { workflow_id: 'caller', run_number: 1, job_id: 'call' });
  const second = (await api.get('/api/workflows/flaky/runs/2')).body;
  assert.equal(second.status, 'success');
  assert.deepEqual(second.run.parent, { workflow_id: 'caller', run_number: 1, job_id: 'call' });
  // Without retries left the child's failure fails the caller, naming the child's failed job.
  await api.put('/api/workflows/caller', { jobs: { call: { uses: 'flaky' } } });
  fs.rmSync(marker);
  await api.run('caller');
  const failed = await api.settled('caller', 60_000);
  assert.equal(failed.status, 'failed');
  assert.match(job(failed, 'call').error, /^called workflow "flaky" run #3 failed: failed job work: /);
});

test("cancelling the caller's run cancels its running child, whose worker stops the command", { timeout: 120_000 }, async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, { REAP_INTERVAL_SECS: '1' });
  const api = client(srv.url);
  const pidFile = path.join(sb.dir, 'pid');
  await api.createWorkflow({ id: 'slow', jobs: { sleep: { labels: ['linux'], run: `echo $$ > "${pidFile}"; exec sleep 600` } } });
  await api.createWorkflow({ id: 'middle', jobs: { inner: { uses: 'slow' } } });
  await api.createWorkflow({ id: 'top', jobs: { outer: { uses: 'middle' }, after: { needs: 'outer', if: 'always()', run: 'echo after' } } });
  await worker(t, sb, srv.url, 'w1');
  await api.run('top');
  const pid = await until(() => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').trim()) || null : null), 'the grandchild job to start');
  assert.equal(job(await api.status('middle'), 'inner').state, 'running');

  const cancel = await api.post('/api/workflows/top/cancel');
  assert.equal(cancel.status, 202, cancel.text);
  const slow = await until(async () => {
    const s = await api.status('slow');
    return s.status === 'cancelled' ? s : null;
  }, 'the grandchild run to be cancelled');
  assert.equal(job(slow, 'sleep').state, 'cancelled');
  assert.equal((await api.status('middle')).status, 'cancelled');
  await until(() => !alive(pid), "the worker to stop the grandchild's command");
  const top = await api.settled('top', 60_000);
  assert.equal(top.status, 'cancelled');
  assert.equal(job(top, 'outer').state, 'cancelled');
});

test('definitions that call workflows wrongly are refused through HTTP with 400 invalid_workflow naming the job, field and chain', { timeout: 120_000 }, async (t) => {
  const srv = await startInProcess();
  t.after(() => srv.close());
  const api = client(srv.url);
  const refused = async (method: 'post' | 'put', pathname: string, body: unknown) => {
    const r = await api[method](pathname, body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'invalid_workflow', r.text);
    return r.body as { message: string; issues: Array<{ job: string | null; field: string | null; message: string }> };
  };
  // a → b → c → d → e → f: five nested calls, the most allowed.
  for (const [id, callee] of [['f', null], ['e', 'f'], ['d', 'e'], ['c', 'd'], ['b', 'c'], ['a', 'b']] as const) {
    await api.createWorkflow({ id, inputs: { x: { default: '1' } }, jobs: callee ? { go: { uses: callee } } : { go: { run: 'true' } } });
  }
  const deep = await refused('post', '/api/workflows', { id: 'top', jobs: { go: { uses: 'a' } } });
  assert.deepEqual(deep.issues.map((i) => [i.job, i.field]), [['go', 'uses']]);
  assert.equal(deep.issues[0]!.message, 'calling "a" makes the call chain top → a → b → c → d → e → f, 6 calls deep; at most 5 nested calls are allowed');
  assert.equal((await api.get('/api/workflows/top')).status, 404, 'nothing was saved');
  // Deepening the chain from below is refused the same way, naming the whole chain.
  const below = await refused('put', '/api/workflows/f', { jobs: { go: { uses: 'g' } } });
  assert.match(below.message, /calling "g" makes the call chain a → b → c → d → e → f → g, 6 calls deep; at most 5 nested calls are allowed/);

  const cycle = await refused('put', '/api/workflows/e', { jobs: { go: { uses: 'b' } } });
  assert.equal(cycle.issues[0]!.message, 'calling "b" makes a cycle: e → b → c → d → e; a workflow may not call itself through others');
  assert.equal((await api.get('/api/workflows/e/definition')).body.jobs.go.uses, 'f', 'the refused PUT changed nothing');
  const self = await refused('post', '/api/workflows', { id: 'me', jobs: { go: { uses: 'me' } } });
  assert.equal(self.issues[0]!.message, 'a workflow cannot call itself (uses: me)');

  await api.createWorkflow({ id: 'deploy', inputs: { target: { required: true }, region: { default: 'eu' } }, jobs: { go: { run: 'true' } } });
  const inputs = await refused('post', '/api/workflows', {
    id: 'bad-inputs',
    jobs: { one: { uses: 'deploy', with: { nope: 'x', region: 'us' } }, two: { uses: 'f', with: { x: '2', y: '3' } } },
  });
  assert.deepEqual(
    inputs.issues.map((i) => [i.job, i.field, i.message]),
    [
      ['one', 'with.nope', 'workflow "deploy" has no input "nope" (it declares region, target)'],
      ['one', 'with', 'workflow "deploy" requires input "target"; give it in with:'],
      ['two', 'with.y', 'workflow "f" has no input "y" (it declares x)'],
    ],
  );

  const mixed = await refused('post', '/api/workflows', {
    id: 'mixed',
    jobs: {
      both: { uses: 'f', run: 'make' },
      loose: { with: { x: '1' }, run: 'true' },
      secret: { uses: 'f', with: { x: '${{ secrets.TOKEN }}' } },
    },
  });
  assert.deepEqual(
    mixed.issues.map((i) => [i.job, i.field, i.message]),
    [
      ['both', 'run', "cannot be combined with 'uses': the called workflow's jobs run the commands; move this command to a job of its own"],
      ['loose', 'with', "is read only with 'uses:' (the inputs of the workflow a job calls); add 'uses: <workflow id>' or remove 'with'"],
      ['secret', 'with.x', `'\${{ secrets.TOKEN }}' cannot be passed in with: a run's inputs are kept with it and shown; the called workflow reads its secrets itself (README "Secrets")`],
    ],
  );
});

test('a call of a workflow saved later is checked when it starts: a missing workflow or input fails the calling job, naming it', { timeout: 120_000 }, async (t) => {
  const srv = await startInProcess({ reapIntervalMs: 200 });
  t.after(() => srv.close());
  const api = client(srv.url);
  await api.createWorkflow({ id: 'early', jobs: { go: { uses: 'later', with: { who: 'me' } }, after: { needs: 'go', if: 'failure()', run: 'true' } } });
  await api.run('early');
  const missing = await until(async () => {
    const s = await api.status('early');
    return job(s, 'go').state === 'failed' ? s : null;
  }, 'the call of a missing workflow to fail');
  assert.equal(job(missing, 'go').error, 'called workflow "later" does not exist');
  assert.equal(job(missing, 'go').child_run, null);
  await api.createWorkflow({ id: 'later', inputs: { target: { required: true } }, jobs: { go: { run: 'true' } } });
  await api.post('/api/workflows/early/cancel');
  await api.run('early');
  const unfit = await until(async () => {
    const s = await api.status('early');
    return s.run_number === 2 && job(s, 'go').state === 'failed' ? s : null;
  }, 'the call with inputs the workflow does not take to fail');
  assert.equal(
    job(unfit, 'go').error,
    'cannot start called workflow "later": workflow "later" has no input "who" (it declares target); required input "target" not given',
  );
  assert.deepEqual((await api.get('/api/workflows/later/runs')).body, [], 'no run of it started');
});

test('a child cancelled on its own fails its calling job without a retry, naming the cancelled run', { timeout: 120_000 }, async (t) => {
  const srv = await startInProcess({ reapIntervalMs: 200 });
  t.after(() => srv.close());
  const api = client(srv.url);
  await api.createWorkflow({ id: 'inner', jobs: { wait: { run: 'true', labels: ['nobody'] } } });
  await api.createWorkflow({ id: 'outer', jobs: { call: { uses: 'inner', retries: 3 }, after: { needs: 'call', if: 'failure()', run: 'true' } } });
  await api.run('outer');
  await until(async () => job(await api.status('outer'), 'call').child_run !== null, 'the child to start');
  assert.equal((await api.post('/api/workflows/inner/cancel')).status, 202);
  const failed = await until(async () => {
    const s = await api.status('outer');
    return job(s, 'call').state === 'failed' ? s : null;
  }, 'the calling job to fail');
  assert.equal(job(failed, 'call').error, 'called workflow "inner" run #1 was cancelled');
  assert.equal(job(failed, 'call').attempt, 0, 'not retried: someone meant the child to stop');
  assert.equal(job(failed, 'after').state, 'queued', 'what runs after a failure runs');
  assert.equal((await api.get('/api/workflows/inner/runs')).body.length, 1);
});

test('a value passed through with: is text to the called run: an upstream output holding ${{ secrets.X }} does not open the secret there', { timeout: 120_000 }, async (t) => {
  const srv = await startInProcess({ secretKey: parseSecretKey(randomBytes(32).toString('hex'), 'test key') });
  t.after(() => srv.close());
  const api = client(srv.url);
  assert.equal((await api.put('/api/secrets/DEPLOY_KEY', { value: 'the-real-key' })).status, 201);
  await api.createWorkflow({ id: 'inner', inputs: { v: { required: true } }, jobs: { show: { env: { V: '${{ inputs.v }}' }, run: 'echo "$V"' } } });
  await api.createWorkflow({
    id: 'outer',
    jobs: { make: { run: 'true' }, call: { needs: 'make', uses: 'inner', with: { v: 'got ${{ needs.make.outputs.evil }}' } } },
  });
  await api.run('outer');
  const make = await until(() => api.claim('w1'), 'the producing job');
  assert.equal(make.job.job_id, 'make');
  const evil = '${{ secrets.DEPLOY_KEY }}';
  assert.equal((await api.post(`/api/jobs/${make.lease.lease_id}/complete`, { outputs: { evil } })).status, 200);
  const show = await until(() => api.claim('w1'), "the called run's job");
  assert.equal(show.job.workflow_id, 'inner');
  assert.equal(show.job.env.V, `got ${evil}`);
  assert.equal(show.job.env.WEFT_INPUT_V, `got ${evil}`);
  assert.equal(show.job.mask, undefined, 'no secret was opened for it');
  assert.ok(!JSON.stringify(show).includes('the-real-key'));
  assert.deepEqual((await api.get('/api/workflows/inner/status')).body.run.inputs, { v: `got ${evil}` });
});
