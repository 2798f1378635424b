/**
 * Hostile request bodies and paths (README "Limits"), against a spawned `weft server` on each store:
 * every case is a 4xx in weft's error shape, nothing is stored half-way, and the server answers the
 * next request.
 */
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, rawRequest, type HttpResult, type RawAnswer } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { makeSandbox, spawnWeft, type SpawnedProcess } from '../helpers/server.js';
import { ERROR_CODES } from '../../src/protocol/errors.js';
import { loadWorkerConfig } from '../../src/worker/config.js';
import { ConfigError } from '../../src/runtime/env.js';

const LIMIT = 1024 * 1024;

type Answer = RawAnswer;
const send = rawRequest;

/** A non-2xx in weft's error shape, with the given status (and code, when named). */
function assertError(r: Answer | HttpResult, status: number, code?: string, mentions?: RegExp): void {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text.slice(0, 300)}`);
  const type = r.headers instanceof Headers ? r.headers.get('content-type') : r.headers['content-type'];
  assert.match(String(type), /^application\/json/);
  assert.equal(typeof r.body?.error, 'string', r.text.slice(0, 300));
  assert.ok(r.body.error in ERROR_CODES, `unknown code ${r.body.error}`);
  assert.equal(typeof r.body.message, 'string');
  if (code !== undefined) assert.equal(r.body.error, code, r.text.slice(0, 300));
  if (mentions !== undefined) assert.match(r.body.message, mentions);
}

const deep = (open: string, inner: string, close: string, n: number) => open.repeat(n) + inner + close.repeat(n);

const STORES = [
  { name: 'SQLite', database: async () => ({ url: undefined as string | undefined, drop: async () => {} }) },
  { name: 'PostgreSQL', database: async () => createDatabase() },
];

for (const store of STORES) {
  describe(`hostile input (${store.name})`, () => {
    let server: SpawnedProcess;
    let base: string;
    let api: ReturnType<typeof client>;
    const sb = makeSandbox('weft-hostile-');
    let drop = async () => {};
    let n = 0;

    before(async () => {
      const db = await store.database();
      drop = db.drop;
      server = spawnWeft(['server'], { PORT: '0', ...sb.env, ...(db.url ? { DATABASE_URL: db.url } : {}), LOG_LEVEL: 'warn' }, sb.dir);
      const m = await server.waitFor(/listening on (http:\/\/[^:\s"]+:\d+)/);
      base = m[1]!;
      api = client(base);
    });
    after(async () => {
      server?.kill('SIGKILL');
      await server?.exited;
      await drop();
      fs.rmSync(sb.dir, { recursive: true, force: true });
    });

    /** A workflow whose jobs carry its own label (so no other test's claim takes them), run and claimed. */
    async function leased(downstream = false) {
      const id = `h${++n}`;
      const jobs: Record<string, unknown> = { a: { run: 'x', labels: [id] } };
      if (downstream) jobs.b = { run: 'y', labels: [id], needs: 'a' };
      await api.createWorkflow({ id, jobs });
      await api.run(id);
      const c = await api.claim('w', [id]);
      assert.ok(c, 'a job to claim');
      return { id, lease: c.lease.lease_id as string, c };
    }

    async function healthy() {
      const h = await send(base, 'GET', '/healthz');
      assert.equal(h.status, 200);
    }

    test('a body exactly at BODY_LIMIT_BYTES is taken whole; one byte over is 413 and changes nothing', async () => {
      const { id, lease } = await leased(true);
      const shell = '{"outputs":{"big":""}}';
      const exact = `{"outputs":{"big":"${'x'.repeat(LIMIT - shell.length)}"}}`;
      assert.equal(Buffer.byteLength(exact), LIMIT);
      const over = `{"outputs":{"big":"${'x'.repeat(LIMIT - shell.length + 1)}"}}`;

      assertError(await send(base, 'POST', `/api/jobs/${lease}/complete`, over), 413, 'payload_too_large', /1048576 byte limit/);
      // Without a Content-Length the limit holds all the same.
      assertError(await send(base, 'POST', `/api/jobs/${lease}/complete`, over, { 'transfer-encoding': 'chunked' }), 413, 'payload_too_large');
      const untouched = await api.jobState(id, 'a');
      assert.equal(untouched.state, 'running');
      assert.deepEqual(untouched.outputs, {});

      const ok = await send(base, 'POST', `/api/jobs/${lease}/complete`, exact);
      assert.equal(ok.status, 200, ok.text.slice(0, 200));
      assert.equal((await api.jobState(id, 'a')).outputs.big.length, LIMIT - shell.length);
      // Stored whole, and handed whole to the job downstream.
      const next = await api.claim('w', [id]);
      assert.equal(next!.job.upstream_outputs.a.big.length, LIMIT - shell.length);
      await healthy();
    });

    test('outputs: at most 1000 keys of at most 256 characters, else 400 and nothing stored', async () => {
      const { id, lease } = await leased();
      const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, 'v']));
      assertError(await api.post(`/api/jobs/${lease}/complete`, { outputs: many }), 400, 'invalid_request', /1000/);
      assertError(await api.post(`/api/jobs/${lease}/complete`, { outputs: { ['k'.repeat(257)]: 'v' } }), 400, 'invalid_request', /256 characters/);
      const batch = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: lease, outcome: 'complete', outputs: many }] });
      assertError(batch, 400, 'invalid_request', /1000/);
      assert.equal((await api.jobState(id, 'a')).state, 'running');
      const fine = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`${i}`.padStart(256, 'k'), 'v']));
      assert.equal((await api.post(`/api/jobs/${lease}/complete`, { outputs: fine })).status, 200);
      assert.equal(Object.keys((await api.jobState(id, 'a')).outputs).length, 1000);
    });

    test('100,000 levels of nesting in any body is a 400 naming the limit, never a stack overflow', async () => {
      const { id, lease } = await leased();
      const bodies = [deep('[', '', ']', 100_000), deep('{"a":', '1', '}', 100_000)];
      const routes: Array<[string, string]> = [
        ['POST', '/api/workflows'],
        ['PUT', '/api/workflows/deep'],
        ['POST', '/api/workers/register'],
        ['POST', '/api/jobs/claim'],
        ['POST', '/api/jobs/claim-batch'],
        ['POST', `/api/jobs/${lease}/complete`],
        ['POST', `/api/jobs/${lease}/fail`],
        ['POST', `/api/jobs/${lease}/logs`],
        ['POST', '/api/jobs/report-batch'],
        ['POST', `/api/workflows/${id}/run`],
        ['POST', `/api/workflows/${id}/runs/1/rerun`],
      ];
      for (const body of bodies) {
        for (const [method, path] of routes) {
          assertError(await send(base, method, path, body), 400, 'invalid_json', /deeper than 64 levels/);
        }
      }
      // Nested inside an otherwise valid body: metadata of the legacy job shape, `on`, outputs, log data.
      const metadata = `{"name":"m","jobs":[{"id":"a","command":"x","metadata":${deep('{"a":', '1', '}', 100_000)}}]}`;
      assertError(await send(base, 'POST', '/api/workflows', metadata), 400, 'invalid_json', /64 levels/);
      const on = `{"id":"deep-on","on":${deep('[', '1', ']', 100_000)},"jobs":{"a":{"run":"x"}}}`;
      assertError(await send(base, 'POST', '/api/workflows', on), 400, 'invalid_json', /64 levels/);
      const outputs = `{"outputs":{"a":${deep('[', '', ']', 100_000)}}}`;
      assertError(await send(base, 'POST', `/api/jobs/${lease}/complete`, outputs), 400, 'invalid_json');
      assert.equal((await api.jobState(id, 'a')).state, 'running');
      assert.equal((await api.get('/api/workflows/deep-on')).status, 404);
      assert.equal((await api.get('/api/workflows/deep')).status, 404);
      await healthy();
    });

    test('nesting: 64 levels pass the body check, 65 do not; brackets inside strings do not count', async () => {
      const labels = (depth: number) => `{"worker_id":"w","labels":${deep('[', '', ']', depth - 1)}}`;
      // 64 levels reach the schema, which refuses them for its own reason.
      assertError(await send(base, 'POST', '/api/workers/register', labels(64)), 400, 'invalid_request');
      assertError(await send(base, 'POST', '/api/workers/register', labels(65)), 400, 'invalid_json', /64 levels/);
      const tricky = `["[[[[\\"{{{{", "\\\\", "${'['.repeat(120)}"]`;
      const id = `brackets-${n++}`;
      const r = await send(base, 'POST', '/api/workers/register', `{"worker_id":"${id}","labels":${tricky}}`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.labels, (JSON.parse(tricky) as string[]).sort());
    });

    test('free-form values nest at most 32 levels; a deeper one is a 400 and nothing is stored', async () => {
      const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { d: nested(depth - 1) });
      const doc = (id: string, depth: number) => ({ id, name: id, jobs: [{ id: 'a', command: 'x', metadata: nested(depth), ports: [], children: null }] });
      const ok = await api.post('/api/workflows', doc('meta-32', 32));
      assert.equal(ok.status, 201, ok.text);
      assert.deepEqual(ok.body.jobs[0].metadata, nested(32));
      assertError(await api.post('/api/workflows', doc('meta-33', 33)), 400, 'invalid_workflow', /metadata.*32 levels|32 levels/);
      assert.equal((await api.get('/api/workflows/meta-33')).status, 404);
      const on = await api.post('/api/workflows', { id: 'on-33', on: nested(33), jobs: { a: { run: 'x' } } });
      assertError(on, 400, 'invalid_workflow', /32 levels/);
      assert.equal((await api.get('/api/workflows/on-33')).status, 404);
    });

    test('labels: at most 64 of at most 128 characters, no control characters, for workers and jobs', async () => {
      const tenThousand = Array.from({ length: 10_000 }, (_, i) => `l${i}`);
      for (const path of ['/api/workers/register', '/api/jobs/claim', '/api/jobs/claim-batch']) {
        assertError(await api.post(path, { worker_id: 'many', labels: tenThousand }), 400, 'invalid_request', /64 items/);
        assertError(await api.post(path, { worker_id: 'many', labels: ['x'.repeat(129)] }), 400, 'invalid_request', /128 characters/);
        for (const bad of ['a\u0000b', 'tab\there', 'bell\u0007', 'del\u007f']) {
          assertError(await api.post(path, { worker_id: 'many', labels: [bad] }), 400, 'invalid_request', /control characters/);
        }
      }
      const report = await api.post('/api/jobs/report-batch', { reports: [], claim: { worker_id: 'many', labels: tenThousand } });
      assertError(report, 400, 'invalid_request', /64 items/);
      assert.ok(!((await api.get('/api/workers')).body as any[]).some((w) => w.worker_id === 'many'));

      const most = Array.from({ length: 64 }, (_, i) => `${i}`.padStart(128, 'l'));
      const reg = await api.post('/api/workers/register', { worker_id: 'most', labels: most });
      assert.equal(reg.status, 200, reg.text);
      assert.equal(reg.body.labels.length, 64);

      const job = (labels: unknown) => ({ id: `lab-${n++}`, jobs: { a: { run: 'x', labels } } });
      const created = await api.post('/api/workflows', job(most));
      assert.equal(created.status, 201, created.text);
      assertError(await api.post('/api/workflows', job(tenThousand)), 400, 'invalid_workflow', /at most 64 labels, got 10000/);
      assertError(await api.post('/api/workflows', job(['x'.repeat(129)])), 400, 'invalid_workflow', /at most 128 characters/);
      assertError(await api.post('/api/workflows', job(['ok', 'a\u0001b'])), 400, 'invalid_workflow', /labels\[1\].*control characters/);
      const legacy = { id: `lab-${n++}`, name: 'l', jobs: [{ id: 'a', command: 'x', required_labels: tenThousand }] };
      assertError(await api.post('/api/workflows', legacy), 400, 'invalid_workflow', /at most 64 labels/);
      await healthy();
    });

    test('a body that is not UTF-8 is a 400 naming the problem, and nothing is stored', async () => {
      const { id, lease } = await leased();
      const bad = (before: string, bytes: number[], rest: string) => Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(rest)]);
      const cases = [
        bad('{"worker_id":"u8', [0xff, 0xfe], '"}'),
        bad('{"worker_id":"u8', [0xc0, 0xae], '"}'), // an overlong '.'
        bad('{"worker_id":"u8', [0xed, 0xa0, 0x80], '"}'), // a UTF-16 surrogate
        bad('{"worker_id":"u8"}', [0xe2, 0x82], ''), // cut in the middle of a character
      ];
      for (const body of cases) {
        assertError(await send(base, 'POST', '/api/workers/register', body), 400, 'invalid_json', /not valid UTF-8/);
      }
      assert.ok(!((await api.get('/api/workers')).body as any[]).some((w) => String(w.worker_id).startsWith('u8')));

      const outputs = bad('{"outputs":{"k":"v', [0x80], '"}}');
      assertError(await send(base, 'POST', `/api/jobs/${lease}/complete`, outputs), 400, 'invalid_json', /byte offset 18/);
      const logs = bad('{"chunks":[{"sequence":0,"data":"x', [0xf8, 0x88, 0x80, 0x80, 0x80], '"}]}');
      assertError(await send(base, 'POST', `/api/jobs/${lease}/logs`, logs), 400, 'invalid_json', /UTF-8/);
      const wf = bad('{"id":"u8wf","jobs":{"a":{"run":"echo ', [0xe9], '"}}}');
      assertError(await send(base, 'POST', '/api/workflows', wf), 400, 'invalid_json', /UTF-8/);

      const job = await api.jobState(id, 'a');
      assert.equal(job.state, 'running');
      assert.deepEqual(job.outputs, {});
      assert.deepEqual((await api.get(`/api/workflows/${id}/jobs/a/logs`)).body, []);
      assert.equal((await api.get('/api/workflows/u8wf')).status, 404);
      // Valid UTF-8, multi-byte characters included, still works.
      assert.equal((await send(base, 'POST', `/api/jobs/${lease}/complete`, '{"outputs":{"k":"é ✓ 𝄞"}}')).status, 200);
      assert.equal((await api.jobState(id, 'a')).outputs.k, 'é ✓ 𝄞');
    });

    test('NUL: refused in ids, labels, names, commands and env; kept as U+FFFD in logs, errors and outputs', async () => {
      const refused: Array<[string, unknown]> = [
        ['/api/workers/register', { worker_id: 'w\u0000' }],
        ['/api/jobs/claim', { worker_id: 'w', labels: ['a\u0000'] }],
        ['/api/workflows', { id: 'nul\u0000id', jobs: { a: { run: 'x' } } }],
        ['/api/workflows', { id: 'nul1', jobs: { a: { name: 'n\u0000', run: 'x' } } }],
        ['/api/workflows', { id: 'nul2', jobs: { a: { run: 'echo \u0000' } } }],
        ['/api/workflows', { id: 'nul3', jobs: { a: { steps: [{ run: 'echo \u0000' }] } } }],
        ['/api/workflows', { id: 'nul4', env: { A: 'x\u0000y' }, jobs: { a: { run: 'x' } } }],
        ['/api/workflows', { id: 'nul5', on: 'push\u0000', jobs: { a: { run: 'x' } } }],
        ['/api/workflows', { id: 'nul6', on: { push: { branches: ['m\u0000'] } }, jobs: { a: { run: 'x' } } }],
        ['/api/workflows', { id: 'nul7', name: 'x', trigger: 't\u0000', jobs: [{ id: 'a', command: 'x' }] }],
      ];
      for (const [path, body] of refused) {
        const r = (await api.post(path, body));
        assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
        assertError(r, 400);
      }
      for (const id of ['nul1', 'nul2', 'nul3', 'nul4', 'nul5', 'nul6', 'nul7']) assert.equal((await api.get(`/api/workflows/${id}`)).status, 404);

      const { id, lease } = await leased(true);
      assert.equal((await api.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 0, data: 'a\u0000b\n' }] })).status, 200);
      assert.equal((await api.get(`/api/workflows/${id}/jobs/a/logs`)).body[0].data, 'a\uFFFDb\n');
      const done = await api.post(`/api/jobs/${lease}/complete`, { outputs: { 'k\u0000': 'v\u0000w' } });
      assert.equal(done.status, 200, done.text);
      assert.deepEqual((await api.jobState(id, 'a')).outputs, { 'k\uFFFD': 'v\uFFFDw' });
      const next = await api.claim('w', [id]);
      assert.deepEqual(next!.job.upstream_outputs, { a: { 'k\uFFFD': 'v\uFFFDw' } });
      assert.equal((await api.post(`/api/jobs/${next!.lease.lease_id}/fail`, { error: 'e\u0000' })).status, 200);
      assert.equal((await api.jobState(id, 'b')).error, 'e\uFFFD');
    });

    test('a lone UTF-16 surrogate escape is read as U+FFFD wherever it is; pairs and escaped backslashes are kept', async () => {
      const id = `sur${++n}`;
      const def = `{"id":"${id}","name":"n\\ud800","jobs":{"a":{"name":"j\\udfff","run":"echo \\ud800","env":{"E":"\\udc00"},"labels":["${id}","q\\ud800"]}}}`;
      const created = await send(base, 'POST', '/api/workflows', def);
      assert.equal(created.status, 201, created.text);
      const run = await send(base, 'POST', `/api/workflows/${id}/run`);
      assert.equal(run.status, 202, run.text);
      const claim = await send(base, 'POST', '/api/jobs/claim', `{"worker_id":"w\\ud800","labels":["${id}","q\\ud800"]}`);
      assert.equal(claim.status, 200, claim.text);
      const { job, lease } = claim.body;
      assert.deepEqual([job.name, job.command, job.env.E, job.required_labels], ['j\uFFFD', 'echo \uFFFD', '\uFFFD', ['q\uFFFD', id]]);
      assert.equal(lease.worker_id, 'w\uFFFD');
      const logs = '{"chunks":[{"sequence":0,"data":"c\\ud800d \\ud83d\\ude00 \\\\ud800"}]}';
      assert.equal((await send(base, 'POST', `/api/jobs/${lease.lease_id}/logs`, logs)).status, 200);
      assert.equal((await api.get(`/api/workflows/${id}/jobs/a/logs`)).body[0].data, 'c\uFFFDd \u{1F600} \\ud800');
      const done = await send(base, 'POST', `/api/jobs/${lease.lease_id}/complete`, '{"outputs":{"k\\udbff":"v\\ud800"}}');
      assert.equal(done.status, 200, done.text);
      const status = await api.status(id);
      assert.equal(status.name, 'n\uFFFD');
      assert.deepEqual(status.jobs[0].outputs, { 'k\uFFFD': 'v\uFFFD' });
    });

    test('path traversal and odd encodings in ids: 400, 404 or 409 in the error shape, never a 500', async () => {
      const { lease } = await leased();
      const evil = ['..', '../../etc/passwd', '%2e%2e', '%2e%2e%2f%2e%2e%2fetc%2fpasswd', '..%2F..%2Fetc%2Fpasswd', '%252e%252e%252f',
        '..%5c..%5cwindows', '%c0%ae%c0%ae', '%00', 'a%00b', '%0a', '%ff', '%', '%e2%80%ae', '.%2e', 'x'.repeat(600)];
      const paths = evil.flatMap((e) => [
        ['GET', `/api/workflows/${e}`],
        ['GET', `/api/workflows/${e}/status`],
        ['PUT', `/api/workflows/${e}`],
        ['POST', `/api/workflows/${e}/run`],
        ['POST', `/api/workflows/${e}/cancel`],
        ['POST', `/api/workflows/${e}/runs/1/rerun`],
        ['POST', `/api/workflows/${e}/runs/${e}/rerun`],
        ['GET', `/api/workflows/${e}/jobs/${e}/logs`],
        ['GET', `/api/workflows/${e}/jobs/${e}/logs/stream`],
        ['GET', `/api/jobs/${e}/${e}/cancelled`],
        ['POST', `/api/jobs/${e}/heartbeat`],
        ['POST', `/api/jobs/${e}/complete`],
        ['POST', `/api/jobs/${e}/fail`],
        ['POST', `/api/jobs/${e}/logs`],
        ['GET', `/api/workflows/../../../../etc/passwd`],
        ['GET', `/api/../../etc/passwd`],
        ['GET', `/${e}/${e}/etc/passwd`],
      ]);
      const bodies: Record<string, string> = {
        PUT: '{"jobs":{"a":{"run":"x"}}}',
        POST: '{"error":"x","chunks":[{"sequence":0,"data":"x"}],"outputs":{}}',
      };
      for (const [method, path] of paths) {
        const body = method === 'GET' ? undefined : bodies[method!];
        const r = await send(base, method!, path!, body);
        assert.ok([400, 404, 409, 414].includes(r.status), `${method} ${path} answered ${r.status}: ${r.text.slice(0, 200)}`);
        assertError(r, r.status);
        assert.doesNotMatch(r.text, /root:/);
      }
      // A lease whose id is dressed as a path is still only that lease.
      assertError(await send(base, 'POST', `/api/jobs/..%2F${lease}/heartbeat`), 409, 'lease_not_found');
      assert.equal((await send(base, 'POST', `/api/jobs/${lease}/heartbeat`)).status, 200);
      // No workflow was created under any of these names.
      const list = (await api.get('/api/workflows?limit=1000')).body as any[];
      assert.ok(list.every((w) => /^[A-Za-z0-9_.-]+$/.test(w.id) && !/^\.+$/.test(w.id)), JSON.stringify(list.map((w) => w.id)));
      await healthy();
    });
  });
}

test('weft worker refuses WORKER_LABELS the server would refuse, naming the limit', () => {
  const labels = (list: string[]) => loadWorkerConfig({ WORKER_LABELS: list.join(',') }).labels;
  assert.equal(labels(Array.from({ length: 64 }, (_, i) => `${i}`.padStart(128, 'l'))).length, 64);
  const refused: Array<[string[], RegExp]> = [
    [Array.from({ length: 65 }, (_, i) => `l${i}`), /at most 64 labels, got 65/],
    [['x'.repeat(129)], /at most 128 characters/],
    [['a\u0007b'], /control characters/],
  ];
  for (const [list, message] of refused) {
    assert.throws(() => labels(list), (err: Error) => err instanceof ConfigError && /^WORKER_LABELS is not valid/.test(err.message) && message.test(err.message));
  }
});
