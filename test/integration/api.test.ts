/**
 * The HTTP API against a real in-process server (SQLite store, real HTTP on 127.0.0.1): every
 * endpoint's success and error codes, and the {error, message} shape of every non-2xx answer
 * (docs/api.md).
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startInProcess, type InProcessServer } from '../helpers/server.js';
import { client, request, until, type HttpResult } from '../helpers/http.js';

type Opts = Parameters<typeof startInProcess>[0];

/** Starts a server for one test and closes it when the test ends. */
async function serve(t: TestContext, opts: Opts = {}): Promise<InProcessServer & { c: ReturnType<typeof client> }> {
  const s = await startInProcess(opts);
  t.after(() => s.close());
  return Object.assign(s, { c: client(s.url) });
}

/** docs/api.md "Errors": every non-2xx answer is JSON {error, message}. */
function assertError(r: HttpResult, status: number | number[], code?: string): void {
  const statuses = Array.isArray(status) ? status : [status];
  assert.ok(statuses.includes(r.status), `expected HTTP ${statuses.join(' or ')}, got ${r.status}: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/, `error answer must be JSON: ${r.text}`);
  assert.equal(typeof r.body, 'object', `error body must be a JSON object: ${r.text}`);
  assert.ok(r.body !== null);
  assert.equal(typeof r.body.error, 'string', `error body needs an "error" code: ${r.text}`);
  assert.ok(r.body.error.length > 0);
  assert.equal(typeof r.body.message, 'string', `error body needs a "message": ${r.text}`);
  assert.ok(r.body.message.length > 0);
  if (code !== undefined) assert.equal(r.body.error, code, `error code: ${r.text}`);
}

function assertJson(r: HttpResult): void {
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
}

const ID_RE = /^[A-Za-z0-9_.-]{1,128}$/;

/** A contract-form workflow: a (labelled) root and a dependent with a retry budget. */
function pipeline(id: string) {
  return {
    id,
    name: 'Build pipeline',
    on: 'push',
    jobs: {
      build: { name: 'Build it', run: 'make build', labels: ['linux'] },
      test: { needs: ['build'], run: 'make test', retries: 2 },
    },
  };
}

function single(id: string, extra: Record<string, unknown> = {}) {
  return { id, jobs: { only: { run: 'echo only', ...extra } } };
}

/** Claims and completes every job the workflow hands out until it is finished. */
async function finishRun(c: ReturnType<typeof client>, id: string, labels: string[] = ['linux']): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const claim = await c.claim('finisher', labels);
    if (claim === null) break;
    assert.equal(claim.job.workflow_id, id);
    const r = await c.post(`/api/jobs/${claim.lease.lease_id}/complete`, { outputs: {} });
    assert.equal(r.status, 200, r.text);
  }
  const s = await c.status(id);
  assert.equal(s.status, 'success', JSON.stringify(s));
}

const JOB_FIELDS = [
  'id',
  'name',
  'status',
  'command',
  'depends_on',
  'required_labels',
  'attempt',
  'max_retries',
  'started_at',
  'duration_secs',
  'state',
  'started_at_ms',
  'finished_at_ms',
  'duration_ms',
  'metadata',
  'outputs',
  'error',
  'worker_id',
  'output',
];

// ------------------------------------------------------------------ POST /api/workflows

describe('POST /api/workflows', () => {
  test('contract form (jobs map) answers 201 with the status document', async (t) => {
    const { c } = await serve(t);
    const r = await c.post('/api/workflows', pipeline('ci'));
    assert.equal(r.status, 201, r.text);
    assertJson(r);
    const doc = r.body;
    assert.equal(doc.id, 'ci');
    assert.equal(doc.name, 'Build pipeline');
    assert.equal(doc.trigger, 'push');
    assert.equal(doc.status, 'idle');
    assert.equal(doc.run_number, null);
    assert.ok(Array.isArray(doc.jobs));
    assert.equal(doc.jobs.length, 2);
    for (const job of doc.jobs) {
      for (const f of JOB_FIELDS) assert.ok(f in job, `job ${job.id} lacks field ${f}: ${JSON.stringify(job)}`);
    }
    const build = doc.jobs.find((j: any) => j.id === 'build');
    const tst = doc.jobs.find((j: any) => j.id === 'test');
    assert.deepEqual(
      JOB_FIELDS.reduce((o, f) => ({ ...o, [f]: build[f] }), {}),
      {
        id: 'build',
        name: 'Build it',
        status: 'queued',
        command: 'make build',
        depends_on: [],
        required_labels: ['linux'],
        attempt: 0,
        max_retries: 0,
        started_at: null,
        duration_secs: null,
        state: 'pending',
        started_at_ms: null,
        finished_at_ms: null,
        duration_ms: null,
        metadata: {},
        outputs: {},
        error: null,
        worker_id: null,
        output: null,
      },
    );
    assert.equal(tst.name, 'test', 'display name defaults to the job id');
    assert.equal(tst.state, 'pending');
    assert.equal(tst.command, 'make test');
    assert.deepEqual(tst.depends_on, ['build']);
    assert.deepEqual(tst.required_labels, []);
    assert.equal(tst.max_retries, 2);

    // The stored workflow reads back as the same document, under both paths.
    const status = await c.get('/api/workflows/ci/status');
    assert.equal(status.status, 200);
    assert.deepEqual(status.body, doc);
    const byId = await c.get('/api/workflows/ci');
    assert.equal(byId.status, 200);
    assert.deepEqual(byId.body, doc);
  });

  test('array form answers 201 with a generated id', async (t) => {
    const { c } = await serve(t);
    const r = await c.post('/api/workflows', {
      name: 'Legacy client',
      trigger: 'manual',
      jobs: [
        { id: 'fetch', command: 'curl -sf http://x', required_labels: ['net'] },
        { id: 'parse', command: 'jq .', depends_on: ['fetch'], required_labels: [], max_retries: 3 },
      ],
    });
    assert.equal(r.status, 201, r.text);
    const doc = r.body;
    assert.equal(typeof doc.id, 'string');
    assert.match(doc.id, ID_RE);
    assert.equal(doc.name, 'Legacy client');
    assert.equal(doc.trigger, 'manual');
    assert.equal(doc.status, 'idle');
    assert.equal(doc.run_number, null);
    const fetchJob = doc.jobs.find((j: any) => j.id === 'fetch');
    const parseJob = doc.jobs.find((j: any) => j.id === 'parse');
    assert.equal(fetchJob.command, 'curl -sf http://x');
    assert.deepEqual(fetchJob.required_labels, ['net']);
    assert.deepEqual(fetchJob.depends_on, []);
    assert.equal(fetchJob.max_retries, 0);
    assert.deepEqual(parseJob.depends_on, ['fetch']);
    assert.equal(parseJob.max_retries, 3);

    // A charset parameter on the JSON content type is fine.
    const charset = await c.post('/api/workflows', JSON.stringify(single('utf8')), { 'content-type': 'application/json; charset=utf-8' });
    assert.equal(charset.status, 201, charset.text);

    // Two bodies without an id get two different ids.
    const again = await c.post('/api/workflows', { name: 'Legacy client', jobs: [{ id: 'x', command: 'true' }] });
    assert.equal(again.status, 201, again.text);
    assert.notEqual(again.body.id, doc.id);
    assert.equal(again.body.trigger, '', 'no trigger reads as the empty string older clients expect');

    const got = await c.get(`/api/workflows/${doc.id}/status`);
    assert.equal(got.status, 200);
    assert.equal(got.body.id, doc.id);
  });

  test('an explicit id is used; the same id again is 409 and leaves the first alone', async (t) => {
    const { c } = await serve(t);
    const r = await c.post('/api/workflows', { ...single('my.flow-1_x'), name: 'First' });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.id, 'my.flow-1_x');

    const dup = await c.post('/api/workflows', { ...single('my.flow-1_x', { run: 'echo other' }), name: 'Second' });
    assertError(dup, 409);

    const dupArray = await c.post('/api/workflows', { id: 'my.flow-1_x', name: 'Third', jobs: [{ id: 'a', command: 'x' }] });
    assertError(dupArray, 409);

    const s = await c.status('my.flow-1_x');
    assert.equal(s.name, 'First');
    assert.equal(s.jobs[0].command, 'echo only');
  });

  describe('invalid definitions answer 400 invalid_workflow with issues naming job and field', () => {
    const cases: Array<{ what: string; body: unknown; job: string | null; field: string | null; message?: RegExp }> = [
      {
        what: 'a cycle',
        body: { id: 'cyc', jobs: { a: { run: 'x', needs: ['b'] }, b: { run: 'y', needs: ['a'] } } },
        job: 'a',
        field: 'needs',
        message: /cycle/i,
      },
      {
        what: 'a self-dependency',
        body: { id: 'self', jobs: { a: { run: 'x', needs: 'a' } } },
        job: 'a',
        field: 'needs',
      },
      {
        what: 'an unknown needs entry',
        body: { id: 'unk', jobs: { a: { run: 'x' }, b: { run: 'y', needs: ['nope'] } } },
        job: 'b',
        field: 'needs',
        message: /nope/,
      },
      {
        what: 'an unknown job key (typo)',
        body: { id: 'typo', jobs: { a: { run: 'x', lables: ['linux'] } } },
        job: 'a',
        field: 'lables',
      },
      {
        what: 'an unknown top-level key',
        body: { id: 'top', job: {}, jobs: { a: { run: 'x' } } },
        job: null,
        field: 'job',
      },
      {
        what: 'a bad job id',
        body: { id: 'badjob', jobs: { 'has space': { run: 'x' } } },
        job: 'has space',
        field: null,
      },
      {
        what: 'a bad workflow id',
        body: { id: 'bad/id', jobs: { a: { run: 'x' } } },
        job: null,
        field: 'id',
      },
      {
        what: 'a job with neither run nor steps',
        body: { id: 'norun', jobs: { a: { name: 'nothing' } } },
        job: 'a',
        field: 'run',
      },
      {
        what: 'a negative retries',
        body: { id: 'neg', jobs: { a: { run: 'x', retries: -1 } } },
        job: 'a',
        field: 'retries',
      },
      {
        what: 'a cycle in the array form',
        body: { name: 'arr', jobs: [{ id: 'a', command: 'x', depends_on: ['b'] }, { id: 'b', command: 'y', depends_on: ['a'] }] },
        job: 'a',
        field: 'depends_on',
        message: /cycle/i,
      },
      {
        what: 'an unknown key in the array form',
        body: { name: 'arr', jobs: [{ id: 'a', comand: 'x' }] },
        job: 'a',
        field: 'comand',
      },
    ];
    for (const tc of cases) {
      test(tc.what, async (t) => {
        const { c } = await serve(t);
        const r = await c.post('/api/workflows', tc.body);
        assertError(r, 400, 'invalid_workflow');
        assert.ok(Array.isArray(r.body.issues), `issues must be an array: ${r.text}`);
        const hit = r.body.issues.find((i: any) => i.job === tc.job && i.field === tc.field);
        assert.ok(hit, `no issue for job ${tc.job} / field ${tc.field}: ${JSON.stringify(r.body.issues)}`);
        assert.equal(typeof hit.message, 'string');
        if (tc.message) assert.match(hit.message, tc.message);
        // Nothing was stored.
        const list = await c.get('/api/workflows');
        assert.deepEqual(list.body, []);
      });
    }
  });

  test('malformed JSON is 400 invalid_json', async (t) => {
    const { c } = await serve(t);
    assertError(await c.post('/api/workflows', '{"id": "x", "jobs": {'), 400, 'invalid_json');
    assertError(await c.post('/api/workflows', '{bad'), 400, 'invalid_json');
    assert.deepEqual((await c.get('/api/workflows')).body, []);
  });

  test('a JSON array or string body is 400', async (t) => {
    const { c } = await serve(t);
    assertError(await c.post('/api/workflows', '[{"id":"a","command":"x"}]'), 400);
    assertError(await c.post('/api/workflows', '"a workflow"'), 400);
    assertError(await c.post('/api/workflows', '42'), 400);
    assertError(await c.post('/api/workflows', 'null'), 400);
    assert.deepEqual((await c.get('/api/workflows')).body, []);
  });

  test('a body over the limit is 413', async (t) => {
    const { c } = await serve(t, { bodyLimitBytes: 2048 });
    const big = { id: 'big', jobs: { a: { run: `echo ${'x'.repeat(4096)}` } } };
    assertError(await c.post('/api/workflows', big), 413);
    // Just under the limit still works.
    assert.equal((await c.post('/api/workflows', { id: 'small', jobs: { a: { run: 'echo ok' } } })).status, 201);
    assert.deepEqual(
      (await c.get('/api/workflows')).body.map((w: any) => w.id),
      ['small'],
    );
  });

  test('an unsupported content type is 415 with a JSON body', async (t) => {
    const { c } = await serve(t);
    const body = JSON.stringify(single('plain'));
    assertError(await c.post('/api/workflows', body, { 'content-type': 'application/xml' }), 415);
    assertError(await c.post('/api/workflows', body, { 'content-type': 'text/plain' }), 415);
    assert.deepEqual((await c.get('/api/workflows')).body, []);
  });
});

// ------------------------------------------------------------------ PUT /api/workflows/{id}

describe('PUT /api/workflows/{id}', () => {
  test('creates (201), then updates in place (200)', async (t) => {
    const { c } = await serve(t);
    const created = await c.put('/api/workflows/applied', { name: 'v1', jobs: { a: { run: 'echo v1' } } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.id, 'applied');
    assert.equal(created.body.name, 'v1');
    assert.equal(created.body.status, 'idle');

    const updated = await c.put('/api/workflows/applied', { name: 'v2', jobs: { a: { run: 'echo v2' }, b: { run: 'x', needs: 'a' } } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.id, 'applied');
    assert.equal(updated.body.name, 'v2');
    const s = await c.status('applied');
    assert.equal(s.name, 'v2');
    assert.deepEqual(
      s.jobs.map((j: any) => [j.id, j.command]),
      [
        ['a', 'echo v2'],
        ['b', 'x'],
      ],
    );
    assert.deepEqual((await c.get('/api/workflows')).body.map((w: any) => w.id), ['applied']);
  });

  test('an invalid definition is 400 invalid_workflow', async (t) => {
    const { c } = await serve(t);
    const r = await c.put('/api/workflows/applied', { jobs: { a: { run: 'x', needs: ['zzz'] } } });
    assertError(r, 400, 'invalid_workflow');
    assert.ok(r.body.issues.some((i: any) => i.job === 'a' && i.field === 'needs'));
    assertError(await c.get('/api/workflows/applied/status'), 404);
  });
});

// ------------------------------------------------------------------ GET /api/workflows

describe('GET /api/workflows', () => {
  test('default paging is 100, ordered by id; limit and offset page through', async (t) => {
    const { c } = await serve(t);
    const ids = Array.from({ length: 105 }, (_, i) => `wf-${String(i).padStart(3, '0')}`);
    // Created in a scrambled order: the list must still come back by id.
    const scrambled = [...ids].sort((a, b) => (a.split('').reverse().join('') < b.split('').reverse().join('') ? -1 : 1));
    for (let i = 0; i < scrambled.length; i += 15) {
      await Promise.all(scrambled.slice(i, i + 15).map((id) => c.createWorkflow(single(id))));
    }

    const all = await c.get('/api/workflows');
    assert.equal(all.status, 200);
    assert.ok(Array.isArray(all.body));
    assert.equal(all.body.length, 100);
    assert.deepEqual(all.body.map((w: any) => w.id), ids.slice(0, 100));

    const page = await c.get('/api/workflows?limit=10&offset=20');
    assert.deepEqual(page.body.map((w: any) => w.id), ids.slice(20, 30));
    const tail = await c.get('/api/workflows?offset=100');
    assert.deepEqual(tail.body.map((w: any) => w.id), ids.slice(100));
    const past = await c.get('/api/workflows?offset=1000');
    assert.equal(past.status, 200);
    assert.deepEqual(past.body, []);
    const zero = await c.get('/api/workflows?limit=0');
    assert.equal(zero.status, 200);
    assert.deepEqual(zero.body, []);
    const big = await c.get('/api/workflows?limit=1000');
    assert.equal(big.body.length, 105);
  });

  test('limit above 1000 is accepted and capped', async (t) => {
    const { c } = await serve(t);
    for (const id of ['gamma', 'alpha', 'beta']) await c.createWorkflow(single(id));
    const r = await c.get('/api/workflows?limit=5000');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.map((w: any) => w.id), ['alpha', 'beta', 'gamma']);
    for (const w of r.body) assert.equal(typeof w.id, 'string');
  });

  test('limit above 1000 returns at most 1000', async (t) => {
    const { c } = await serve(t);
    const ids = Array.from({ length: 1001 }, (_, i) => `w${String(i).padStart(4, '0')}`);
    for (let i = 0; i < ids.length; i += 50) {
      await Promise.all(ids.slice(i, i + 50).map((id) => c.createWorkflow(single(id))));
    }
    const r = await c.get('/api/workflows?limit=5000');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.length, 1000);
    assert.deepEqual(r.body.map((w: any) => w.id), ids.slice(0, 1000));
    const rest = await c.get('/api/workflows?limit=5000&offset=1000');
    assert.deepEqual(rest.body.map((w: any) => w.id), ['w1000']);
  });

  test('bad paging and unknown query parameters are 400', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('one'));
    for (const q of ['limit=-1', 'limit=abc', 'offset=1.5', 'offset=-2', 'limit=2.5', 'offset=x', 'foo=bar', 'status=bogus']) {
      const r = await c.get(`/api/workflows?${q}`);
      assertError(r, 400);
    }
  });

  test('status filter: job states, pending for idle workflows, and the aliases active and failure', async (t) => {
    const { c } = await serve(t);
    // idle: never run (its jobs show as pending).
    await c.createWorkflow(single('idle-wf'));
    // queued-wf: root queued (nobody has its label), dependent pending.
    await c.createWorkflow({ id: 'queued-wf', jobs: { a: { run: 'x', labels: ['nobody'] }, b: { run: 'y', needs: ['a'] } } });
    // running-wf: its only job leased.
    await c.createWorkflow(single('running-wf', { labels: ['run-me'] }));
    // failed-wf: root failed permanently, dependent skipped.
    await c.createWorkflow({ id: 'failed-wf', jobs: { a: { run: 'x', labels: ['fail-me'] }, b: { run: 'y', needs: ['a'] } } });
    // done-wf: success.
    await c.createWorkflow(single('done-wf', { labels: ['done-me'] }));
    // cancel-wf: cancelled.
    await c.createWorkflow(single('cancel-wf', { labels: ['nobody'] }));

    for (const id of ['queued-wf', 'running-wf', 'failed-wf', 'done-wf', 'cancel-wf']) await c.run(id);
    const running = await c.claim('w-run', ['run-me']);
    assert.equal(running?.job.workflow_id, 'running-wf');
    const failing = await c.claim('w-fail', ['fail-me']);
    assert.equal(failing?.job.workflow_id, 'failed-wf');
    assert.equal((await c.post(`/api/jobs/${failing!.lease.lease_id}/fail`, { error: 'boom', retryable: false })).status, 200);
    const done = await c.claim('w-done', ['done-me']);
    assert.equal(done?.job.workflow_id, 'done-wf');
    assert.equal((await c.post(`/api/jobs/${done!.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    assert.equal((await c.post('/api/workflows/cancel-wf/cancel')).status, 202);

    const ids = async (status: string) => {
      const r = await c.get(`/api/workflows?status=${status}`);
      assert.equal(r.status, 200, `status=${status}: ${r.text}`);
      return r.body.map((w: any) => w.id);
    };
    assert.deepEqual(await ids('pending'), ['idle-wf', 'queued-wf']);
    assert.deepEqual(await ids('queued'), ['queued-wf']);
    assert.deepEqual(await ids('running'), ['running-wf']);
    assert.deepEqual(await ids('active'), ['running-wf']);
    assert.deepEqual(await ids('failed'), ['failed-wf']);
    assert.deepEqual(await ids('failure'), ['failed-wf']);
    assert.deepEqual(await ids('skipped'), ['failed-wf']);
    assert.deepEqual(await ids('success'), ['done-wf']);
    assert.deepEqual(await ids('cancelled'), ['cancel-wf']);
    // The filter combines with paging.
    const paged = await c.get('/api/workflows?status=pending&limit=1&offset=1');
    assert.deepEqual(paged.body.map((w: any) => w.id), ['queued-wf']);
    assertError(await c.get('/api/workflows?status=unknown'), 400);
  });
});

// ------------------------------------------------------------------ status

describe('GET /api/workflows/{id}/status and /api/workflows/{id}', () => {
  test('200 for a known workflow, 404 JSON for an unknown one', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(pipeline('known'));
    for (const p of ['/api/workflows/known/status', '/api/workflows/known']) {
      const r = await c.get(p);
      assert.equal(r.status, 200, r.text);
      assertJson(r);
      assert.equal(r.body.id, 'known');
      assert.equal(r.body.jobs.length, 2);
    }
    assertError(await c.get('/api/workflows/unknown/status'), 404);
    assertError(await c.get('/api/workflows/unknown'), 404);
  });
});

// ------------------------------------------------------------------ run

describe('POST /api/workflows/{id}/run', () => {
  test('202 with run numbers counting from 1; 409 while active; a new run after it finished', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(pipeline('ci'));

    const first = await c.post('/api/workflows/ci/run');
    assert.equal(first.status, 202, first.text);
    assertJson(first);
    assert.equal(first.body.id, 'ci');
    assert.equal(first.body.run_number, 1);
    assert.equal(first.body.status, 'running');
    const jobs = Object.fromEntries(first.body.jobs.map((j: any) => [j.id, j.state]));
    assert.deepEqual(jobs, { build: 'queued', test: 'pending' });

    const again = await c.post('/api/workflows/ci/run');
    assertError(again, 409);
    assert.equal((await c.status('ci')).run_number, 1, 'a refused run changes nothing');

    await finishRun(c, 'ci');
    const second = await c.post('/api/workflows/ci/run');
    assert.equal(second.status, 202, second.text);
    assert.equal(second.body.run_number, 2);
    assert.equal(second.body.status, 'running');
    const build = second.body.jobs.find((j: any) => j.id === 'build');
    assert.equal(build.state, 'queued');
    assert.equal(build.attempt, 0);
    assert.equal(build.worker_id, null);
    assert.equal((await c.status('ci')).run_number, 2);

    // A cancelled run is not active either.
    assert.equal((await c.post('/api/workflows/ci/cancel')).status, 202);
    const third = await c.post('/api/workflows/ci/run');
    assert.equal(third.status, 202, third.text);
    assert.equal(third.body.run_number, 3);
  });

  test('unknown id is 404', async (t) => {
    const { c } = await serve(t);
    assertError(await c.post('/api/workflows/nope/run'), 404);
  });

  test('an empty body sent as application/json is accepted by run and cancel', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('empty'));
    const run = await c.post('/api/workflows/empty/run', '', { 'content-type': 'application/json' });
    assert.equal(run.status, 202, run.text);
    assert.equal(run.body.run_number, 1);
    const cancel = await c.post('/api/workflows/empty/cancel', '', { 'content-type': 'application/json' });
    assert.equal(cancel.status, 202, cancel.text);
    assert.equal((await c.status('empty')).status, 'cancelled');
  });
});

// ------------------------------------------------------------------ cancel

describe('POST /api/workflows/{id}/cancel', () => {
  test('202 cancels every pending, queued and running job of the active run', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({
      id: 'three',
      jobs: { a: { run: 'a' }, b: { run: 'b', labels: ['x'] }, c: { run: 'c', needs: ['a', 'b'] } },
    });
    await c.run('three');
    const claim = await c.claim('w1', []);
    assert.equal(claim?.job.job_id, 'a');
    const r = await c.post('/api/workflows/three/cancel');
    assert.equal(r.status, 202, r.text);
    assertJson(r);
    const s = await c.status('three');
    assert.equal(s.status, 'cancelled');
    assert.deepEqual(s.jobs.map((j: any) => j.state), ['cancelled', 'cancelled', 'cancelled']);
    // A cancelled job is never handed out again.
    assert.equal(await c.claim('w2', ['x']), null);
  });

  test('unknown id is 404', async (t) => {
    const { c } = await serve(t);
    assertError(await c.post('/api/workflows/nope/cancel'), 404);
  });

  test('no active run: 202 and nothing changes', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(pipeline('idle'));
    const before = await c.status('idle');
    const r = await c.post('/api/workflows/idle/cancel');
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(await c.status('idle'), before);
    assert.equal(before.status, 'idle');

    await c.createWorkflow(single('done'));
    await c.run('done');
    await finishRun(c, 'done', []);
    const finished = await c.status('done');
    const r2 = await c.post('/api/workflows/done/cancel');
    assert.equal(r2.status, 202, r2.text);
    assert.deepEqual(await c.status('done'), finished);
    assert.equal(finished.status, 'success');
    assert.equal((await c.get('/api/jobs/done/only/cancelled')).text, 'false');
  });
});

// ------------------------------------------------------------------ workers

describe('workers', () => {
  test('register answers 200 with the worker record; the list shows idle and busy workers', async (t) => {
    const { c } = await serve(t);
    const before = Date.now();
    const r = await c.post('/api/workers/register', { worker_id: 'w-1', labels: ['linux', 'gpu'] });
    assert.equal(r.status, 200, r.text);
    assertJson(r);
    assert.equal(r.body.worker_id, 'w-1');
    assert.deepEqual([...r.body.labels].sort(), ['gpu', 'linux']);
    assert.ok(Number.isInteger(r.body.registered_at_ms) && r.body.registered_at_ms >= before - 1000);
    assert.ok(Number.isInteger(r.body.last_seen_ms) && r.body.last_seen_ms >= r.body.registered_at_ms);
    assert.equal(r.body.status, 'idle');
    assert.equal(r.body.current_job, null);

    assert.equal((await c.post('/api/workers/register', { worker_id: 'w-2', labels: [] })).status, 200);

    const list = await c.get('/api/workers');
    assert.equal(list.status, 200);
    assertJson(list);
    assert.ok(Array.isArray(list.body));
    assert.deepEqual(list.body.map((w: any) => w.worker_id).sort(), ['w-1', 'w-2']);
    for (const w of list.body) {
      for (const f of ['worker_id', 'labels', 'registered_at_ms', 'last_heartbeat_ms', 'last_seen_ms', 'status', 'current_job', 'current_lease']) {
        assert.ok(f in w, `worker record lacks ${f}: ${JSON.stringify(w)}`);
      }
      assert.ok(Array.isArray(w.labels));
      assert.ok(['idle', 'busy', 'offline'].includes(w.status));
      assert.equal(w.status, 'idle');
      assert.equal(w.current_job, null);
    }

    // Busy while holding a lease, with the job it holds.
    await c.createWorkflow(single('wk', { labels: ['gpu'] }));
    await c.run('wk');
    const claim = await c.claim('w-1', ['linux', 'gpu']);
    assert.ok(claim);
    const busy = (await c.get('/api/workers')).body.find((w: any) => w.worker_id === 'w-1');
    assert.equal(busy.status, 'busy');
    assert.equal(busy.current_job, 'only');
    assert.equal(busy.current_lease.workflow_id, 'wk');
    assert.equal(busy.current_lease.job_id, 'only');
    assert.equal(busy.current_lease.run_number, 1);
    assert.equal(busy.current_lease.lease_id, claim.lease.lease_id);
    assert.ok(busy.last_seen_ms >= r.body.last_seen_ms);
    const other = (await c.get('/api/workers')).body.find((w: any) => w.worker_id === 'w-2');
    assert.equal(other.status, 'idle');
    assert.equal(other.current_job, null);

    // Idle again once the job is reported.
    assert.equal((await c.post(`/api/jobs/${claim.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    const idle = (await c.get('/api/workers')).body.find((w: any) => w.worker_id === 'w-1');
    assert.equal(idle.status, 'idle');
    assert.equal(idle.current_job, null);
    // Registering again replaces the labels.
    const re = await c.post('/api/workers/register', { worker_id: 'w-1', labels: ['linux'] });
    assert.equal(re.status, 200);
    assert.deepEqual(re.body.labels, ['linux']);
    assert.deepEqual((await c.get('/api/workers')).body.map((w: any) => w.worker_id).sort(), ['w-1', 'w-2']);
  });

  test('a claim counts as seen', async (t) => {
    const { c } = await serve(t);
    const reg = (await c.post('/api/workers/register', { worker_id: 'seen', labels: [] })).body;
    await until(() => Date.now() > reg.last_seen_ms + 2, 'the clock to move on');
    assert.equal(await c.claim('seen', []), null);
    const w = (await c.get('/api/workers')).body.find((x: any) => x.worker_id === 'seen');
    assert.ok(w.last_seen_ms > reg.last_seen_ms, JSON.stringify(w));
  });

  test('register with a missing worker_id or labels that are not an array is 400', async (t) => {
    const { c } = await serve(t);
    assertError(await c.post('/api/workers/register', { labels: ['linux'] }), 400);
    assertError(await c.post('/api/workers/register', { worker_id: 'w', labels: 'linux' }), 400);
    assertError(await c.post('/api/workers/register', { worker_id: 'w', labels: [1, 2] }), 400);
    assertError(await c.post('/api/workers/register', { worker_id: '', labels: [] }), 400);
    assertError(await c.post('/api/workers/register', { worker_id: 42, labels: [] }), 400);
    assertError(await c.post('/api/workers/register', { worker_id: 'w', labels: [], colour: 'red' }), 400);
    assertError(await c.post('/api/workers/register'), 400);
    assertError(await c.post('/api/workers/register', '{oops'), 400, 'invalid_json');
    assert.deepEqual((await c.get('/api/workers')).body, []);
  });
});

// ------------------------------------------------------------------ claim

describe('POST /api/jobs/claim', () => {
  test('a claim returns the job and lease; absent lease_ttl_secs means 30', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('cl', { labels: ['linux'], retries: 2, backoff: { fixed: { delay_secs: 5 } } }));
    await c.run('cl');
    const before = Date.now();
    const r = await c.post('/api/jobs/claim', { worker_id: 'w1', labels: ['linux', 'x86'] });
    assert.equal(r.status, 200, r.text);
    assertJson(r);
    const { job, lease } = r.body;
    assert.equal(job.job_id, 'only');
    assert.equal(job.workflow_id, 'cl');
    assert.equal(job.command, 'echo only');
    assert.deepEqual(job.required_labels, ['linux']);
    assert.deepEqual(job.retry_policy, { max_retries: 2, backoff: { Fixed: { delay_secs: 5 } } });
    assert.equal(job.attempt, 0);
    assert.deepEqual(job.upstream_outputs, {});
    assert.ok(Number.isInteger(job.enqueued_at_ms) && job.enqueued_at_ms >= before - 5000);
    assert.equal(job.delayed_until_ms, 0);
    assert.equal(typeof lease.lease_id, 'string');
    assert.ok(lease.lease_id.length > 0);
    assert.equal(lease.job_id, 'only');
    assert.equal(lease.workflow_id, 'cl');
    assert.equal(lease.worker_id, 'w1');
    assert.equal(lease.ttl_secs, 30);
    assert.ok(Number.isInteger(lease.granted_at_ms) && lease.granted_at_ms >= before - 1000);
  });

  test('lease_ttl_secs is an integer 1..86400', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'ttl', jobs: { a: { run: 'a' }, b: { run: 'b' } } });
    await c.run('ttl');
    for (const ttl of [0, 86401, 1.5, '30', -1, null, true]) {
      const r = await c.post('/api/jobs/claim', { worker_id: 'w1', labels: [], lease_ttl_secs: ttl });
      assertError(r, 400);
    }
    // Nothing was handed out by the refused claims.
    assert.deepEqual((await c.status('ttl')).jobs.map((j: any) => j.state), ['queued', 'queued']);
    const low = await c.claim('w1', [], 1);
    assert.equal(low?.lease.ttl_secs, 1);
    const high = await c.claim('w1', [], 86400);
    assert.equal(high?.lease.ttl_secs, 86400);
  });

  test('missing worker_id, wrong types and unknown fields are 400', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('v'));
    await c.run('v');
    assertError(await c.post('/api/jobs/claim', { labels: [], lease_ttl_secs: 30 }), 400);
    assertError(await c.post('/api/jobs/claim', { worker_id: 'w', labels: 'linux' }), 400);
    assertError(await c.post('/api/jobs/claim', { worker_id: 'w', labels: [], lease_ttl: 30 }), 400);
    assertError(await c.post('/api/jobs/claim', { worker_id: 'w', labels: [], lease_ttl_secs: 30, extra: 1 }), 400);
    assertError(await c.post('/api/jobs/claim'), 400);
    assertError(await c.post('/api/jobs/claim', '[]'), 400);
    assertError(await c.post('/api/jobs/claim', '{"worker_id": '), 400, 'invalid_json');
    assert.equal((await c.jobState('v', 'only')).state, 'queued');
  });

  test('nothing available: 200 with the JSON value null', async (t) => {
    const { c } = await serve(t);
    const r = await c.post('/api/jobs/claim', { worker_id: 'w1', labels: ['linux'], lease_ttl_secs: 30 });
    assert.equal(r.status, 200, r.text);
    assertJson(r);
    assert.equal(r.text, 'null');
    // A job whose labels the worker lacks is not available to it either.
    await c.createWorkflow(single('gpu', { labels: ['gpu'] }));
    await c.run('gpu');
    const r2 = await c.post('/api/jobs/claim', { worker_id: 'w1', labels: ['linux'], lease_ttl_secs: 30 });
    assert.equal(r2.status, 200);
    assert.equal(r2.text, 'null');
  });
});

// ------------------------------------------------------------------ leases

describe('lease endpoints', () => {
  test('heartbeat, complete, fail and logs on an unknown lease id are 409 JSON', async (t) => {
    const { c } = await serve(t);
    const id = '00000000-0000-4000-8000-000000000000';
    assertError(await c.post(`/api/jobs/${id}/heartbeat`), 409);
    assertError(await c.post(`/api/jobs/${id}/complete`, { outputs: {} }), 409);
    assertError(await c.post(`/api/jobs/${id}/fail`, { error: 'x', retryable: true }), 409);
    assertError(await c.post(`/api/jobs/${id}/logs`, { chunks: [{ sequence: 0, data: 'x' }] }), 409);
    assertError(await c.post('/api/jobs/not-a-lease/heartbeat'), 409);
  });

  test('heartbeat renews a live lease; a settled lease answers 409', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('hb'));
    await c.run('hb');
    const claim = (await c.claim('w1', [], 30))!;
    const lid = claim.lease.lease_id;
    const hb = await c.post(`/api/jobs/${lid}/heartbeat`);
    assert.equal(hb.status, 200, hb.text);
    const hbEmpty = await c.post(`/api/jobs/${lid}/heartbeat`, '', { 'content-type': 'application/json' });
    assert.equal(hbEmpty.status, 200, hbEmpty.text);
    const done = await c.post(`/api/jobs/${lid}/complete`, { outputs: { k: 'v' } });
    assert.equal(done.status, 200, done.text);
    assertError(await c.post(`/api/jobs/${lid}/heartbeat`), 409);
    assertError(await c.post(`/api/jobs/${lid}/complete`, { outputs: {} }), 409);
    assertError(await c.post(`/api/jobs/${lid}/fail`, { error: 'late' }), 409);
    const s = await c.jobState('hb', 'only');
    assert.equal(s.state, 'success');
    assert.deepEqual(s.outputs, { k: 'v' });
  });

  test('complete with outputs that are not strings is 400 and changes nothing', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('out'));
    await c.run('out');
    const lid = (await c.claim('w1'))!.lease.lease_id;
    for (const outputs of [{ n: 1 }, { ok: true }, { nested: { a: 'b' } }, ['a'], 'text']) {
      assertError(await c.post(`/api/jobs/${lid}/complete`, { outputs }), 400);
    }
    assertError(await c.post(`/api/jobs/${lid}/complete`, { outputs: {}, extra: 1 }), 400);
    assert.equal((await c.jobState('out', 'only')).state, 'running');
    assert.equal((await c.post(`/api/jobs/${lid}/complete`, { outputs: { n: '1' } })).status, 200);
    assert.deepEqual((await c.jobState('out', 'only')).outputs, { n: '1' });
  });

  test('fail without error (or with a wrong type) is 400 and changes nothing', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(single('f', { retries: 1 }));
    await c.run('f');
    const lid = (await c.claim('w1'))!.lease.lease_id;
    assertError(await c.post(`/api/jobs/${lid}/fail`, { retryable: true }), 400);
    assertError(await c.post(`/api/jobs/${lid}/fail`, {}), 400);
    assertError(await c.post(`/api/jobs/${lid}/fail`), 400);
    assertError(await c.post(`/api/jobs/${lid}/fail`, { error: 42, retryable: true }), 400);
    assertError(await c.post(`/api/jobs/${lid}/fail`, { error: 'x', retryable: 'yes' }), 400);
    const job = await c.jobState('f', 'only');
    assert.equal(job.state, 'running');
    assert.equal(job.attempt, 0);
    const ok = await c.post(`/api/jobs/${lid}/fail`, { error: 'boom', retryable: true });
    assert.equal(ok.status, 200, ok.text);
    const after = await c.jobState('f', 'only');
    assert.equal(after.state, 'queued');
    assert.equal(after.attempt, 1);
    assert.equal(after.error, 'boom');
    assert.equal(after.output, 'boom');
  });
});

// ------------------------------------------------------------------ cancelled

describe('GET /api/jobs/{wf}/{job}/cancelled', () => {
  test('JSON false, then true after a cancel; unknown workflow or job is 404', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow(pipeline('cx'));
    const idle = await c.get('/api/jobs/cx/build/cancelled');
    assert.equal(idle.status, 200);
    assertJson(idle);
    assert.equal(idle.text, 'false');
    assert.equal(idle.body, false);

    await c.run('cx');
    const claim = await c.claim('w1', ['linux']);
    assert.equal(claim?.job.job_id, 'build');
    const running = await c.get('/api/jobs/cx/build/cancelled');
    assert.equal(running.status, 200);
    assert.equal(running.text, 'false');

    assert.equal((await c.post('/api/workflows/cx/cancel')).status, 202);
    for (const job of ['build', 'test']) {
      const r = await c.get(`/api/jobs/cx/${job}/cancelled`);
      assert.equal(r.status, 200);
      assertJson(r);
      assert.equal(r.text, 'true');
      assert.equal(r.body, true);
    }
    // The worker's late report on the cancelled job gets 200 and changes nothing.
    const late = await c.post(`/api/jobs/${claim!.lease.lease_id}/complete`, { outputs: { a: 'b' } });
    assert.equal(late.status, 200, late.text);
    assert.equal((await c.jobState('cx', 'build')).state, 'cancelled');

    assertError(await c.get('/api/jobs/nope/build/cancelled'), 404);
    assertError(await c.get('/api/jobs/cx/nope/cancelled'), 404);
    await c.createWorkflow(single('never-run'));
    assertError(await c.get('/api/jobs/never-run/nope/cancelled'), 404);
  });
});

// ------------------------------------------------------------------ routing

describe('routing', () => {
  test('an unknown route is 404 JSON', async (t) => {
    const { c } = await serve(t);
    assertError(await c.get('/api/nope'), 404);
    assertError(await c.get('/nope'), 404);
    assertError(await c.post('/api/workflows/x/explode'), 404);
    assertError(await c.get('/api/jobs/a/b/c/d'), 404);
  });

  test('an unknown method on a known path is 404 or 405 JSON', async (t) => {
    const { url } = await serve(t);
    for (const [method, path] of [
      ['DELETE', '/api/workflows'],
      ['PATCH', '/api/workflows/x'],
      ['GET', '/api/jobs/claim'],
      ['DELETE', '/api/workers'],
      ['PUT', '/api/workflows/x/run'],
    ] as const) {
      const r = await request(method, url + path);
      assertError(r, [404, 405]);
    }
  });
});

// ------------------------------------------------------------------ CORS

describe('CORS', () => {
  // The full rules (tokens, CORS_ORIGINS=*, Host) are in origins.test.ts.
  test('with no origins configured and no tokens, pages on this machine are allowed and others are not', async (t) => {
    const { c } = await serve(t);
    const r = await c.get('/api/workflows', { origin: 'http://localhost:5173' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:5173');
    // Error answers carry it too, so a browser can read them.
    const e = await c.get('/api/workflows/nope/status', { origin: 'http://localhost:5173' });
    assertError(e, 404);
    assert.equal(e.headers.get('access-control-allow-origin'), 'http://localhost:5173');
    const other = await c.get('/api/workflows', { origin: 'http://example.com' });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('with configured origins only those are echoed', async (t) => {
    const { c } = await serve(t, { corsOrigins: ['http://allowed.test'] });
    const ok = await c.get('/api/workflows', { origin: 'http://allowed.test' });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'http://allowed.test');
    const other = await c.get('/api/workflows', { origin: 'http://evil.test' });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('a preflight answers 204 with the allow headers', async (t) => {
    for (const opts of [{}, { corsOrigins: ['http://allowed.test'] }] as Opts[]) {
      const { url } = await serve(t, opts);
      const origin = opts?.corsOrigins ? 'http://allowed.test' : 'http://127.0.0.1:8080';
      const r = await request('OPTIONS', `${url}/api/workflows/x/run`, undefined, {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      });
      assert.equal(r.status, 204, r.text);
      assert.equal(r.headers.get('access-control-allow-origin'), origin);
      const methods = r.headers.get('access-control-allow-methods') ?? '';
      assert.match(methods, /POST/);
      const allowHeaders = (r.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      assert.match(allowHeaders, /content-type/);
    }
  });
});

// docs/api.md "Errors": never a 500 for bad input.
test('bad input never produces a 500', async (t) => {
  const { c } = await serve(t);
  await c.createWorkflow(single('s'));
  const probes: HttpResult[] = await Promise.all([
    c.post('/api/workflows', { jobs: null }),
    c.post('/api/workflows', { id: 5, jobs: {} }),
    c.post('/api/workflows', { jobs: { a: { run: 'x', backoff: { fixed: { delay_secs: 'x' } } } } }),
    c.post('/api/workflows', { jobs: [null] }),
    c.put('/api/workflows/s', '[]'),
    c.get('/api/workflows?limit=99999999999999999999999'),
    c.post('/api/jobs/claim', { worker_id: 'x'.repeat(10_000) }),
    c.post('/api/jobs/%ZZ/heartbeat'),
    c.get('/api/jobs/s/only/cancelled?x=1'),
  ]);
  for (const r of probes) {
    assert.ok(r.status < 500, `got ${r.status}: ${r.text}`);
    if (r.status >= 400) assertError(r, r.status);
  }
  // And the server still answers afterwards.
  assert.equal((await c.get('/api/workflows/s/status')).status, 200);
});

test('ids at the 128-character limit are addressable in every path; a malformed URL is a JSON 400', async (t) => {
  const s = await serve(t);
  const wf = 'w'.repeat(128);
  const job = 'j'.repeat(128);
  assert.equal((await s.c.post('/api/workflows', { id: wf, jobs: { [job]: { run: 'true' } } })).status, 201);
  assert.equal((await s.c.get(`/api/workflows/${wf}/status`)).status, 200);
  assert.equal((await s.c.post(`/api/workflows/${wf}/run`)).status, 202);
  assert.equal((await s.c.get(`/api/jobs/${wf}/${job}/cancelled`)).body, false);
  assert.equal((await s.c.get(`/api/workflows/${wf}/jobs/${job}/logs`)).status, 200);
  assertError(await s.c.get('/api/workflows/%ZZ/status'), 400, 'bad_url');
});
