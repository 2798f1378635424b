/**
 * Trace context and span building (README "Traces (OpenTelemetry)"): W3C traceparent values as weft
 * writes and reads them (hostile ones ignored), the ids derived from a run, the spans of an attempt,
 * when tracing is on, and the HTTP server spans with a caller's traceparent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { formatTraceparent, parseTraceparent, type SpanRecord } from '../../src/domain/trace-context.js';
import { attemptSpanId, attemptSpans, attemptTraceparent, runSpanId, runTraceId } from '../../src/engine/trace-spans.js';
import { tracesConfigured } from '../../src/runtime/telemetry.js';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/server.js';
import { until } from '../helpers/http.js';
import type { JobRecord } from '../../src/store/store.js';
import { Engine } from '../../src/engine/engine.js';
import { buildApp } from '../../src/http/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('traceparent: written as version 00, read back; the sampled flag is bit 0', () => {
  assert.equal(formatTraceparent(TRACE, SPAN), `00-${TRACE}-${SPAN}-01`);
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, sampled: true });
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-00`), { traceId: TRACE, spanId: SPAN, sampled: false });
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-03`), { traceId: TRACE, spanId: SPAN, sampled: true });
  // A later version may add fields; version 00 may not.
  assert.deepEqual(parseTraceparent(`01-${TRACE}-${SPAN}-01-more`), { traceId: TRACE, spanId: SPAN, sampled: true });
});

test('traceparent: anything else is no trace context at all', () => {
  for (const bad of [
    undefined,
    42,
    '',
    'hello',
    `00-${TRACE}-${SPAN}-01-extra`,
    `ff-${TRACE}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${TRACE}-${SPAN}`,
    `00-${TRACE}x-${SPAN}-01`,
    `00-${TRACE}-${SPAN}-01\n00-${TRACE}-${SPAN}-01`,
    `00-${TRACE}-${SPAN}-01-${'x'.repeat(600)}`,
    '$(touch /tmp/pwned)',
  ]) {
    assert.equal(parseTraceparent(bad), null, JSON.stringify(bad));
  }
});

const RUN = { workflow_id: 'build', run_number: 3, created_at_ms: 1_700_000_000_000 };

test('ids derived from the run: the same on every server, apart for anything that differs', () => {
  assert.match(runTraceId(RUN), /^[0-9a-f]{32}$/);
  assert.match(runSpanId(RUN), /^[0-9a-f]{16}$/);
  assert.equal(runTraceId({ ...RUN }), runTraceId(RUN));
  assert.equal(attemptSpanId(RUN, 'a', 0), attemptSpanId({ ...RUN }, 'a', 0));
  const traces = new Set([
    runTraceId(RUN),
    runTraceId({ ...RUN, run_number: 4 }),
    runTraceId({ ...RUN, workflow_id: 'build2' }),
    // The workflow deleted and created again numbers its runs from 1 again: its creation time differs.
    runTraceId({ ...RUN, created_at_ms: RUN.created_at_ms + 1 }),
  ]);
  assert.equal(traces.size, 4);
  const spans = new Set([runSpanId(RUN), attemptSpanId(RUN, 'a', 0), attemptSpanId(RUN, 'a', 1), attemptSpanId(RUN, 'b', 0)]);
  assert.equal(spans.size, 4);
  // Parts are kept apart: "a" + "1" is not "a1".
  assert.notEqual(attemptSpanId({ ...RUN, workflow_id: 'x', run_number: 11 }, 'j', 0), attemptSpanId({ ...RUN, workflow_id: 'x1', run_number: 1 }, 'j', 0));
  assert.equal(attemptTraceparent(RUN, 'a', 1), `00-${runTraceId(RUN)}-${attemptSpanId(RUN, 'a', 1)}-01`);
  assert.deepEqual(parseTraceparent(attemptTraceparent(RUN, 'a', 1)), { traceId: runTraceId(RUN), spanId: attemptSpanId(RUN, 'a', 1), sampled: true });
});

function ranJob(over: Partial<JobRecord>): JobRecord {
  return {
    workflow_id: 'build', run_number: 3, job_id: 'test', name: 'Test', labels: ['linux'], attempt: 1, ready_at_ms: 1000,
    started_at_ms: 1500, finished_at_ms: null, worker_id: 'w1', group_id: null, error: null, ...over,
  } as JobRecord;
}

test('an attempt span: claimable to end, under the run span, with queue and execute parts split at the claim', () => {
  const [attempt, queue, execute] = attemptSpans(RUN, { ran: ranJob({}), endedAtMs: 4000, result: 'failure', retried: true, error: 'exit 1' });
  assert.deepEqual(
    [attempt!.traceId, attempt!.spanId, attempt!.parentSpanId, attempt!.name, attempt!.startMs, attempt!.endMs, attempt!.error],
    [runTraceId(RUN), attemptSpanId(RUN, 'test', 1), runSpanId(RUN), 'job test', 1000, 4000, 'exit 1'],
  );
  assert.deepEqual(attempt!.attributes, {
    'weft.workflow.id': 'build',
    'weft.run.number': 3,
    'weft.job.id': 'test',
    'weft.job.name': 'Test',
    'weft.job.attempt': 1,
    'weft.job.labels': ['linux'],
    'weft.job.result': 'failure',
    'weft.job.retried': true,
    'weft.job.queue_wait_ms': 500,
    'weft.worker.id': 'w1',
  });
  const part = (s: SpanRecord | undefined) => [s!.name, s!.parentSpanId, s!.startMs, s!.endMs];
  assert.deepEqual(part(queue), ['queue', attempt!.spanId, 1000, 1500]);
  assert.deepEqual(part(execute), ['execute', attempt!.spanId, 1500, 4000]);
  assert.notEqual(queue!.spanId, execute!.spanId);
  assert.deepEqual(attemptSpans(RUN, { ran: ranJob({ started_at_ms: null }), endedAtMs: 4000, result: 'cancelled', retried: false, error: null }), [], 'never claimed: no span');
  const [ok] = attemptSpans(RUN, { ran: ranJob({}), endedAtMs: 4000, result: 'success', retried: false, error: null });
  assert.equal(ok!.error, undefined, 'a success leaves the status unset');
});

test('tracing is on with an OTLP traces endpoint, unless the SDK or the traces exporter is turned off', () => {
  assert.equal(tracesConfigured({}), false);
  assert.equal(tracesConfigured({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' }), false);
  assert.equal(tracesConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }), false);
  assert.equal(tracesConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
  assert.equal(tracesConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
  assert.equal(tracesConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), false);
  assert.equal(tracesConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
});

test('HTTP server spans: one per request, a child of the caller’s traceparent, a fresh trace for a bad one', async (t) => {
  const spans: SpanRecord[] = [];
  const dir = tempDir();
  const logger = pino({ level: 'silent' });
  const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
  const engine = new Engine({ store, logger });
  const app = await buildApp({ engine, logger, traceSink: { export: (s) => spans.push(...s) } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    await app.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  // One after the other: a request's span is made once its answer has gone out, before the next is sent.
  await fetch(`${base}/readyz`, { headers: { traceparent: `00-${TRACE}-${SPAN}-00` } });
  await fetch(`${base}/api/workflows/nope/status?secret=query`, { headers: { traceparent: `00-${TRACE}-${SPAN}-01` } });
  await fetch(`${base}/healthz`, { headers: { traceparent: 'garbage' } });
  await until(() => spans.length >= 2, 'two spans');
  const [status, health, ...rest] = spans;
  assert.deepEqual(rest, [], 'a caller that does not sample gets no span');
  assert.deepEqual(
    [status!.name, status!.kind, status!.traceId, status!.parentSpanId, status!.attributes['http.route'], status!.attributes['url.path'], status!.attributes['http.response.status_code'], status!.error],
    ['GET /api/workflows/:id/status', 'server', TRACE, SPAN, '/api/workflows/:id/status', '/api/workflows/nope/status', 404, undefined],
    'the caller’s trace; the path without its query; a 4xx is not the server’s error',
  );
  assert.deepEqual([health!.name, health!.parentSpanId], ['GET /healthz', undefined]);
  assert.notEqual(health!.traceId, TRACE);
  assert.match(health!.traceId, /^[0-9a-f]{32}$/);
});
