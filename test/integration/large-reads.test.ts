/**
 * Reads of large workflows (docs/api.md "GET /api/workflows" and "Logs"): a list of workflows of
 * 10,000 jobs each is written without holding the event loop, `jobs=false` lists summaries, and logs
 * page (`after`/`limit`) and stop at MAX_LOG_BYTES_PER_ATTEMPT, which the worker hears and obeys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, request, type HttpResult } from '../helpers/http.js';
import { assertResponsive, idleControl, percentile, watchWithControl, wideWorkflow } from '../helpers/load.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track } from '../helpers/server.js';
import { logTruncationMarker } from '../../src/domain/log-budget.js';

test('three 10,000-job workflows: four full lists read at once keep the event loop responsive, and equal the status documents; jobs=false lists summaries', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { SQLITE_SYNCHRONOUS: 'NORMAL', LOG_LEVEL: 'warn' });
  const pid = server.proc.pid!;
  const control = await idleControl(t);
  for (const id of ['big-a', 'big-b', 'big-c']) {
    assert.equal((await request('POST', `${server.url}/api/workflows`, wideWorkflow(id, 10_000))).status, 201);
    assert.equal((await request('POST', `${server.url}/api/workflows/${id}/run`)).status, 202);
  }
  await new Promise((r) => setTimeout(r, 2000));

  const watch = watchWithControl({ url: server.url, pid }, control, 100);
  const started = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const res = await fetch(`${server.url}/api/workflows`);
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 300));
  const { p99s, controlP99s } = await watch.stop();
  t.diagnostic(JSON.stringify({ seconds, bytes: answers[0]!.text.length, healthz_p99_max_ms: Math.max(...p99s), healthz_p99_p95_ms: percentile(p99s, 95), control_p99_p95_ms: percentile(controlP99s, 95) }));

  for (const a of answers) {
    assert.equal(a.status, 200);
    assert.match(a.type ?? '', /^application\/json/);
    assert.equal(a.text, answers[0]!.text, 'every answer is the same');
  }
  const list = JSON.parse(answers[0]!.text);
  assert.deepEqual(list.map((d: any) => [d.id, d.jobs.length]), [['big-a', 10_000], ['big-b', 10_000], ['big-c', 10_000]]);
  // Written in pieces, the text is still JSON.stringify's of the status document, key for key.
  const status = await request('GET', `${server.url}/api/workflows/big-b/status`);
  assert.equal(JSON.stringify(list[1]), status.text);
  assertResponsive(p99s, controlP99s);

  const summaries = await request('GET', `${server.url}/api/workflows?jobs=false`);
  assert.equal(summaries.status, 200, summaries.text);
  assert.ok(summaries.text.length < 10_000, `${summaries.text.length} bytes for three summaries`);
  assert.deepEqual(
    summaries.body.map((w: any) => [w.id, w.jobs, w.job_counts, w.run_number, w.status]),
    ['big-a', 'big-b', 'big-c'].map((id) => [id, undefined, { queued: 10_000 }, 1, 'running']),
  );
  const { jobs: _jobs, run, ...rest } = status.body;
  const { inputs: _inputs, ...runBrief } = run;
  assert.deepEqual(summaries.body[1], { ...rest, run: runBrief, job_counts: { queued: 10_000 } }, 'a summary is the status document without jobs');
  assert.equal((await request('GET', `${server.url}/api/workflows?jobs=maybe`)).status, 400);
});

test('logs page with after and limit, opt-in: without them every chunk comes as before', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow({ id: 'w', jobs: [{ id: 'a', command: 'true' }] });
  await api.run('w');
  const c = await api.claim();
  const chunks = Array.from({ length: 25 }, (_, i) => ({ sequence: i, data: `line ${i}\n` }));
  assert.equal((await api.post(`/api/jobs/${c!.lease.lease_id}/logs`, { chunks })).status, 200);
  const base = '/api/workflows/w/jobs/a/logs';

  const whole = await api.get(base);
  assert.equal(whole.status, 200, whole.text);
  assert.deepEqual(whole.body.map((x: any) => x.sequence), chunks.map((x) => x.sequence));
  assert.equal(whole.headers.get('x-weft-next-after'), null);
  assert.equal(whole.headers.get('x-weft-attempt'), '0');

  const seen: number[] = [];
  let after: string | null = null;
  let pages = 0;
  do {
    const page: HttpResult = await api.get(`${base}?limit=10${after === null ? '' : `&after=${after}`}`);
    assert.equal(page.status, 200, page.text);
    seen.push(...page.body.map((x: any) => x.sequence));
    after = page.headers.get('x-weft-next-after');
    pages++;
  } while (after !== null);
  assert.deepEqual(seen, chunks.map((x) => x.sequence));
  assert.equal(pages, 3);
  assert.deepEqual((await api.get(`${base}?after=22`)).body.map((x: any) => x.sequence), [23, 24]);
  assert.deepEqual((await api.get(`${base}?after=24&limit=5`)).body, []);
  for (const bad of ['limit=0', 'limit=1001', 'after=-2', 'after=x']) {
    const r = await api.get(`${base}?${bad}`);
    assert.equal(r.status, 400, `${bad}: ${r.text}`);
    assert.equal(r.body.error, 'invalid_request');
  }
});

test('an attempt\'s log stops at MAX_LOG_BYTES_PER_ATTEMPT with a marker line; the push answer says truncated', async (t) => {
  const s = await startInProcess({ maxLogBytesPerAttempt: 1000 });
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow({ id: 'w', jobs: [{ id: 'a', command: 'true' }] });
  await api.run('w');
  const c = await api.claim();
  const push = (from: number, n: number) =>
    api.post(`/api/jobs/${c!.lease.lease_id}/logs`, { chunks: Array.from({ length: n }, (_, i) => ({ sequence: from + i, data: 'x'.repeat(99) + '\n' })) });
  const first = await push(0, 5);
  assert.deepEqual(first.body, { ok: true, accepted: 5 }, 'below the cap the answer is what it always was');
  const second = await push(5, 10);
  assert.deepEqual(second.body, { ok: true, accepted: 5, truncated: true });
  const third = await push(15, 1);
  assert.deepEqual(third.body, { ok: true, accepted: 0, truncated: true });
  const log = (await api.get('/api/workflows/w/jobs/a/logs')).body;
  assert.equal(log.length, 11);
  assert.deepEqual(log.at(-1), { ...log.at(-1), sequence: 10, stream: 'stderr', data: logTruncationMarker(1000) });
});

test('the worker stops sending an attempt\'s log once the server says it is truncated; the job still succeeds', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { MAX_LOG_BYTES_PER_ATTEMPT: '4096', LOG_LEVEL: 'warn' });
  const api = client(server.url);
  // 20 KB at once, then a line every 0.3 s for 3 s: a worker that kept sending would push each.
  const command = "head -c 20000 /dev/zero | tr '\\0' a; echo; for i in 1 2 3 4 5 6 7 8 9 10; do echo more $i; sleep 0.3; done";
  await api.createWorkflow({ id: 'chatty', jobs: [{ id: 'talk', command }] });
  await api.run('chatty');
  const w = track(t, spawnWeft(['worker'], { SERVER_URL: server.url, POLL_SECS: '0.2', CONCURRENCY: undefined, WORKER_LABELS: undefined, LOG_FORMAT: 'json' }, sb.dir));
  const doc = await api.settled('chatty', 30_000);
  assert.equal(doc.status, 'success');
  await w.waitFor(/truncated this attempt's log/);
  const log = (await api.get('/api/workflows/chatty/jobs/talk/logs')).body;
  assert.equal(log.at(-1).data, logTruncationMarker(4096));
  const metrics = (await request('GET', `${server.url}/metrics`)).text;
  const pushes = [...metrics.matchAll(/^weft_http_request_duration_seconds_count\{method="POST",route="\/api\/jobs\/:lease_id\/logs"[^}]*\} (\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  assert.ok(pushes >= 1 && pushes <= 2, `${pushes} log pushes reached the server`);
});
