/**
 * Run inputs and re-runs through HTTP against a real `weft server`, with a real `weft worker` running
 * the jobs: `WEFT_INPUT_*` reaches the job, a re-run keeps the outputs of the jobs it does not run
 * again, `from` runs a job and what is downstream of it, and every refusal is a clear 4xx.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, request, until } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';

async function startWorker(t: TestContext, sb: Sandbox, url: string) {
  const p = track(
    t,
    spawnWeft(['worker'], { SERVER_URL: url, POLL_SECS: '0.2', WORKER_LABELS: undefined, WORKER_ID: undefined, CONCURRENCY: '2' }, sb.dir),
  );
  await p.waitFor(/weft worker \S+ started/);
  return p;
}

const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);
const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n') : []);

test('inputs: declared, defaulted, checked, and given to every job as WEFT_INPUT_<NAME>', async (t) => {
  const sb = sandbox(t, 'weft-inputs-');
  const server = await serverProcess(t, sb);
  const api = client(server.url);
  await api.createWorkflow({
    id: 'deploy',
    inputs: { branch: { required: true, description: 'what to build' }, 'log-level': { default: 'info' }, note: {} },
    jobs: { show: { run: 'echo "branch=$WEFT_INPUT_BRANCH level=$WEFT_INPUT_LOG_LEVEL note=${WEFT_INPUT_NOTE-unset}"' } },
  });

  const missing = await request('POST', `${server.url}/api/workflows/deploy/run`);
  assert.equal(missing.status, 400, missing.text);
  assert.equal(missing.body.error, 'invalid_request');
  assert.match(missing.body.message, /required input "branch" not given/);
  assert.deepEqual(missing.body.missing_inputs, ['branch']);
  const unknown = await api.post('/api/workflows/deploy/run', { inputs: { branch: 'main', brnach: 'x' } });
  assert.equal(unknown.status, 400, unknown.text);
  assert.match(unknown.body.message, /has no input "brnach" \(it declares branch, log-level, note\)/);
  const notString = await api.post('/api/workflows/deploy/run', { inputs: { branch: 3 } });
  assert.equal(notString.status, 400, notString.text);
  assert.match(notString.body.message, /body\.inputs\.branch must be string/);
  const extra = await api.post('/api/workflows/deploy/run', { inputs: { branch: 'main' }, input: {} });
  assert.equal(extra.status, 400, extra.text);
  assert.match(extra.body.message, /unknown field "input"/);
  const nul = await api.post('/api/workflows/deploy/run', { inputs: { branch: 'a\u0000b' } });
  assert.equal(nul.status, 400, nul.text);
  assert.match(nul.body.message, /"branch" must not contain a NUL/);
  const long = await api.post('/api/workflows/deploy/run', { inputs: { branch: 'x'.repeat(65_537) } });
  assert.equal(long.status, 400, long.text.slice(0, 200));
  assert.match(long.body.message, /body\.inputs\.branch must NOT have more than 65536 characters/);
  const many = await api.post('/api/workflows/deploy/run', { inputs: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`i${i}`, 'v'])) });
  assert.equal(many.status, 400, many.text);
  assert.match(many.body.message, /body\.inputs must NOT have more than 100 properties/);

  const started = await api.post('/api/workflows/deploy/run', { inputs: { branch: 'feature/x y' } });
  assert.equal(started.status, 202, started.text);
  assert.deepEqual(started.body.run.inputs, { branch: 'feature/x y', 'log-level': 'info' });
  assert.equal(started.body.run.rerun_of, null);

  await startWorker(t, sb, server.url);
  const done = await api.settled('deploy');
  assert.equal(done.status, 'success', JSON.stringify(done));
  const log = await api.get('/api/workflows/deploy/jobs/show/logs');
  assert.equal(log.body.map((c: any) => c.data).join(''), 'branch=feature/x y level=info note=unset\n');
  const runs = await api.get('/api/workflows/deploy/runs');
  assert.deepEqual(runs.body[0].inputs, { branch: 'feature/x y', 'log-level': 'info' });
});

test('a workflow without inputs still runs with no body, an empty body or {}, and refuses inputs', async (t) => {
  const sb = sandbox(t, 'weft-inputs-');
  const server = await serverProcess(t, sb);
  const api = client(server.url);
  await api.createWorkflow({ id: 'plain', jobs: { a: { run: 'true' } } });
  const given = await api.post('/api/workflows/plain/run', { inputs: { x: '1' } });
  assert.equal(given.status, 400, given.text);
  assert.match(given.body.message, /has no input "x" \(it declares no inputs\)/);

  const bodies: Array<[string, string | undefined, Record<string, string>]> = [
    ['no body', undefined, {}],
    ['an empty JSON body', '', { 'content-type': 'application/json' }],
    ['{}', '{}', { 'content-type': 'application/json' }],
    ['{"inputs": {}}', '{"inputs":{}}', { 'content-type': 'application/json' }],
  ];
  for (const [what, body, headers] of bodies) {
    const r = await request('POST', `${server.url}/api/workflows/plain/run`, body, headers);
    assert.equal(r.status, 202, `${what}: ${r.text}`);
    assert.deepEqual(r.body.run.inputs, {});
    const active = await api.post(`/api/workflows/plain/runs/${r.body.run.number}/rerun`);
    assert.equal(active.status, 409, active.text);
    assert.equal(active.body.error, 'run_active');
    assert.equal((await api.post('/api/workflows/plain/cancel')).status, 202);
  }
});

test('re-run: only failed keeps the outputs of what succeeded; from: X runs X and downstream; the rest are refused clearly', async (t) => {
  const sb = sandbox(t, 'weft-rerun-');
  const server = await serverProcess(t, sb);
  const api = client(server.url);
  const ran = path.join(sb.dir, 'ran');
  const flag = path.join(sb.dir, 'flaky-ok');
  // a: an output that differs at each execution; flaky: fails until the flag exists; join: shows what it received.
  await api.createWorkflow({
    id: 'pipe',
    inputs: { target: { default: 'staging' } },
    jobs: {
      a: { run: `echo a >> ${ran}; echo "::set-output sha=$$-$(date +%s%N)"` },
      flaky: { run: `echo flaky >> ${ran}; test -f ${flag}` },
      join: { needs: ['a', 'flaky'], run: `echo join >> ${ran}; echo "::set-output got=$UPSTREAM_A_SHA@$WEFT_INPUT_TARGET"` },
      side: { run: `echo side >> ${ran}` },
    },
  });
  const first = await api.post('/api/workflows/pipe/run', { inputs: { target: 'prod' } });
  assert.equal(first.status, 202, first.text);
  await startWorker(t, sb, server.url);
  const run1 = await api.settled('pipe');
  assert.equal(run1.status, 'failed');
  assert.equal(jobOf(run1, 'join').state, 'skipped');
  const sha = jobOf(run1, 'a').outputs.sha as string;
  assert.ok(sha, JSON.stringify(jobOf(run1, 'a')));

  // Refusals, before any re-run starts.
  const refuse = async (p: string, body: unknown, status: number, code: string, message: RegExp) => {
    const r = await api.post(p, body);
    assert.equal(r.status, status, `${p} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error, code, r.text);
    assert.match(r.body.message, message);
  };
  await refuse('/api/workflows/pipe/runs/7/rerun', undefined, 404, 'run_not_found', /has no run #7 \(latest is 1\)/);
  await refuse('/api/workflows/nope/runs/1/rerun', undefined, 404, 'workflow_not_found', /nope/);
  await refuse('/api/workflows/pipe/runs/1/rerun', { only: 'some' }, 400, 'invalid_request', /body\.only must be one of: failed, all/);
  await refuse('/api/workflows/pipe/runs/1/rerun', { from: 'nope' }, 400, 'invalid_request', /has no job "nope"/);
  await refuse('/api/workflows/pipe/runs/1/rerun', { from: 'a', only: 'all' }, 400, 'invalid_request', /"only" or "from", not both/);
  await refuse('/api/workflows/pipe/runs/1/rerun', { only: 'failed', why: 1 }, 400, 'invalid_request', /unknown field "why"/);
  await refuse('/api/workflows/pipe/runs/0/rerun', undefined, 400, 'invalid_request', /params\.run/);

  fs.writeFileSync(flag, '');
  fs.rmSync(ran);
  // No body: only failed. a and side are kept with their outputs; flaky runs again, then join.
  const second = await request('POST', `${server.url}/api/workflows/pipe/runs/1/rerun`);
  assert.equal(second.status, 202, second.text);
  assert.equal(second.body.run.number, 2);
  assert.equal(second.body.run.rerun_of, 1);
  assert.deepEqual(second.body.run.inputs, { target: 'prod' });
  assert.equal(jobOf(second.body, 'a').state, 'success');
  assert.deepEqual(jobOf(second.body, 'a').outputs, { sha });
  assert.equal(jobOf(second.body, 'a').started_at_ms, jobOf(run1, 'a').started_at_ms, 'a kept job keeps its times');
  assert.notEqual(jobOf(second.body, 'flaky').state, 'success');
  assert.notEqual(jobOf(second.body, 'join').state, 'success');
  const run2 = await api.settled('pipe');
  assert.equal(run2.status, 'success', JSON.stringify(run2));
  assert.deepEqual(jobOf(run2, 'join').outputs, { got: `${sha}@prod` }, 'join received the kept output of a, and the inputs of run 1');
  assert.deepEqual(lines(ran).sort(), ['flaky', 'join']);

  // Everything succeeded: nothing to re-run with only failed.
  await refuse('/api/workflows/pipe/runs/2/rerun', { only: 'failed' }, 409, 'nothing_to_rerun', /every job of run #2/);

  // from: flaky runs flaky and join again; a (kept since run 1) and side keep theirs.
  fs.rmSync(ran);
  const third = await api.post('/api/workflows/pipe/runs/2/rerun', { from: 'flaky' });
  assert.equal(third.status, 202, third.text);
  const run3 = await api.settled('pipe');
  assert.equal(run3.run.number, 3);
  assert.equal(run3.status, 'success');
  assert.deepEqual(lines(ran).sort(), ['flaky', 'join']);
  assert.deepEqual(jobOf(run3, 'join').outputs, { got: `${sha}@prod` });

  // from: join, whose needs are all kept: queued at once with their outputs.
  fs.rmSync(ran);
  const fromJoin = await api.post('/api/workflows/pipe/runs/3/rerun', { from: 'join' });
  assert.equal(fromJoin.status, 202, fromJoin.text);
  assert.notEqual(jobOf(fromJoin.body, 'join').state, 'pending');
  const joined = await api.settled('pipe');
  assert.deepEqual(lines(ran), ['join']);
  assert.deepEqual(jobOf(joined, 'join').outputs, { got: `${sha}@prod` });

  // only all: every job again, a with a new output that join receives.
  fs.rmSync(ran);
  assert.equal((await api.post('/api/workflows/pipe/runs/4/rerun', { only: 'all' })).status, 202);
  const run4 = await api.settled('pipe');
  assert.deepEqual(lines(ran).sort(), ['a', 'flaky', 'join', 'side']);
  assert.notEqual(jobOf(run4, 'a').outputs.sha, sha);
  assert.deepEqual(jobOf(run4, 'join').outputs, { got: `${jobOf(run4, 'a').outputs.sha}@prod` });

  const history = await api.get('/api/workflows/pipe/runs');
  assert.deepEqual(
    history.body.map((r: any) => [r.run_number, r.status, r.rerun_of, r.inputs.target]),
    [[5, 'success', 4, 'prod'], [4, 'success', 3, 'prod'], [3, 'success', 2, 'prod'], [2, 'success', 1, 'prod'], [1, 'failed', null, 'prod']],
  );
});

test('re-run from a changed definition: a removed job is gone, a new one runs, an input removed since is dropped', async (t) => {
  const sb = sandbox(t, 'weft-rerun-');
  const server = await serverProcess(t, sb);
  const api = client(server.url);
  await api.createWorkflow({ id: 'chg', inputs: { old: {}, keep: {} }, jobs: { a: { run: 'true' }, gone: { run: 'false' } } });
  assert.equal((await api.post('/api/workflows/chg/run', { inputs: { old: '1', keep: '2' } })).status, 202);
  await startWorker(t, sb, server.url);
  assert.equal((await api.settled('chg')).status, 'failed');
  const put = await api.put('/api/workflows/chg', { inputs: { keep: {}, added: { default: 'd' } }, jobs: { a: { run: 'true' }, b: { needs: ['a'], run: 'true' } } });
  assert.equal(put.status, 200, put.text);
  const r = await api.post('/api/workflows/chg/runs/1/rerun', {});
  assert.equal(r.status, 202, r.text);
  assert.deepEqual(r.body.run.inputs, { added: 'd', keep: '2' });
  assert.deepEqual(r.body.jobs.map((j: any) => [j.id, j.state]), [['a', 'success'], ['b', 'queued']]);
  const done = await until(async () => ((await api.status('chg')).status === 'success' ? true : null), 'the re-run to succeed');
  assert.ok(done);
});
