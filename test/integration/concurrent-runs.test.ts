/**
 * Concurrent runs end to end (README "How a run works"): a workflow with `concurrency: {max_runs: 2,
 * when_full: queue}` and two real `weft worker` processes runs two runs at once; a third is queued and
 * starts when `weft cancel --run 1` frees a slot, while run 2 goes on to finish. The workers talk to
 * the server through a recording proxy that answers 404 for the batch paths, so each job polls its own
 * cancellation, and every poll must name the run of the job it holds.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { hasPython, spawnPythonWorker } from '../helpers/process.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

const BATCH_PATHS = /^\/api\/jobs\/(claim|report|heartbeat)-batch$/;

/** Forwards to `target`, recording each request's method and URL; batch paths answer 404 as an older server does. */
async function recordingProxy(t: TestContext, target: string): Promise<{ url: string; seen: Array<{ method: string; url: string }> }> {
  const seen: Array<{ method: string; url: string }> = [];
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    seen.push({ method: req.method ?? 'GET', url });
    if (BATCH_PATHS.test(url.split('?')[0]!)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not_found', message: `Route ${req.method}:${url} not found` }));
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    if (req.headers['content-type']) headers['content-type'] = req.headers['content-type'];
    const up = http.request(target + url, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableEnded) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const jobA = (doc: any) => doc.jobs.find((j: any) => j.id === 'a');

test('two workers run two runs of one workflow at once; a third waits queued and starts when weft cancel --run 1 frees a slot', { timeout: 90_000 }, async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, { REAP_INTERVAL_SECS: '1' });
  const api = client(srv.url);
  const proxy = await recordingProxy(t, srv.url);
  const gate = path.join(sb.dir, 'go');
  await api.createWorkflow({
    id: 'cc',
    concurrency: { max_runs: 2, when_full: 'queue' },
    jobs: { a: { run: `while [ ! -f "${gate}-$WEFT_RUN" ]; do sleep 0.1; done; echo "run $WEFT_RUN done"` } },
  });
  for (const id of ['w1', 'w2']) {
    const w = track(t, spawnWeft(['worker'], { SERVER_URL: proxy.url, WORKER_ID: id, CONCURRENCY: '1', POLL_SECS: '0.2', CANCEL_POLL_SECS: '0.2', KILL_GRACE_SECS: '1', WORKER_LABELS: undefined }, sb.dir));
    await w.waitFor(/weft worker \S+ started/);
  }

  assert.equal((await api.run('cc')).run_number, 1);
  // Run 2 is started and followed by the CLI, which must keep to run 2 when run 3 becomes the latest.
  const follow = track(t, spawnWeft(['run', 'cc', '--follow'], { SERVER_URL: srv.url }, sb.dir));
  await until(async () => (await api.status('cc')).run_number === 2, 'weft run to start run 2');
  const third = await api.post('/api/workflows/cc/run');
  assert.equal(third.status, 202, third.text);
  assert.equal(third.body.status, 'queued');
  assert.equal(third.body.run_number, 3);
  assert.deepEqual(third.body.jobs.map((j: any) => [j.id, j.state]), [['a', 'pending']]);

  // Both runs' jobs run at once, one on each worker.
  const running = await until(async () => {
    const docs = await Promise.all([1, 2].map(async (n) => (await api.get(`/api/workflows/cc/runs/${n}`)).body));
    return docs.every((d) => d.status === 'running' && jobA(d).state === 'running') ? docs : null;
  }, 'runs 1 and 2 both running on a worker', 20_000);
  assert.deepEqual(new Set(running.map((d) => jobA(d).worker_id ?? jobA(d).metadata?.worker_id)).size, 2, JSON.stringify(running.map(jobA)));
  assert.equal((await api.get('/api/workflows/cc/runs/3')).body.status, 'queued');
  const history = (await api.get('/api/workflows/cc/runs')).body;
  assert.deepEqual(history.map((r: any) => [r.run_number, r.status]), [[3, 'queued'], [2, 'running'], [1, 'running']]);
  assert.deepEqual(history[0].job_counts, { pending: 1 });

  const cancel = track(t, spawnWeft(['cancel', 'cc', '--run', '1'], { SERVER_URL: srv.url }, sb.dir));
  assert.equal(await cancel.exited, 0, cancel.output());
  assert.match(cancel.output(), /cancelled 1 job of run 1: a/);

  // The freed slot goes to run 3, which a worker then takes; run 2 runs on.
  await until(async () => {
    const d = (await api.get('/api/workflows/cc/runs/3')).body;
    return d.status === 'running' && jobA(d).state === 'running';
  }, 'queued run 3 to start on the freed worker', 20_000);
  assert.equal((await api.get('/api/workflows/cc/runs/2')).body.status, 'running');
  assert.equal((await api.get('/api/jobs/cc/a/cancelled?run=1')).body, true);
  assert.equal((await api.get('/api/jobs/cc/a/cancelled?run=2')).body, false);
  assert.equal((await api.get('/api/jobs/cc/a/cancelled')).body, false, 'without a run: the newest running run');
  const missing = await api.get('/api/jobs/cc/a/cancelled?run=9');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'run_not_found');

  fs.writeFileSync(`${gate}-2`, '');
  fs.writeFileSync(`${gate}-3`, '');
  for (const n of [2, 3]) {
    await until(async () => (await api.get(`/api/workflows/cc/runs/${n}`)).body.status === 'success', `run ${n} to succeed`, 20_000);
  }
  assert.equal((await api.get('/api/workflows/cc/runs/1')).body.status, 'cancelled');
  assert.equal(await follow.exited, 0, follow.output());
  assert.match(follow.output(), /run 2 of cc: success/);

  // Every cancellation poll named the run of the job it was for, run 1's among them.
  const polls = proxy.seen.filter((s) => s.method === 'GET' && /^\/api\/jobs\/cc\/a\/cancelled/.test(s.url));
  assert.ok(polls.length > 0, 'the workers polled their jobs\' cancellation');
  assert.deepEqual(polls.filter((p) => !/\?run=\d+$/.test(p.url)), [], 'every poll names its run');
  assert.ok(polls.some((p) => p.url.endsWith('?run=1')));
});

test('when_full reject refuses a third run naming the active ones; cancel without a run ends every active run, ?run=N one', async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb);
  const api = client(srv.url);
  // No worker carries the label: the runs stay running until cancelled.
  await api.createWorkflow({ id: 'rj', concurrency: { max_runs: 2 }, jobs: [{ id: 'a', command: 'true', required_labels: ['nobody'] }] });
  await api.run('rj');
  await api.run('rj');
  const refused = await api.post('/api/workflows/rj/run');
  assert.equal(refused.status, 409);
  assert.equal(refused.body.error, 'run_active');
  assert.deepEqual(refused.body.run_numbers, [1, 2]);
  assert.match(refused.body.message, /#1, #2/);

  const bad = await api.post('/api/workflows/rj/cancel?run=0');
  assert.equal(bad.status, 400);
  const unknown = await api.post('/api/workflows/rj/cancel?run=7');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error, 'run_not_found');

  const one = await api.post('/api/workflows/rj/cancel?run=2');
  assert.equal(one.status, 202);
  assert.deepEqual(one.body.cancelled_runs, [2]);
  assert.deepEqual(one.body.cancelled_jobs, ['a']);
  assert.equal((await api.get('/api/workflows/rj/runs/1')).body.status, 'running');

  await api.run('rj');
  const all = await api.post('/api/workflows/rj/cancel');
  assert.equal(all.status, 202);
  assert.deepEqual(all.body.cancelled_runs, [1, 3]);
  assert.equal(all.body.run_number, 3);
  assert.equal(all.body.status, 'cancelled');
  const again = await api.post('/api/workflows/rj/cancel');
  assert.deepEqual(again.body.cancelled_runs, []);
});

test('a run queued through one server starts, once a run ended through another, on the reaper pass of weft scheduler', { timeout: 60_000 }, async (t) => {
  const sb = sandbox(t);
  // Two API servers without a reaper on one database: neither heard of the other's queued run.
  const a = await serverProcess(t, sb, { API_ONLY: '1' });
  const b = await serverProcess(t, sb, { API_ONLY: '1' });
  const apiA = client(a.url);
  const apiB = client(b.url);
  await apiA.createWorkflow({ id: 'q', concurrency: { when_full: 'queue' }, jobs: { a: { run: 'true' } } });
  assert.equal((await apiA.run('q')).status, 'running');
  assert.equal((await apiA.run('q')).status, 'queued');
  const claimed = await apiB.claim('w1');
  assert.equal(claimed?.job.run_number, 1);
  assert.equal((await apiB.post(`/api/jobs/${claimed!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await apiB.get('/api/workflows/q/runs/1')).body.status, 'success');
  assert.equal((await apiB.get('/api/workflows/q/runs/2')).body.status, 'queued', 'server b does not know run 2 waits');

  const scheduler = track(t, spawnWeft(['scheduler'], { ...sb.env, REAP_INTERVAL_SECS: '1' }, sb.dir));
  await scheduler.waitFor(/weft scheduler started/);
  await until(async () => (await apiA.get('/api/workflows/q/runs/2')).body.status === 'running', 'run 2 to start on the reaper pass', 15_000);
  const next = await apiB.claim('w1');
  assert.equal(next?.job.run_number, 2);

  // With no reaper left, the server that queued a run starts it itself once it ends the run before it.
  scheduler.kill('SIGTERM');
  await scheduler.exited;
  assert.equal((await apiA.run('q')).status, 'queued');
  assert.equal((await apiA.post(`/api/jobs/${next!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await apiA.get('/api/workflows/q/runs/3')).body.status, 'running', 'started before the complete was answered');
});

test('the Python example worker polls the cancellation of the run it holds', { skip: !hasPython, timeout: 60_000 }, async (t) => {
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb);
  const api = client(srv.url);
  const proxy = await recordingProxy(t, srv.url);
  await api.createWorkflow({ id: 'py', concurrency: { max_runs: 2 }, jobs: { a: { run: 'sleep 30' } } });
  await api.run('py');
  const worker = spawnPythonWorker(t, { SERVER_URL: proxy.url, WORKER_ID: 'py-1', POLL_SECS: '0.2' }, sb.dir);
  await until(async () => jobA((await api.get('/api/workflows/py/runs/1')).body).state === 'running', 'the Python worker to take run 1');
  assert.equal((await api.post('/api/workflows/py/cancel?run=1')).status, 202);
  await until(() => /aborting py\/a: cancelled/.test(worker.output()), 'the Python worker to stop the cancelled job', 15_000);
  const polls = proxy.seen.filter((s) => s.method === 'GET' && s.url.startsWith('/api/jobs/py/a/cancelled'));
  assert.ok(polls.length > 0);
  assert.deepEqual(polls.filter((p) => p.url !== '/api/jobs/py/a/cancelled?run=1'), []);
});
