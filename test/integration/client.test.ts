/**
 * WorkflowClient against a real in-process server: every method, and WorkflowApiError /
 * WorkflowNetworkError on the failure paths.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowApiError, WorkflowClient, WorkflowNetworkError, type LogStreamEvent } from '../../src/client/index.js';
import { startInProcess, type InProcessServer } from '../helpers/server.js';

let srv: InProcessServer;
let weft: WorkflowClient;

before(async () => {
  srv = await startInProcess();
  weft = new WorkflowClient({ baseUrl: `${srv.url}/` });
});
after(() => srv.close());

/** Asserts that `p` rejects with a WorkflowApiError of this status and code. */
async function apiError(p: Promise<unknown>, status: number, statusText: string, code: string): Promise<WorkflowApiError> {
  const err = await p.then(
    () => assert.fail(`expected HTTP ${status}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowApiError, `expected WorkflowApiError, got ${String(err)}`);
  assert.equal(err.status, status);
  assert.equal(err.statusText, statusText);
  assert.equal(err.error, code);
  assert.ok(err.serverMessage.length > 0);
  assert.match(err.message, new RegExp(`${status} ${statusText}`));
  return err;
}

test('workflows: create, put, list with paging and filter, status, run, cancel', async () => {
  const health = await weft.health();
  assert.equal(health.ok, true);
  assert.equal(typeof health.event_loop_delay_ms?.p99, 'number');
  const created = await weft.createWorkflow({ id: 'c1', jobs: { a: { run: 'echo a', labels: ['c1'] } } });
  assert.equal(created.id, 'c1');
  assert.equal(created.status, 'idle');
  await apiError(weft.createWorkflow({ id: 'c1', jobs: { a: { run: 'x' } } }), 409, 'Conflict', 'workflow_exists');
  const bad = await apiError(weft.createWorkflow({ id: 'c9', jobs: { a: { run: 'x', need: 'b' } } }), 400, 'Bad Request', 'invalid_workflow');
  assert.match(bad.serverMessage, /need/);

  const put = await weft.putWorkflow('c2', { jobs: { b: { run: 'echo b', labels: ['c2'] } } });
  assert.equal(put.id, 'c2');
  const updated = await weft.putWorkflow('c2', { jobs: { b: { run: 'echo B', labels: ['c2'] } } });
  assert.equal(updated.jobs[0]!.command, 'echo B');

  assert.deepEqual((await weft.listWorkflows()).map((w) => w.id), ['c1', 'c2']);
  assert.deepEqual((await weft.listWorkflows({ limit: 1, offset: 1 })).map((w) => w.id), ['c2']);
  const run = await weft.runWorkflow('c1');
  assert.equal(run.run_number, 1);
  assert.deepEqual((await weft.listWorkflows({ status: 'queued' })).map((w) => w.id), ['c1']);
  assert.deepEqual((await weft.listWorkflows({ status: 'pending' })).map((w) => w.id), ['c2']);
  await apiError(weft.runWorkflow('c1'), 409, 'Conflict', 'run_active');
  assert.equal((await weft.getStatus('c1')).jobs[0]!.status, 'queued');
  const cancelled = await weft.cancelWorkflow('c1');
  assert.deepEqual(cancelled.cancelled_jobs, ['a']);
  assert.equal(await weft.isCancelled('c1', 'a'), true);
  await apiError(weft.getStatus('nope'), 404, 'Not Found', 'workflow_not_found');
  await apiError(weft.listWorkflows({ limit: -1 }), 400, 'Bad Request', 'invalid_request');
});

test('worker protocol: register, claim, heartbeat, logs, complete, fail; workers list', async () => {
  await weft.createWorkflow({
    id: 'p1',
    jobs: { a: { run: 'echo a', labels: ['p1'] }, b: { run: 'echo b', labels: ['p1'], needs: 'a', retries: 1 } },
  });
  await weft.runWorkflow('p1');
  const reg = await weft.registerWorker('cw', ['p1']);
  assert.equal(reg.status, 'idle');
  assert.equal(await weft.claim('cw', ['other']), null);
  const a = (await weft.claim('cw', ['p1'], 20))!;
  assert.equal(a.job.job_id, 'a');
  assert.equal(a.lease.ttl_secs, 20);
  assert.equal(await weft.isCancelled('p1', 'a'), false);
  const hb = await weft.heartbeat(a.lease.lease_id);
  assert.equal(hb.lease_id, a.lease.lease_id);
  const me = (await weft.listWorkers()).find((w) => w.worker_id === 'cw')!;
  assert.equal(me.status, 'busy');
  assert.equal(me.current_job, 'a');
  assert.equal(me.current_lease?.lease_id, a.lease.lease_id);
  assert.deepEqual(
    await weft.pushLogs(a.lease.lease_id, [
      { sequence: 0, data: 'hello\n', stream: 'stdout' },
      { sequence: 1, data: 'oops\n', stream: 'stderr' },
    ]),
    { ok: true, accepted: 2 },
  );
  const done = await weft.complete(a.lease.lease_id, { greeting: 'hi' });
  assert.deepEqual(done.enqueued, ['b']);
  await apiError(weft.heartbeat(a.lease.lease_id), 409, 'Conflict', 'lease_completed');

  const logs = await weft.getLogs('p1', 'a');
  assert.deepEqual(logs.map((c) => [c.sequence, c.stream, c.data]), [
    [0, 'stdout', 'hello\n'],
    [1, 'stderr', 'oops\n'],
  ]);

  const b = (await weft.claim('cw', ['p1']))!;
  assert.deepEqual(b.job.upstream_outputs, { a: { greeting: 'hi' } });
  const f = await weft.fail(b.lease.lease_id, 'transient', true);
  assert.equal(f.status, 'queued');
  assert.equal(f.attempt, 1);
  const b2 = (await weft.claim('cw', ['p1']))!;
  assert.equal((await weft.fail(b2.lease.lease_id, 'permanent', false)).status, 'failed');
  assert.equal((await weft.getStatus('p1')).status, 'failed');
  await apiError(weft.getLogs('p1', 'zz'), 404, 'Not Found', 'job_not_found');
});

test('streamLogs replays, follows live chunks, resumes after an id and ends with the job', async () => {
  await weft.createWorkflow({ id: 's1', jobs: { a: { run: 'x', labels: ['s1'] } } });
  await weft.runWorkflow('s1');
  const c = (await weft.claim('sw', ['s1']))!;
  await weft.pushLogs(c.lease.lease_id, [{ sequence: 0, data: 'zero\n' }]);

  const seen: LogStreamEvent[] = [];
  const iter = weft.streamLogs('s1', 'a');
  const first = await iter.next();
  assert.equal(first.done, false);
  seen.push(first.value as LogStreamEvent);
  // Live chunks arrive after the replay; then the job ends and so does the iterator.
  await weft.pushLogs(c.lease.lease_id, [{ sequence: 1, data: 'one\n' }]);
  const second = await iter.next();
  seen.push(second.value as LogStreamEvent);
  await weft.complete(c.lease.lease_id, {});
  for await (const ev of iter) seen.push(ev);
  assert.deepEqual(
    seen.map((e) => (e.type === 'log' ? `log ${e.id} ${e.chunk.data.trim()}` : e.type === 'end' ? `end ${e.status}` : e.type)),
    ['log 0 zero', 'log 1 one', 'end success'],
  );

  const resumed: string[] = [];
  for await (const ev of weft.streamLogs('s1', 'a', { lastEventId: 0 })) {
    resumed.push(ev.type === 'log' ? ev.chunk.data.trim() : ev.type);
  }
  assert.deepEqual(resumed, ['one', 'end']);
  await apiError(drain(weft.streamLogs('s1', 'nope')), 404, 'Not Found', 'job_not_found');
});

test('a server that is not there: WorkflowNetworkError naming the call', async () => {
  const gone = new WorkflowClient({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 2000 });
  const err = await gone.listWorkers().then(
    () => assert.fail('expected a network error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowNetworkError, String(err));
  assert.match((err as Error).message, /GET \/api\/workers/);
});

/** A peer that is not weft: answers by `route`, counting the connections it was opened. */
async function oddPeer(t: { after: (fn: () => unknown) => void }, route: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  let connections = 0;
  const server = http.createServer(route);
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections };
}

for (const via of ['node:http', 'a given fetch'] as const) {
  test(`calls through ${via}: kept-alive connections, a proxy's page, a timeout and an abort, each told apart`, async (t) => {
    const fetched: string[] = [];
    const opts = via === 'a given fetch' ? { fetch: (input: string | URL | Request, init?: RequestInit) => (fetched.push(String(input)), fetch(input, init)) } : {};
    const peer = await oddPeer(t, (req, res) => {
      if (req.url === '/api/workers') return void res.setHeader('content-type', 'application/json').end('[]');
      if (req.url === '/api/workflows/proxy/status') return void res.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' }).end('<h1>upstream down</h1>');
      // /api/workflows/slow/status: never answered (the client's deadline or its signal ends it).
    });
    const c = new WorkflowClient({ baseUrl: peer.url, timeoutMs: 300, ...opts });
    for (let i = 0; i < 5; i++) assert.deepEqual(await c.listWorkers(), []);
    if (via === 'node:http') assert.equal(peer.connections(), 1, 'calls one after another share one kept-alive connection');
    const proxy = await c.getStatus('proxy').then(() => assert.fail('expected a 502'), (e: unknown) => e);
    assert.ok(proxy instanceof WorkflowApiError, String(proxy));
    assert.deepEqual([proxy.status, proxy.statusText, proxy.error, proxy.serverMessage], [502, 'Bad Gateway', 'http_error', '<h1>upstream down</h1>']);
    const slow = await c.getStatus('slow').then(() => assert.fail('expected a timeout'), (e: unknown) => e);
    assert.ok(slow instanceof WorkflowNetworkError, String(slow));
    assert.deepEqual([slow.name, slow.timedOut, slow.message], ['TimeoutError', true, 'GET /api/workflows/slow/status: no answer within 0.3 s']);
    const stop = new AbortController();
    const aborted = c.getStatus('slow').then(() => assert.fail('expected an abort'), (e: unknown) => e);
    // Through the worker-protocol path, which takes a signal.
    const claimed = c.claim('w', [], 30, { signal: stop.signal, timeoutMs: 60_000 }).then(() => assert.fail('expected an abort'), (e: unknown) => e);
    stop.abort();
    const a = await claimed;
    assert.ok(a instanceof WorkflowNetworkError, String(a));
    assert.deepEqual([a.timedOut, a.message], [false, 'POST /api/jobs/claim: aborted']);
    assert.ok((await aborted) instanceof WorkflowNetworkError);
    assert.deepEqual(fetched.length > 0, via === 'a given fetch', 'a given fetch is the one used');
  });
}

async function drain(it: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of it) {
    // consume
  }
}

test('runWorkflow with inputs, and rerun: only failed by default, all, from; their refusals', async () => {
  await weft.createWorkflow({ id: 'ri', inputs: { who: { required: true } }, jobs: { a: { run: 'true', labels: ['ri'] }, b: { run: 'true', labels: ['ri'] } } });
  await apiError(weft.runWorkflow('ri'), 400, 'Bad Request', 'invalid_request');
  const run = await weft.runWorkflow('ri', { inputs: { who: 'me' } });
  assert.deepEqual(run.run?.inputs, { who: 'me' });
  const claimed = await weft.claim('ri-w', ['ri']);
  assert.ok(claimed);
  await weft.complete(claimed.lease.lease_id, { out: '1' });
  const other = await weft.claim('ri-w', ['ri']);
  assert.ok(other);
  await weft.fail(other.lease.lease_id, 'no', false);

  const again = await weft.rerun('ri', 1);
  assert.equal(again.run?.rerun_of, 1);
  assert.deepEqual(again.run?.inputs, { who: 'me' });
  assert.deepEqual(again.jobs.map((j) => [j.id, j.state]).sort(), [[claimed.job.job_id, 'success'], [other.job.job_id, 'queued']].sort());
  await apiError(weft.rerun('ri', 1), 409, 'Conflict', 'run_active');
  await weft.cancelWorkflow('ri');
  assert.equal((await weft.rerun('ri', 2, { only: 'all' })).jobs.every((j) => j.state === 'queued'), true);
  await weft.cancelWorkflow('ri');
  await apiError(weft.rerun('ri', 3, { from: 'zz' }), 400, 'Bad Request', 'invalid_request');
  await apiError(weft.rerun('ri', 9), 404, 'Not Found', 'run_not_found');
});
