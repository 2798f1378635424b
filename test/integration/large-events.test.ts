/**
 * Live events under a large workflow (docs/api.md "Live events", README "Limits"), against a spawned
 * server whose memory and event loop are measured: a 10,000-job run watched by a list listener that
 * reads and one that never reads must cost bounded memory and keep the loop responsive, and a client
 * that stops reading is cut off once its backlog passes STREAM_BACKLOG_BYTES.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, until } from '../helpers/http.js';
import { assertResponsive, completeAll, idleControl, percentile, readingListener, rssBytes, stalledListener, watchWithControl, wideWorkflow } from '../helpers/load.js';
import { sandbox, serverProcess } from '../helpers/server.js';

const MB = 1024 * 1024;

test('a 10,000-job run watched on /api/events by a reader and a stalled client: bounded memory, responsive loop, summary events', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { SQLITE_SYNCHRONOUS: 'NORMAL', LOG_LEVEL: 'warn' });
  const pid = server.proc.pid!;
  const control = await idleControl(t);
  const create = await request('POST', `${server.url}/api/workflows`, wideWorkflow('big', 10_000));
  assert.equal(create.status, 201, create.text.slice(0, 300));
  const run = await request('POST', `${server.url}/api/workflows/big/run`);
  assert.equal(run.status, 202, run.text.slice(0, 300));
  // Creating and starting 10,000 jobs is work of its own: out of the /healthz window before the watch.
  await new Promise((r) => setTimeout(r, 2000));
  const baseline = rssBytes(pid);

  const reader = await readingListener(`${server.url}/api/events`);
  t.after(() => reader.close());
  const stalled = await stalledListener(`${server.url}/api/events`);
  t.after(() => stalled.destroy());
  // Both servers' start-up has left the 2 s window /healthz reports by now.
  const watch = watchWithControl({ url: server.url, pid }, control);
  const started = Date.now();
  const done = await completeAll(server.url, { batch: 100, pauseMs: 40 });
  assert.equal(done, 10_000);
  // The reader hears the end of the run: the last summary says every job succeeded.
  await until(() => reader.last('workflow')?.status === 'success', 'the list stream to announce the finished run', 30_000, 50);
  const { maxRss, p99s, controlP99s } = await watch.stop();
  const last = reader.last('workflow');
  const figures = {
    seconds: (Date.now() - started) / 1000,
    baseline_rss_mb: Math.round(baseline / MB),
    max_rss_mb: Math.round(maxRss / MB),
    growth_mb: Math.round((maxRss - baseline) / MB),
    reader_bytes: reader.bytes(),
    workflow_events: reader.count('workflow'),
    healthz_p99_max_ms: Math.max(...p99s),
    healthz_p99_p95_ms: percentile(p99s, 95),
    control_p99_p95_ms: percentile(controlP99s, 95),
  };
  t.diagnostic(JSON.stringify(figures));

  assert.equal(last.jobs, undefined, 'a workflow event is a summary, without the jobs');
  assert.deepEqual(last.job_counts, { success: 10_000 });
  assert.equal(last.run_number, 1);
  assert.ok(reader.bytes() < 20 * MB, `the reader was sent ${reader.bytes()} bytes for one workflow's changes`);
  assert.ok(maxRss - baseline < 150 * MB, `RSS grew by ${figures.growth_mb} MB (baseline ${figures.baseline_rss_mb} MB)`);
  assertResponsive(p99s, controlP99s);
});

/** weft_sse_streams{stream="events"} of GET /metrics. */
async function openEventStreams(url: string): Promise<number> {
  const m = await request('GET', `${url}/metrics`);
  const line = /^weft_sse_streams\{stream="events"\} (\d+)/m.exec(m.text);
  return line ? Number(line[1]) : 0;
}

test('a client that stops reading is cut off once its backlog passes STREAM_BACKLOG_BYTES, on the list and on a workflow stream; a reader is not', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { SQLITE_SYNCHRONOUS: 'NORMAL', LOG_LEVEL: 'error', STREAM_BACKLOG_BYTES: String(MB) });
  // Large events make a large backlog quickly: a 100 KB name in every list event, 32 KB of outputs
  // in every job event that ends a job. Past the kernel's socket buffers (a few MB), they pile up in the server. The
  // reader may fall ten list events behind before it is cut off too, which it never does.
  const create = await request('POST', `${server.url}/api/workflows`, wideWorkflow('wide', 300, 'n'.repeat(100_000)));
  assert.equal(create.status, 201, create.text.slice(0, 300));
  assert.equal((await request('POST', `${server.url}/api/workflows/wide/run`)).status, 202);
  const reader = await readingListener(`${server.url}/api/events`);
  t.after(() => reader.close());
  const stalledList = await stalledListener(`${server.url}/api/events`);
  t.after(() => stalledList.destroy());
  const stalledWorkflow = await stalledListener(`${server.url}/api/workflows/wide/events`);
  t.after(() => stalledWorkflow.destroy());
  await until(async () => (await openEventStreams(server.url)) === 3, 'the three streams to be open');

  const driving = completeAll(server.url, { batch: 10, pauseMs: 10, outputs: { blob: 'o'.repeat(32 * 1024) } });
  await until(async () => (await openEventStreams(server.url)) === 1, 'both stalled streams to be cut off', 60_000, 100);
  assert.equal(await driving, 300);
  // What each stalled client can still read is what the kernel held for it when the server let go.
  const listBytes = await stalledList.drain(30_000);
  const workflowBytes = await stalledWorkflow.drain(30_000);
  t.diagnostic(JSON.stringify({ listBytes, workflowBytes, readerBytes: reader.bytes() }));
  await until(() => reader.last('workflow')?.status === 'success', 'the reader to hear the end of the run', 30_000, 50);
  assert.equal(reader.ended, false, 'the reader is still connected');
});
