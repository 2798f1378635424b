/**
 * Traces (README "Traces (OpenTelemetry)") end to end: a real `weft server` and real `weft worker`
 * processes export to an OTLP/HTTP receiver in the test. The spans hang together across processes:
 * the run's span, each attempt's span below it (its `queue` and `execute` parts below that), the
 * worker's span of the command below the attempt's, and each job's TRACEPARENT naming the span it runs
 * under. Without an endpoint nothing of OpenTelemetry is loaded and nothing is sent.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp.js';
import { sandbox as makeSandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';

const sandbox = (t: TestContext) => makeSandbox(t, 'weft-otel-');

/** OTEL_* settings of the test runner's own environment must not leak in. */
const NO_OTEL: Record<string, string | undefined> = {
  OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_HEADERS: undefined,
  OTEL_SERVICE_NAME: undefined,
  OTEL_RESOURCE_ATTRIBUTES: undefined,
  OTEL_SDK_DISABLED: undefined,
  OTEL_TRACES_EXPORTER: undefined,
};

/** Tracing on, with batches sent every 100 ms rather than every 5 s. */
const otel = (receiver: OtlpReceiver, service: string) => ({
  ...NO_OTEL,
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_SERVICE_NAME: service,
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

async function worker(t: TestContext, sb: Sandbox, serverUrl: string, env: Record<string, string | undefined>) {
  const p = track(t, spawnWeft(['worker'], { WORKER_ID: undefined, LEASE_TTL_SECS: undefined, HEARTBEAT_SECS: undefined, CONCURRENCY: undefined, POLL_SECS: '0.2', SERVER_URL: serverUrl, ...env }, sb.dir));
  await p.waitFor(/weft worker \S+ started/);
  return p;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

test('a run, its attempts, the workers’ commands and the HTTP requests reach the OTLP receiver as one trace', async (t) => {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.close());
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, otel(receiver, 'weft-test-server'));
  const api = client(srv.url);
  // One worker traces its commands, the other does not: the first hands its command a TRACEPARENT
  // naming its own span, the second the attempt's as the server gave it.
  await worker(t, sb, srv.url, { ...otel(receiver, 'weft-test-worker'), WORKER_ID: 'traced-w', WORKER_LABELS: 'traced' });
  await worker(t, sb, srv.url, { ...NO_OTEL, WORKER_ID: 'plain-w', WORKER_LABELS: 'plain' });

  await api.createWorkflow({
    id: 'traced',
    jobs: {
      // Fails its first attempt, so that the run has a retried attempt.
      build: {
        labels: ['traced'],
        retries: 1,
        run: 'echo "::set-output tp=$TRACEPARENT"; test "$WEFT_ATTEMPT" = 1',
      },
      report: { needs: 'build', labels: ['plain'], run: 'echo "::set-output tp=$TRACEPARENT"' },
    },
  });
  await api.run('traced');
  const doc = await api.settled('traced');
  assert.equal(doc.status, 'success', JSON.stringify(doc.jobs));
  const outputs = (id: string) => doc.jobs.find((j: any) => j.id === id).outputs as { tp: string };

  const find = (pred: (s: ReceivedSpan) => boolean) => receiver.spans.filter(pred);
  const waitFor = (what: string, pred: (s: ReceivedSpan) => boolean, n = 1) =>
    until(() => (find(pred).length >= n ? find(pred) : null), `${what} at the receiver`, 60_000, 50);

  const [run] = await waitFor('the run span', (s) => s.name === 'run traced');
  assert.equal(run!.service, 'weft-test-server', 'OTEL_SERVICE_NAME names the server');
  assert.equal(run!.parentSpanId, '', 'the run span is the root of its trace');
  assert.equal(run!.kind, 1, 'internal');
  assert.deepEqual([run!.attributes['weft.workflow.id'], run!.attributes['weft.run.number'], run!.attributes['weft.run.status']], ['traced', 1, 'success']);
  const trace = run!.traceId;

  const attempts = await waitFor('three attempt spans', (s) => s.name.startsWith('job '), 3);
  assert.equal(attempts.length, 3, 'each attempt exported once');
  for (const a of attempts) {
    assert.equal(a.traceId, trace, `${a.name}: in the run's trace`);
    assert.equal(a.parentSpanId, run!.spanId, `${a.name}: a child of the run span`);
  }
  const attempt = (job: string, n: number) => attempts.find((a) => a.attributes['weft.job.id'] === job && a.attributes['weft.job.attempt'] === n)!;
  const failed = attempt('build', 0);
  const build = attempt('build', 1);
  const report = attempt('report', 0);
  assert.deepEqual(
    [failed.attributes['weft.job.result'], failed.attributes['weft.job.retried'], failed.statusCode, failed.attributes['weft.worker.id']],
    ['failure', true, 2, 'traced-w'],
    'the failed attempt, retried',
  );
  assert.deepEqual(
    { ...build.attributes, 'weft.job.queue_wait_ms': typeof build.attributes['weft.job.queue_wait_ms'] },
    {
      'weft.workflow.id': 'traced',
      'weft.run.number': 1,
      'weft.job.id': 'build',
      'weft.job.name': 'build',
      'weft.job.attempt': 1,
      'weft.job.labels': ['traced'],
      'weft.job.result': 'success',
      'weft.job.retried': false,
      'weft.worker.id': 'traced-w',
      'weft.job.queue_wait_ms': 'number',
    },
  );
  assert.deepEqual([report.attributes['weft.worker.id'], report.attributes['weft.job.labels'], report.attributes['weft.job.result']], ['plain-w', ['plain'], 'success']);
  assert.ok(failed.endMs <= build.startMs, 'the retry becomes claimable after the failed attempt ended');
  assert.ok(run!.startMs <= failed.startMs && build.endMs <= report.startMs && report.endMs <= run!.endMs, 'the attempts lie within the run, in order');

  // Each attempt's queue wait and execution, as child spans that split it at the claim.
  for (const a of attempts) {
    const [queue] = await waitFor(`${a.name}'s queue span`, (s) => s.name === 'queue' && s.parentSpanId === a.spanId);
    const [execute] = await waitFor(`${a.name}'s execute span`, (s) => s.name === 'execute' && s.parentSpanId === a.spanId);
    assert.deepEqual([queue!.startMs, queue!.endMs, execute!.startMs, execute!.endMs], [a.startMs, execute!.startMs, queue!.endMs, a.endMs]);
  }

  // The worker that traces exports a span around each command, a child of its attempt's span, and
  // the command's TRACEPARENT names that span.
  const commands = await waitFor('two command spans', (s) => s.name === 'command build', 2);
  assert.ok(commands.every((c) => c.service === 'weft-test-worker' && c.traceId === trace));
  const command = commands.find((c) => c.parentSpanId === build.spanId);
  assert.ok(command, 'the second attempt’s command span is a child of its attempt span');
  assert.ok(commands.some((c) => c.parentSpanId === failed.spanId && c.statusCode === 2 && c.attributes['process.exit.code'] === 1), 'the failed command too, with its exit code');
  assert.deepEqual(TRACEPARENT.exec(outputs('build').tp)?.slice(1), [trace, command.spanId], 'build’s TRACEPARENT names the worker’s command span');
  // The worker that does not trace passes the server's TRACEPARENT on: the attempt's span.
  assert.deepEqual(TRACEPARENT.exec(outputs('report').tp)?.slice(1), [trace, report.spanId], 'report’s TRACEPARENT names its attempt span');

  // HTTP server spans: the workers' claims and reports among them.
  const http = await waitFor('the HTTP span of a claim', (s) => s.kind === 2 && s.attributes['http.route'] === '/api/jobs/claim');
  assert.equal(http[0]!.name, 'POST /api/jobs/claim');
  assert.equal(http[0]!.service, 'weft-test-server');
  assert.deepEqual([http[0]!.attributes['http.request.method'], http[0]!.attributes['http.response.status_code']], ['POST', 200]);
  await waitFor('the HTTP span of a completion', (s) => s.kind === 2 && s.name === 'POST /api/jobs/:lease_id/complete');
  assert.ok(receiver.requests.every((r) => r.path === '/v1/traces' && r.contentType.startsWith('application/json')), 'OTLP/HTTP JSON on /v1/traces');
});

test('a cancel ends the running attempt’s span as cancelled, exported with the run’s span', async (t) => {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.close());
  const sb = sandbox(t);
  const srv = await serverProcess(t, sb, otel(receiver, 'weft'));
  const api = client(srv.url);
  await worker(t, sb, srv.url, { ...NO_OTEL, WORKER_ID: 'w', KILL_GRACE_SECS: '1' });
  await api.createWorkflow({ id: 'long', jobs: { sleeper: { run: 'sleep 600' } } });
  await api.run('long');
  await until(async () => (await api.jobState('long', 'sleeper')).state === 'running', 'the job to run');
  assert.equal((await api.post('/api/workflows/long/cancel')).status, 202);
  const spans = await until(() => {
    const run = receiver.spans.find((s) => s.name === 'run long');
    const job = receiver.spans.find((s) => s.name === 'job sleeper');
    return run && job ? { run, job } : null;
  }, 'the run and attempt spans');
  assert.equal(spans.run.attributes['weft.run.status'], 'cancelled');
  assert.equal(spans.job.parentSpanId, spans.run.spanId);
  assert.deepEqual([spans.job.attributes['weft.job.result'], spans.job.attributes['weft.worker.id'], spans.job.statusCode], ['cancelled', 'w', 0]);
  assert.ok(spans.job.endMs <= spans.run.endMs);
});

/** Records every module specifier resolved in the process (as NODE_OPTIONS=--import loads it). */
function resolveRecorder(dir: string): { options: string; loaded(): string[] } {
  const log = path.join(dir, 'resolved.txt');
  const hooks = path.join(dir, 'resolve-hooks.mjs');
  fs.writeFileSync(
    hooks,
    `import fs from 'node:fs';\nexport async function resolve(specifier, context, next) {\n  fs.appendFileSync(${JSON.stringify(log)}, specifier + '\\n');\n  return next(specifier, context);\n}\n`,
  );
  const register = path.join(dir, 'register.mjs');
  fs.writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify('file://' + hooks)});\n`);
  return { options: `--import ${register}`, loaded: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) };
}

test('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry package is loaded and nothing is sent', async (t) => {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.close());
  const sb = sandbox(t);
  const recorder = resolveRecorder(sb.dir);
  // Everything else a deployment might set for OpenTelemetry, but no endpoint.
  const env = { ...NO_OTEL, OTEL_SERVICE_NAME: 'weft', OTEL_BSP_SCHEDULE_DELAY: '100', NODE_OPTIONS: recorder.options };
  const srv = await serverProcess(t, sb, env);
  const api = client(srv.url);
  const w = await worker(t, sb, srv.url, { ...env, WORKER_ID: 'w' });
  await api.createWorkflow({ id: 'quiet', jobs: { a: { run: 'echo "::set-output tp=${TRACEPARENT:-none}"' } } });
  await api.run('quiet');
  const doc = await api.settled('quiet');
  assert.equal(doc.status, 'success');
  assert.deepEqual(doc.jobs[0].outputs, { tp: 'none' }, 'no TRACEPARENT in the job’s env');
  // A graceful stop would send whatever an exporter still held.
  w.kill('SIGTERM');
  srv.kill('SIGTERM');
  assert.deepEqual([await w.exited, await srv.exited], [0, 0]);
  const loaded = recorder.loaded();
  assert.ok(loaded.some((s) => s.includes('fastify')), 'the recorder saw the server’s imports');
  assert.deepEqual(loaded.filter((s) => s.startsWith('@opentelemetry/')), [], 'no OpenTelemetry package imported');
  assert.deepEqual(receiver.requests, [], 'nothing sent');
});
