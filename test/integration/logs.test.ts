/**
 * Logs (docs/api.md "Logs"): pushing chunks through a lease, reading them back per run and
 * attempt, and the server-sent-events stream that replays stored chunks, follows live ones and
 * ends when the job reaches a terminal state.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startInProcess, type InProcessServer } from '../helpers/server.js';
import { client, until, type HttpResult } from '../helpers/http.js';
import { json, openSse, type SseConnection, type SseEvent } from '../helpers/sse.js';

type Client = ReturnType<typeof client>;

interface Env extends InProcessServer {
  c: Client;
  /** Opens an SSE connection that is closed (client side) before the server at the end of the test. */
  stream(wf: string, job: string, headers?: Record<string, string>): Promise<SseConnection>;
}

async function serve(t: TestContext, opts: Parameters<typeof startInProcess>[0] = {}): Promise<Env> {
  const s = await startInProcess(opts);
  const streams: SseConnection[] = [];
  t.after(async () => {
    for (const st of streams) st.close();
    await s.close();
  });
  return Object.assign(s, {
    c: client(s.url),
    async stream(wf: string, job: string, headers: Record<string, string> = {}) {
      const conn = await openSse(`${s.url}/api/workflows/${wf}/jobs/${job}/logs/stream`, headers);
      streams.push(conn);
      return conn;
    },
  });
}

function assertError(r: { status: number; headers: Headers; body: any; text: string }, status: number | number[], code?: string): void {
  const statuses = Array.isArray(status) ? status : [status];
  assert.ok(statuses.includes(r.status), `expected HTTP ${statuses.join(' or ')}, got ${r.status}: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/, `error answer must be JSON: ${r.text}`);
  assert.equal(typeof r.body?.error, 'string', r.text);
  assert.equal(typeof r.body?.message, 'string', r.text);
  assert.ok(r.body.message.length > 0);
  if (code !== undefined) assert.equal(r.body.error, code, r.text);
}

/** A workflow with a build job (one retry) and a test job after it; run and build claimed. */
async function runningBuild(c: Client, id = 'logs', opts: { ttl?: number; retries?: number } = {}) {
  await c.createWorkflow({
    id,
    jobs: { build: { run: 'make', retries: opts.retries ?? 1 }, test: { run: 'make test', needs: ['build'] } },
  });
  await c.run(id);
  const claim = await c.claim('w1', [], opts.ttl ?? 30);
  assert.ok(claim, 'build is claimable');
  assert.equal(claim.job.job_id, 'build');
  return claim;
}

async function push(c: Client, leaseId: string, chunks: unknown[]): Promise<HttpResult> {
  return c.post(`/api/jobs/${leaseId}/logs`, { chunks });
}

async function pushOk(c: Client, leaseId: string, chunks: unknown[]): Promise<void> {
  const r = await push(c, leaseId, chunks);
  assert.equal(r.status, 200, r.text);
}

async function logs(c: Client, wf: string, job: string, query = ''): Promise<any[]> {
  const r = await c.get(`/api/workflows/${wf}/jobs/${job}/logs${query}`);
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.body), r.text);
  return r.body;
}

const line = (sequence: number, data: string, stream = 'stdout') => ({ sequence, data, stream });
const logEvents = (events: SseEvent[]) => events.filter((e) => e.event === 'log');
const seqs = (events: SseEvent[]) => logEvents(events).map((e) => json(e).sequence);

// ------------------------------------------------------------------ push + read

describe('pushing and reading logs', () => {
  test('chunks read back in sequence order with every field', async (t) => {
    const { c } = await serve(t);
    const { lease } = await runningBuild(c);
    const before = Date.now();
    await pushOk(c, lease.lease_id, [
      { workflow_id: 'logs', job_id: 'build', sequence: 0, data: 'compiling\n', timestamp_ms: 1_700_000_000_000, stream: 'stdout' },
      { sequence: 1, data: 'warning: unused\n', stream: 'stderr' },
    ]);
    await pushOk(c, lease.lease_id, [{ sequence: 2, data: 'done\n' }]);

    const chunks = await logs(c, 'logs', 'build');
    assert.equal(chunks.length, 3);
    assert.deepEqual(chunks.map((ch) => ch.sequence), [0, 1, 2]);
    for (const ch of chunks) {
      assert.equal(ch.workflow_id, 'logs');
      assert.equal(ch.job_id, 'build');
      assert.ok(Number.isInteger(ch.timestamp_ms), JSON.stringify(ch));
      assert.equal(typeof ch.data, 'string');
      assert.ok(['stdout', 'stderr'].includes(ch.stream));
    }
    assert.deepEqual(
      chunks.map((ch) => [ch.data, ch.stream]),
      [
        ['compiling\n', 'stdout'],
        ['warning: unused\n', 'stderr'],
        ['done\n', 'stdout'],
      ],
    );
    assert.equal(chunks[0].timestamp_ms, 1_700_000_000_000, 'a timestamp the worker sent is kept');
    assert.ok(chunks[2].timestamp_ms >= before - 1000 && chunks[2].timestamp_ms <= Date.now() + 1000, 'missing timestamp: server time');
    // Another job of the same workflow has none.
    assert.deepEqual(await logs(c, 'logs', 'test'), []);
  });

  test('a re-sent sequence is stored once', async (t) => {
    const { c } = await serve(t);
    const { lease } = await runningBuild(c);
    await pushOk(c, lease.lease_id, [line(0, 'a'), line(1, 'b')]);
    // A retried request (same chunks) and a batch that overlaps the last one.
    await pushOk(c, lease.lease_id, [line(0, 'a'), line(1, 'b')]);
    await pushOk(c, lease.lease_id, [line(1, 'b'), line(2, 'c')]);
    const chunks = await logs(c, 'logs', 'build');
    assert.deepEqual(chunks.map((ch) => [ch.sequence, ch.data]), [
      [0, 'a'],
      [1, 'b'],
      [2, 'c'],
    ]);
  });

  test('chunks pushed out of order still read back in order', async (t) => {
    const { c } = await serve(t);
    const { lease } = await runningBuild(c);
    await pushOk(c, lease.lease_id, [line(5, 'f'), line(3, 'd')]);
    await pushOk(c, lease.lease_id, [line(4, 'e')]);
    await pushOk(c, lease.lease_id, [line(2, 'c'), line(0, 'a'), line(1, 'b')]);
    const chunks = await logs(c, 'logs', 'build');
    assert.deepEqual(chunks.map((ch) => ch.sequence), [0, 1, 2, 3, 4, 5]);
    assert.equal(chunks.map((ch) => ch.data).join(''), 'abcdef');
  });

  test('attempt=N selects another attempt; the default is the latest', async (t) => {
    const { c } = await serve(t);
    const first = await runningBuild(c);
    assert.equal(first.job.attempt, 0);
    await pushOk(c, first.lease.lease_id, [line(0, 'try 0 line 0'), line(1, 'try 0 line 1', 'stderr')]);
    const failed = await c.post(`/api/jobs/${first.lease.lease_id}/fail`, { error: 'exit 1', retryable: true });
    assert.equal(failed.status, 200, failed.text);

    const second = await c.claim('w2', []);
    assert.ok(second);
    assert.equal(second.job.job_id, 'build');
    assert.equal(second.job.attempt, 1);
    await pushOk(c, second.lease.lease_id, [line(0, 'try 1 line 0'), line(1, 'try 1 line 1'), line(2, 'try 1 line 2')]);

    const latest = await logs(c, 'logs', 'build');
    assert.deepEqual(latest.map((ch) => ch.data), ['try 1 line 0', 'try 1 line 1', 'try 1 line 2']);
    assert.deepEqual(await logs(c, 'logs', 'build', '?attempt=1'), latest);
    const old = await logs(c, 'logs', 'build', '?attempt=0');
    assert.deepEqual(old.map((ch) => [ch.sequence, ch.data, ch.stream]), [
      [0, 'try 0 line 0', 'stdout'],
      [1, 'try 0 line 1', 'stderr'],
    ]);
    // The old attempt's lease is spent: it cannot add to either attempt.
    assertError(await push(c, first.lease.lease_id, [line(2, 'late')]), 409);
    assert.equal((await logs(c, 'logs', 'build', '?attempt=0')).length, 2);

    assertError(await c.get('/api/workflows/logs/jobs/build/logs?attempt=-1'), 400);
    assertError(await c.get('/api/workflows/logs/jobs/build/logs?attempt=x'), 400);
  });

  test('run=N reads an older run; run=0, an unknown run and unknown parameters are refused', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'runs', jobs: { only: { run: 'echo' } } });
    await c.run('runs');
    const one = (await c.claim('w1'))!;
    await pushOk(c, one.lease.lease_id, [line(0, 'run one')]);
    assert.equal((await c.post(`/api/jobs/${one.lease.lease_id}/complete`, { outputs: {} })).status, 200);

    const second = await c.run('runs');
    assert.equal(second.run_number, 2);
    // The new run has no logs yet.
    assert.deepEqual(await logs(c, 'runs', 'only'), []);
    const two = (await c.claim('w1'))!;
    await pushOk(c, two.lease.lease_id, [line(0, 'run two'), line(1, 'run two again')]);

    assert.deepEqual((await logs(c, 'runs', 'only')).map((ch) => ch.data), ['run two', 'run two again']);
    assert.deepEqual((await logs(c, 'runs', 'only', '?run=2')).map((ch) => ch.data), ['run two', 'run two again']);
    assert.deepEqual((await logs(c, 'runs', 'only', '?run=1')).map((ch) => ch.data), ['run one']);
    assert.deepEqual((await logs(c, 'runs', 'only', '?run=1&attempt=0')).map((ch) => ch.data), ['run one']);

    assertError(await c.get('/api/workflows/runs/jobs/only/logs?run=0'), [400, 404]);
    assertError(await c.get('/api/workflows/runs/jobs/only/logs?run=3'), [400, 404]);
    assertError(await c.get('/api/workflows/runs/jobs/only/logs?run=abc'), 400);
    assertError(await c.get('/api/workflows/runs/jobs/only/logs?runs=1'), 400);
  });

  test('an unknown workflow or job is 404', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'idle', jobs: { a: { run: 'x' } } });
    // A known job of a workflow that never ran has no logs, but is not an error.
    assert.deepEqual(await logs(c, 'idle', 'a'), []);
    assertError(await c.get('/api/workflows/nope/jobs/a/logs'), 404);
    assertError(await c.get('/api/workflows/idle/jobs/nope/logs'), 404);
    await c.run('idle');
    assertError(await c.get('/api/workflows/idle/jobs/nope/logs'), 404);
    assertError(await c.get('/api/workflows/idle/jobs/nope/logs?run=1'), 404);
  });

  test('bad chunks are 400 and nothing of the batch is stored', async (t) => {
    const { c } = await serve(t);
    const { lease } = await runningBuild(c);
    const lid = lease.lease_id;
    assertError(await push(c, lid, [line(0, 'ok'), { sequence: 1, data: 'x', stream: 'other' }]), 400);
    assertError(await push(c, lid, [line(0, 'ok'), { workflow_id: 'someone-else', job_id: 'build', sequence: 1, data: 'x' }]), 400);
    assertError(await push(c, lid, [line(0, 'ok'), { workflow_id: 'logs', job_id: 'test', sequence: 1, data: 'x' }]), 400);
    assertError(await push(c, lid, [{ sequence: -1, data: 'x' }]), 400);
    assertError(await push(c, lid, [{ sequence: 1.5, data: 'x' }]), 400);
    assertError(await push(c, lid, [{ sequence: 0 }]), 400);
    assertError(await push(c, lid, [{ sequence: 0, data: 5 }]), 400);
    assertError(await push(c, lid, [{ sequence: 0, data: 'x', colour: 'red' }]), 400);
    assertError(await c.post(`/api/jobs/${lid}/logs`, {}), 400);
    assertError(await c.post(`/api/jobs/${lid}/logs`, { chunks: 'x' }), 400);
    assert.deepEqual(await logs(c, 'logs', 'build'), []);
    // The lease is still good.
    await pushOk(c, lid, [line(0, 'fine')]);
    assert.deepEqual((await logs(c, 'logs', 'build')).map((ch) => ch.data), ['fine']);
  });

  test('logs on an expired lease are 409', async (t) => {
    // With a reaper, so the job moves on whether expiry is settled at access or by the reaper.
    const { c } = await serve(t, { reapIntervalMs: 100 });
    const { lease } = await runningBuild(c, 'exp', { ttl: 1, retries: 0 });
    assert.equal(lease.ttl_secs, 1);
    await pushOk(c, lease.lease_id, [line(0, 'before expiry')]);
    // The server's own view: the worker stops being busy once its only lease has run out.
    await until(
      async () => {
        const w = (await c.get('/api/workers')).body.find((x: any) => x.worker_id === 'w1');
        return w && w.status !== 'busy' && Date.now() > lease.granted_at_ms + lease.ttl_secs * 1000;
      },
      'the 1 s lease to expire',
      5000,
    );
    const r = await push(c, lease.lease_id, [line(1, 'after expiry')]);
    assertError(r, 409);
    assert.deepEqual((await logs(c, 'exp', 'build')).map((ch) => ch.data), ['before expiry']);
    // The expiry counted as a failure of the job (no retries left).
    const job = await until(async () => {
      const j = await c.jobState('exp', 'build');
      return j.state === 'failed' ? j : null;
    }, 'the job to fail after its lease expired', 5000);
    assert.equal(job.error, 'lease expired');
  });
});

// ------------------------------------------------------------------ SSE

describe('log stream (SSE)', () => {
  test('replays stored chunks, follows live ones, ends when the job completes', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const { lease } = await runningBuild(c);
    await pushOk(c, lease.lease_id, [line(0, 'stored 0'), line(1, 'stored 1', 'stderr')]);

    const s = await env.stream('logs', 'build');
    assert.equal(s.status, 200);
    assert.match(s.headers.get('content-type') ?? '', /^text\/event-stream/);

    await s.waitFor((evs) => logEvents(evs).length >= 2, 'the two stored chunks');
    const [e0, e1] = logEvents(s.events);
    assert.equal(e0!.event, 'log');
    assert.equal(e0!.id, '0');
    assert.equal(e1!.id, '1');
    const c0 = json(e0!);
    assert.equal(c0.workflow_id, 'logs');
    assert.equal(c0.job_id, 'build');
    assert.equal(c0.sequence, 0);
    assert.equal(c0.data, 'stored 0');
    assert.equal(c0.stream, 'stdout');
    assert.ok(Number.isInteger(c0.timestamp_ms));
    assert.equal(json(e1!).stream, 'stderr');
    assert.equal(json(e1!).data, 'stored 1');
    assert.equal(s.ended, false, 'the stream stays open while the job runs');

    // Live chunks arrive after the replay, in order.
    await pushOk(c, lease.lease_id, [line(2, 'live 2')]);
    await s.waitFor((evs) => logEvents(evs).length >= 3, 'the live chunk');
    await pushOk(c, lease.lease_id, [line(3, 'live 3\nwith a newline')]);
    await s.waitFor((evs) => logEvents(evs).length >= 4, 'the second live chunk');
    assert.deepEqual(seqs(s.events), [0, 1, 2, 3]);
    assert.deepEqual(logEvents(s.events).map((e) => e.id), ['0', '1', '2', '3']);
    assert.equal(json(logEvents(s.events)[3]!).data, 'live 3\nwith a newline');

    // Completion ends the stream: an `end` event, then the server closes the connection.
    assert.equal((await c.post(`/api/jobs/${lease.lease_id}/complete`, { outputs: {} })).status, 200);
    await s.waitFor((evs) => evs.some((e) => e.event === 'end'), 'the end event');
    await s.waitForEnd();
    const last = s.events[s.events.length - 1]!;
    assert.equal(last.event, 'end', 'nothing follows the end event');
    assert.equal(json(last).status, 'success');
    assert.deepEqual(seqs(s.events), [0, 1, 2, 3], 'each chunk once');
  });

  test('Last-Event-ID resumes after that sequence', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const { lease } = await runningBuild(c);
    await pushOk(c, lease.lease_id, [line(0, 'a'), line(1, 'b'), line(2, 'c'), line(3, 'd')]);

    const s = await env.stream('logs', 'build', { 'last-event-id': '1' });
    assert.equal(s.status, 200);
    await s.waitFor((evs) => logEvents(evs).length >= 2, 'the chunks after 1');
    await pushOk(c, lease.lease_id, [line(4, 'e')]);
    await s.waitFor((evs) => logEvents(evs).length >= 3, 'the live chunk');
    assert.equal((await c.post(`/api/jobs/${lease.lease_id}/complete`, { outputs: {} })).status, 200);
    await s.waitForEnd();
    assert.deepEqual(seqs(s.events), [2, 3, 4]);
    assert.deepEqual(logEvents(s.events).map((e) => json(e).data), ['c', 'd', 'e']);
    assert.equal(s.events[s.events.length - 1]!.event, 'end');
  });

  test('a stream on an already finished job replays and ends at once', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const { lease } = await runningBuild(c);
    await pushOk(c, lease.lease_id, [line(0, 'one'), line(1, 'two'), line(2, 'three')]);
    assert.equal((await c.post(`/api/jobs/${lease.lease_id}/complete`, { outputs: { k: 'v' } })).status, 200);

    const s = await env.stream('logs', 'build');
    assert.equal(s.status, 200);
    assert.match(s.headers.get('content-type') ?? '', /^text\/event-stream/);
    await s.waitForEnd(5000);
    assert.deepEqual(s.events.map((e) => e.event), ['log', 'log', 'log', 'end']);
    assert.deepEqual(seqs(s.events), [0, 1, 2]);
    assert.equal(json(s.events[3]!).status, 'success');

    // Resuming a finished job sends only what is after the given id.
    const resumed = await env.stream('logs', 'build', { 'last-event-id': '1' });
    await resumed.waitForEnd(5000);
    assert.deepEqual(resumed.events.map((e) => e.event), ['log', 'end']);
    assert.deepEqual(seqs(resumed.events), [2]);
    const upToDate = await env.stream('logs', 'build', { 'last-event-id': '2' });
    await upToDate.waitForEnd(5000);
    assert.deepEqual(upToDate.events.map((e) => e.event), ['end']);

    // A failed job ends the same way, with its status (own server: nothing else is claimable there).
    const env2 = await serve(t);
    const c2 = env2.c;
    await c2.createWorkflow({ id: 'broken', jobs: { x: { run: 'false' } } });
    await c2.run('broken');
    const claim = (await c2.claim('w1'))!;
    assert.equal(claim.job.workflow_id, 'broken');
    await pushOk(c2, claim.lease.lease_id, [line(0, 'oops', 'stderr')]);
    assert.equal((await c2.post(`/api/jobs/${claim.lease.lease_id}/fail`, { error: 'exit 1', retryable: false })).status, 200);
    const failed = await env2.stream('broken', 'x');
    await failed.waitForEnd(5000);
    assert.deepEqual(failed.events.map((e) => e.event), ['log', 'end']);
    assert.equal(json(failed.events[1]!).status, 'failed');
  });

  test('an unknown workflow or job is a JSON 404, not a stream', async (t) => {
    const env = await serve(t);
    await env.c.createWorkflow({ id: 'known', jobs: { a: { run: 'x' } } });
    for (const [wf, job] of [
      ['nope', 'a'],
      ['known', 'nope'],
    ] as const) {
      const s = await env.stream(wf, job);
      assertError(s, 404);
      assert.doesNotMatch(s.headers.get('content-type') ?? '', /event-stream/);
    }
    await env.c.run('known');
    const s = await env.stream('known', 'nope');
    assertError(s, 404);
    // A Last-Event-ID that is not a sequence number is refused the same way, before any stream byte.
    const bad = await env.stream('known', 'a', { 'last-event-id': 'not-a-number' });
    assertError(bad, 400);
  });

  test('the stream follows a retry into the next attempt', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const first = await runningBuild(c);
    const s = await env.stream('logs', 'build');
    await pushOk(c, first.lease.lease_id, [line(0, 'try 0 a'), line(1, 'try 0 b')]);
    await s.waitFor((evs) => logEvents(evs).length >= 2, 'attempt 0 chunks');
    assert.equal((await c.post(`/api/jobs/${first.lease.lease_id}/fail`, { error: 'exit 1', retryable: true })).status, 200);
    const second = (await c.claim('w2'))!;
    assert.equal(second.job.attempt, 1);
    await pushOk(c, second.lease.lease_id, [line(0, 'try 1 a')]);
    await s.waitFor((evs) => logEvents(evs).length >= 3, 'the attempt 1 chunk');
    assert.equal(s.ended, false, 'a retry does not end the stream');
    assert.equal((await c.post(`/api/jobs/${second.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    await s.waitForEnd();
    assert.deepEqual(logEvents(s.events).map((e) => json(e).data), ['try 0 a', 'try 0 b', 'try 1 a']);
    const last = s.events[s.events.length - 1]!;
    assert.equal(last.event, 'end');
    assert.equal(json(last).status, 'success');
  });

  test('the stream follows a cancel: end event with status cancelled', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const { lease } = await runningBuild(c);
    const s = await env.stream('logs', 'build');
    await pushOk(c, lease.lease_id, [line(0, 'working')]);
    await s.waitFor((evs) => logEvents(evs).length >= 1, 'the live chunk');
    assert.equal((await c.post('/api/workflows/logs/cancel')).status, 202);
    await s.waitForEnd();
    assert.deepEqual(s.events.map((e) => e.event), ['log', 'end']);
    assert.equal(json(s.events[1]!).status, 'cancelled');

    // A stream on the never-started downstream job ends too, as cancelled.
    const downstream = await env.stream('logs', 'test');
    await downstream.waitForEnd(5000);
    assert.deepEqual(downstream.events.map((e) => e.event), ['end']);
    assert.equal(json(downstream.events[0]!).status, 'cancelled');
  });

  test('a stream opened before the job starts follows it from the claim to the end', async (t) => {
    const env = await serve(t);
    const { c } = env;
    await c.createWorkflow({ id: 'later', jobs: { a: { run: 'x' }, b: { run: 'y', needs: ['a'] } } });
    await c.run('later');
    const s = await env.stream('later', 'b');
    assert.equal(s.status, 200);
    const a = (await c.claim('w1'))!;
    assert.equal(a.job.job_id, 'a');
    assert.equal((await c.post(`/api/jobs/${a.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    const b = (await c.claim('w1'))!;
    assert.equal(b.job.job_id, 'b');
    await pushOk(c, b.lease.lease_id, [line(0, 'b says hi')]);
    await s.waitFor((evs) => logEvents(evs).length >= 1, 'b\'s chunk');
    assert.equal((await c.post(`/api/jobs/${b.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    await s.waitForEnd();
    assert.deepEqual(s.events.map((e) => e.event), ['log', 'end']);
    assert.equal(json(s.events[0]!).data, 'b says hi');
  });

  test('a client that disconnects does not disturb the server', async (t) => {
    const env = await serve(t);
    const { c } = env;
    const { lease } = await runningBuild(c);
    const s = await env.stream('logs', 'build');
    await pushOk(c, lease.lease_id, [line(0, 'x')]);
    await s.waitFor((evs) => logEvents(evs).length >= 1, 'the chunk');
    s.close();
    await s.waitForEnd();
    await pushOk(c, lease.lease_id, [line(1, 'y')]);
    assert.equal((await c.post(`/api/jobs/${lease.lease_id}/complete`, { outputs: {} })).status, 200);
    assert.deepEqual((await logs(c, 'logs', 'build')).map((ch) => ch.data), ['x', 'y']);
  });
});
