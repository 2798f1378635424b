/**
 * The API reference (docs/api.md, GET /api/openapi.json): an OpenAPI 3.1 document that lists every
 * route the server registers, whose request examples are valid against their own schemas and are
 * taken by a live server, whose documented answers are what the server sends, and whose body schemas
 * refuse what the server refuses.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { request, until, type HttpResult } from '../helpers/http.js';
import { ROOT, startInProcess, type InProcessServer } from '../helpers/server.js';
import { parseSecretKey } from '../../src/engine/secret-box.js';

interface Operation {
  summary?: string;
  tags?: string[];
  requestBody?: { required?: boolean; content: Record<string, { schema: object; examples?: Record<string, { summary?: string; value: unknown }> }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: object }> }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string };
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
}

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const toOpenApi = (url: string) => url.replace(/:(\w+)/g, '{$1}');

let server: InProcessServer;
let doc: Document;
/**
 * Every route the server registered, as "METHOD /path/{param}", without Fastify's automatic HEAD, the
 * CORS preflight and the routes hidden from the document (the dashboard's page and assets).
 */
const registered = new Set<string>();
// strict: an unknown keyword or a misspelt one in a documented schema fails the test.
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validators = new Map<object, ValidateFunction>();
const validate = (schema: object, value: unknown): string | null => {
  let v = validators.get(schema);
  if (!v) validators.set(schema, (v = ajv.compile(schema)));
  return v(value) ? null : ajv.errorsText(v.errors);
};

before(async () => {
  server = await startInProcess({
    secretKey: parseSecretKey(randomBytes(32).toString('base64'), 'WEFT_SECRET_KEY'),
    onRoute: (route) => {
      // The dashboard's page and assets are not API; they are left out of the document on purpose.
      if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD' && method !== 'OPTIONS') registered.add(`${method} ${toOpenApi(route.url)}`);
      }
    },
  });
  const r = await request<Document>('GET', `${server.url}/api/openapi.json`);
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  doc = r.body;
});
after(() => server.close());

function operation(key: string): Operation {
  const [method, template] = key.split(' ') as [string, string];
  const op = doc.paths[template]?.[method.toLowerCase()];
  assert.ok(op, `${key} is not in the document`);
  return op;
}

function examplesOf(key: string): [string, unknown][] {
  const media = operation(key).requestBody?.content['application/json'];
  return Object.entries(media?.examples ?? {}).map(([name, e]) => [name, e.value]);
}

/** Routes called by the live walk below, so that it provably covers every route. */
const called = new Set<string>();

/**
 * Calls a documented operation on the live server and checks the answer against what the document
 * says for that status: a JSON body must match its schema, an event stream must be one.
 */
async function call(key: string, params: Record<string, string> = {}, body?: unknown, headers?: Record<string, string>, query = ''): Promise<HttpResult> {
  const [method, template] = key.split(' ') as [string, string];
  const url = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? assert.fail(`no value for {${name}}`)));
  const r = await request(method, server.url + url + query, body, headers);
  called.add(key);
  const responses = operation(key).responses;
  const documented = responses[String(r.status)] ?? responses[`${String(r.status)[0]}XX`];
  assert.ok(documented, `${key} answered ${r.status}, which the document does not list: ${r.text}`);
  const [type, media] = Object.entries(documented.content ?? {})[0] ?? [];
  if (type !== undefined && type !== 'application/json') {
    // Not JSON (an event stream, Prometheus text): the answer must be of the documented type.
    const base = type.split(';')[0]!;
    assert.ok((r.headers.get('content-type') ?? '').startsWith(base), `${key} answered ${r.headers.get('content-type')}, documented ${type}`);
  } else if (media?.schema) {
    const problem = validate(media.schema, r.body);
    assert.equal(problem, null, `${key} answered ${r.status} with a body its documented schema refuses: ${problem}\n${r.text.slice(0, 2000)}`);
  }
  return r;
}

test('the document is OpenAPI 3.1, named and versioned from package.json, and served the same every time', async () => {
  assert.match(doc.openapi, /^3\.1\./);
  assert.equal(doc.info.title, pkg.name);
  assert.equal(doc.info.version, pkg.version);
  const again = await request('GET', `${server.url}/api/openapi.json`);
  assert.deepEqual(again.body, doc);
});

test('every route the server registers is documented with a summary, a known tag and the error shape, and nothing else is', () => {
  assert.ok(registered.size >= 20, `only ${registered.size} routes seen: ${[...registered].join(', ')}`);
  const tags = new Set(doc.tags.map((t) => t.name));
  const documented = new Set(Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`)));
  for (const key of registered) {
    assert.ok(documented.has(key), `${key} is registered but missing from the document`);
    const op = operation(key);
    assert.ok(op.summary, `${key} has no summary`);
    assert.ok(op.tags?.length && op.tags.every((t) => tags.has(t)), `${key} has no tag, or one not in the tag list: ${op.tags}`);
    const success = Object.keys(op.responses).filter((s) => s.startsWith('2'));
    assert.ok(success.length > 0, `${key} documents no success answer`);
    for (const s of Object.keys(op.responses)) assert.ok(op.responses[s]!.description, `${key} ${s} has no description`);
    const clientError = op.responses['4XX']?.content?.['application/json']?.schema as { required?: string[] } | undefined;
    assert.deepEqual(clientError?.required, ['error', 'message'], `${key} does not document the error shape for 4xx`);
  }
  assert.deepEqual([...documented].filter((k) => !registered.has(k)), [], 'documented operations that the server does not have');
});

test('every request body example is valid against its documented schema', () => {
  let count = 0;
  for (const key of registered) {
    const body = operation(key).requestBody;
    if (!body) continue;
    const examples = examplesOf(key);
    assert.ok(examples.length > 0, `${key} takes a body but has no example`);
    for (const [name, value] of examples) {
      const problem = validate(body.content['application/json']!.schema, value);
      assert.equal(problem, null, `${key} example "${name}" does not validate against its own schema: ${problem}`);
      count++;
    }
  }
  assert.ok(count >= 15, `only ${count} examples`);
});

test('every example is taken by a live server, and every route answers what the document says', async () => {
  const created: string[] = [];
  for (const [name, value] of examplesOf('POST /api/workflows')) {
    const r = await call('POST /api/workflows', {}, value);
    assert.equal(r.status, 201, `create example "${name}": ${r.text}`);
    created.push(r.body.id);
  }
  const id = created[0]!;
  for (const [name, value] of examplesOf('PUT /api/workflows/{id}')) {
    const r = await call('PUT /api/workflows/{id}', { id }, value);
    assert.equal(r.status, 200, `put example "${name}": ${r.text}`);
  }
  for (const [, value] of examplesOf('POST /api/workflows/{id}/run')) assert.equal((await call('POST /api/workflows/{id}/run', { id }, value)).status, 202);
  assert.equal((await call('POST /api/workflows/{id}/run', { id })).status, 409, 'a second run while one is active');
  for (const [, value] of examplesOf('POST /api/workers/register')) assert.equal((await call('POST /api/workers/register', {}, value)).status, 200);

  const leases: { lease_id: string; job_id: string }[] = [];
  for (const [name, value] of examplesOf('POST /api/jobs/claim')) {
    const r = await call('POST /api/jobs/claim', {}, value);
    assert.equal(r.status, 200, `claim example "${name}": ${r.text}`);
    if (r.body) leases.push(r.body.lease);
  }
  for (const [, value] of examplesOf('POST /api/jobs/claim-batch')) {
    const r = await call('POST /api/jobs/claim-batch', {}, value);
    assert.equal(r.status, 200, r.text);
    leases.push(...r.body.claims.map((c: { lease: { lease_id: string; job_id: string } }) => c.lease));
  }
  assert.ok(leases.length >= 2, `the PUT example's workflow should give the claim examples two jobs, got ${leases.length}`);
  const [first, second] = leases as [(typeof leases)[0], (typeof leases)[0]];

  // The first example of a lease call must succeed; later ones may find the lease settled (409), never malformed.
  const onLease = async (key: string, lease: string) => {
    const examples = examplesOf(key);
    for (const [i, [name, value]] of examples.entries()) {
      const r = await call(key, { lease_id: lease }, value);
      if (i === 0) assert.equal(r.status, 200, `${key} example "${name}": ${r.text}`);
      else assert.ok(r.status === 200 || r.status === 409, `${key} example "${name}": ${r.status} ${r.text}`);
    }
  };
  await onLease('POST /api/jobs/{lease_id}/heartbeat', first.lease_id);
  await onLease('POST /api/jobs/{lease_id}/logs', first.lease_id);
  // An artifact of the first job, before it completes (README "Artifacts").
  const artifact = 'dist/app.txt';
  const uploaded = await call('PUT /api/jobs/{lease_id}/artifacts/{name}', { lease_id: first.lease_id, name: artifact }, 'hello artifact\n', {
    'content-type': 'application/octet-stream',
    'x-weft-sha256': createHash('sha256').update('hello artifact\n').digest('hex'),
  });
  assert.equal(uploaded.status, 201, uploaded.text);
  await onLease('POST /api/jobs/{lease_id}/complete', first.lease_id);
  await onLease('POST /api/jobs/{lease_id}/fail', second.lease_id);
  // The documented body is optional: no body at all is taken as well.
  assert.equal((await call('POST /api/jobs/{lease_id}/heartbeat', { lease_id: first.lease_id })).status, 409, 'the lease was completed');

  // The batch examples name leases that do not exist: each element answers 409, the batch 200.
  for (const key of ['POST /api/jobs/report-batch', 'POST /api/jobs/heartbeat-batch']) {
    for (const [, value] of examplesOf(key)) {
      const r = await call(key, {}, value);
      assert.equal(r.status, 200, r.text);
      for (const result of r.body.results) assert.equal(result.error?.error, 'lease_not_found', JSON.stringify(result));
    }
  }
  for (const [, value] of examplesOf('POST /api/workflows/{id}/cancel')) assert.equal((await call('POST /api/workflows/{id}/cancel', { id }, value)).status, 202);

  // The routes without a body, so that every answer the document describes is checked against a real one.
  assert.equal((await call('GET /api/workflows')).status, 200);
  assert.equal((await call('GET /api/workflows/{id}', { id })).status, 200);
  assert.equal((await call('GET /api/workflows/{id}/status', { id })).status, 200);
  assert.equal((await call('GET /api/workflows/{id}/status', { id: 'no-such-workflow' })).status, 404);
  assert.equal((await call('GET /api/workers')).status, 200);
  assert.equal((await call('GET /api/jobs/{wf_id}/{job_id}/cancelled', { wf_id: id, job_id: first.job_id })).body, false);
  const logs = await call('GET /api/workflows/{wf_id}/jobs/{job_id}/logs', { wf_id: id, job_id: first.job_id });
  assert.equal(logs.body.length, (examplesOf('POST /api/jobs/{lease_id}/logs')[0]![1] as { chunks: unknown[] }).chunks.length);
  // The job is over: the stream replays its chunks and ends.
  const stream = await call('GET /api/workflows/{wf_id}/jobs/{job_id}/logs/stream', { wf_id: id, job_id: first.job_id });
  assert.match(stream.text, /event: end/);
  assert.equal((await call('GET /api/workflows/{id}/definition', { id })).body.id, id);
  const firstRun = String((await request('GET', `${server.url}/api/workflows/${id}/status`)).body.run_number);
  const listed = await call('GET /api/workflows/{wf_id}/runs/{run}/artifacts', { wf_id: id, run: firstRun });
  assert.deepEqual(listed.body.artifacts.map((a: { name: string }) => a.name), [artifact]);
  const got = await call('GET /api/workflows/{wf_id}/runs/{run}/artifacts/{job_id}/{name}', { wf_id: id, run: firstRun, job_id: first.job_id, name: artifact });
  assert.equal(got.text, 'hello artifact\n');
  const part = await call('GET /api/workflows/{wf_id}/runs/{run}/artifacts/{job_id}/{name}', { wf_id: id, run: firstRun, job_id: first.job_id, name: artifact }, undefined, { range: 'bytes=0-4' });
  assert.deepEqual([part.status, part.text], [206, 'hello']);
  assert.equal((await call('GET /api/workflows/{wf_id}/runs/{run}/artifacts/{job_id}/{name}', { wf_id: id, run: firstRun, job_id: first.job_id, name: 'nope' })).status, 404);
  const runs = await call('GET /api/workflows/{id}/runs', { id });
  assert.ok(runs.body.length >= 1, runs.text);
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}', { id, run: String(runs.body[0].run_number) })).status, 200);
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}', { id, run: '999' })).status, 404);
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}/definition', { id, run: String(runs.body[0].run_number) })).body.id, id);
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}/definition', { id, run: '999' })).body.error, 'run_not_found');
  assert.equal((await call('POST /api/workflows/{id}/runs/{run}/rerun', { id, run: '999' }, { only: 'failed' })).body.error, 'run_not_found');
  // README "Approvals": a root that waits for approval at once; each example decides one run's gate.
  assert.equal((await call('POST /api/workflows', {}, { id: 'gated', jobs: { ship: { approval: { message: 'go?' }, run: 'true' } } })).status, 201);
  for (const verb of ['approve', 'reject'] as const) {
    for (const [name, value] of examplesOf(`POST /api/workflows/{id}/runs/{run}/jobs/{job}/${verb}`)) {
      const started = await call('POST /api/workflows/{id}/run', { id: 'gated' });
      assert.equal(started.status, 202, started.text);
      const r = await call(`POST /api/workflows/{id}/runs/{run}/jobs/{job}/${verb}`, { id: 'gated', run: String(started.body.run_number), job: 'ship' }, value);
      assert.equal(r.status, 200, `${verb} example "${name}": ${r.text}`);
      if (verb === 'approve') assert.equal((await call('POST /api/workflows/{id}/cancel', { id: 'gated' })).status, 202);
      const again = await call(`POST /api/workflows/{id}/runs/{run}/jobs/{job}/${verb}`, { id: 'gated', run: String(started.body.run_number), job: 'ship' });
      assert.equal(again.body.error, 'job_not_awaiting_approval', again.text);
    }
  }
  // Live event streams never end by themselves (test/integration/live-events.test.ts follows them);
  // here their error answers, which come before any stream byte.
  assert.equal((await call('GET /api/workflows/{id}/events', { id: 'no-such-workflow' })).status, 404);
  assert.equal((await call('GET /api/events', {}, undefined, { 'last-event-id': 'not an id' })).status, 400);
  assert.equal((await call('DELETE /api/workflows/{id}', { id: 'no-such-workflow' })).status, 404);
  assert.equal((await call('POST /api/workflows', {}, { id: 'to-delete', jobs: { a: { run: 'true' } } })).status, 201);
  assert.deepEqual((await call('DELETE /api/workflows/{id}', { id: 'to-delete' })).body, { deleted: 'to-delete' });
  for (const [name, value] of examplesOf('PUT /api/secrets/{name}')) {
    const r = await call('PUT /api/secrets/{name}', { name: 'DEPLOY_KEY' }, value);
    assert.equal(r.status, 201, `secret example "${name}": ${r.text}`);
  }
  assert.deepEqual((await call('GET /api/secrets')).body.secrets.map((s: { name: string }) => s.name), ['DEPLOY_KEY']);
  assert.equal((await call('DELETE /api/secrets/{name}', { name: 'DEPLOY_KEY' })).status, 200);
  assert.equal((await call('DELETE /api/secrets/{name}', { name: 'DEPLOY_KEY' })).body.error, 'secret_not_found');
  // README "Triggers and notifications": each example delivered signed, and again; an event; the runs' event.
  assert.equal((await call('POST /api/workflows', {}, { id: 'hooked', on: { webhook: { secret: 'HOOK' }, event: ['deployed'] }, concurrency: { max_runs: 10 }, jobs: { a: { run: 'true' } } })).status, 201);
  assert.equal((await call('PUT /api/secrets/{name}', { name: 'HOOK' }, { value: 'hook secret' })).status, 201);
  for (const [name, value] of examplesOf('POST /api/hooks/{id}')) {
    const body = JSON.stringify(value);
    const headers = { 'x-hub-signature-256': `sha256=${createHmac('sha256', 'hook secret').update(body).digest('hex')}`, 'x-github-event': 'push', 'x-github-delivery': `d-${name}` };
    const r = await call('POST /api/hooks/{id}', { id: 'hooked' }, body, headers);
    assert.equal(r.status, 202, `hook example "${name}": ${r.text}`);
    assert.equal((await call('POST /api/hooks/{id}', { id: 'hooked' }, body, headers)).body.duplicate, true);
    assert.equal((await call('POST /api/hooks/{id}', { id: 'hooked' }, body)).body.error, 'invalid_signature');
  }
  for (const [name, value] of examplesOf('POST /api/events/{name}')) {
    const r = await call('POST /api/events/{name}', { name: 'deployed' }, value);
    assert.equal(r.status, 202, `event example "${name}": ${r.text}`);
    assert.equal(r.body.runs[0].workflow_id, 'hooked');
  }
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}/event', { id: 'hooked', run: '1' })).headers.get('x-weft-event-name'), 'push');
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}/event', { id: 'hooked', run: '999' })).body.error, 'run_not_found');
  assert.equal((await call('GET /api/workflows/{id}/runs/{run}/event', { id, run: firstRun })).body.error, 'event_not_found');
  // README "Notifications": a cancelled run of a workflow that asks to hear of one is listed once its end is handled.
  assert.equal((await call('POST /api/workflows', {}, { id: 'told', jobs: { a: { run: 'true' } }, notify: [{ on: ['cancelled'], webhook: 'http://127.0.0.1:9/hook?token=x' }] })).status, 201);
  assert.equal((await call('POST /api/workflows/{id}/run', { id: 'told' })).status, 202);
  assert.equal((await call('POST /api/workflows/{id}/cancel', { id: 'told' })).status, 202);
  await until(async () => (await request('GET', `${server.url}/api/notifications?workflow_id=told`)).body.length === 1, 'the notification of the cancelled run');
  const told = await call('GET /api/notifications', {}, undefined, {}, '?workflow_id=told&run=1');
  assert.deepEqual(told.body.map((n: { url: string }) => n.url), ['http://127.0.0.1:9/hook?token=***']);
  assert.equal((await call('GET /api/notifications', {}, undefined, {}, '?run=1')).body.error, 'invalid_request');
  assert.equal((await call('GET /healthz')).status, 200);
  assert.equal((await call('GET /readyz')).status, 200);
  assert.match((await call('GET /metrics')).text, /^# HELP weft_/m);
  assert.equal((await call('GET /api/openapi.json')).status, 200);

  assert.deepEqual([...registered].filter((k) => !called.has(k)), [], 'routes the live walk never called');
});

test('a body its documented schema refuses, the live server refuses too', async () => {
  const wrongType = { worker_id: 'w', lease_ttl_secs: '30' };
  const claimSchema = operation('POST /api/jobs/claim').requestBody!.content['application/json']!.schema;
  assert.notEqual(validate(claimSchema, wrongType), null, 'the documented claim schema takes "30" for an integer');
  const refused = await request('POST', `${server.url}/api/jobs/claim`, wrongType);
  assert.equal(refused.status, 400, `a claim with "30" for an integer was taken: ${refused.text}`);
  assert.equal(refused.body.error, 'invalid_request');

  // An unknown field added to each example: the server refuses it exactly when the schema does.
  let checked = 0;
  for (const key of registered) {
    const body = operation(key).requestBody;
    if (!body) continue;
    const [, value] = examplesOf(key)[0]!;
    const bad = { ...(value as object), not_a_field: true };
    const schemaRefuses = validate(body.content['application/json']!.schema, bad) !== null;
    const [method, template] = key.split(' ') as [string, string];
    const r = await request(method, server.url + template.replace(/\{\w+\}/g, 'x'), bad);
    if (schemaRefuses) {
      assert.equal(r.status, 400, `${key} took an unknown field its schema refuses: ${r.text}`);
      assert.match(r.body.error, /^invalid_(request|workflow)$/);
      checked++;
    } else {
      assert.notEqual(r.status, 400, `${key} refused a body its schema takes: ${r.text}`);
    }
  }
  assert.ok(checked >= 10, `only ${checked} bodies checked`);
});
