/**
 * Existing workflow-graph clients (a Rust viewer deserializing with strict serde structs, and a TS
 * client) must work unchanged against weft (docs/protocol.md). Every
 * state a job can be in is reached through the real worker protocol over HTTP, and each answer is
 * checked against the schemas in ../helpers/compat-schemas.ts and with exact expectations.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startInProcess, type InProcessServer } from '../helpers/server.js';
import { client, until, type HttpResult } from '../helpers/http.js';
import { assertSchema, UPSTREAM_JOB, validators as v } from '../helpers/compat-schemas.js';

type Client = ReturnType<typeof client>;

async function serve(t: TestContext): Promise<InProcessServer & { c: Client }> {
  const s = await startInProcess();
  t.after(() => s.close());
  return Object.assign(s, { c: client(s.url) });
}

function jobOf(doc: any, id: string): any {
  const job = doc?.jobs?.find((j: any) => j.id === id);
  assert.ok(job, `no job "${id}" in ${JSON.stringify(doc, null, 2)}`);
  return job;
}

/** Checks the listed fields of a job exactly, printing the whole job on a mismatch. */
function expectJob(doc: any, id: string, want: Record<string, unknown>): any {
  const job = jobOf(doc, id);
  const got = Object.fromEntries(Object.keys(want).map((k) => [k, job[k]]));
  assert.deepEqual(got, want, `job "${id}": ${JSON.stringify(job, null, 2)}`);
  return job;
}

/** The status document, checked against the Workflow schema. */
async function statusDoc(c: Client, id: string, what = `status document of ${id}`): Promise<any> {
  const r = await c.get(`/api/workflows/${id}/status`);
  assert.equal(r.status, 200, r.text);
  assertSchema(v.workflow, r.body, what);
  return r.body;
}

async function create(c: Client, def: unknown): Promise<any> {
  const r = await c.post('/api/workflows', def);
  assert.equal(r.status, 201, `create answered ${r.status}: ${r.text}`);
  assertSchema(v.workflow, r.body, 'the 201 body of POST /api/workflows');
  return r.body;
}

/** Claims the next job that fits `labels`; the job must exist. */
async function claim(c: Client, worker: string, labels: string[]) {
  const got = await c.claim(worker, labels, 60);
  assert.ok(got, `nothing to claim for ${worker} with labels ${JSON.stringify(labels)}`);
  return got;
}

async function ok(r: Promise<HttpResult>, status = 200): Promise<HttpResult> {
  const res = await r;
  assert.equal(res.status, status, res.text);
  return res;
}

const complete = (c: Client, lease: string, outputs: Record<string, string> = {}) =>
  ok(c.post(`/api/jobs/${lease}/complete`, { outputs }));
const fail = (c: Client, lease: string, error: string, retryable: boolean) =>
  ok(c.post(`/api/jobs/${lease}/fail`, { error, retryable }));

/** The fields both a list item and the status document carry for old clients, plus weft's state. */
const COMPAT_JOB_KEYS = [
  ...(UPSTREAM_JOB.required as string[]),
  'ports',
  'children',
  'collapsed',
  'state',
  'started_at_ms',
  'finished_at_ms',
  'duration_ms',
];
const compatView = (job: any) => Object.fromEntries(COMPAT_JOB_KEYS.filter((k) => k in job).map((k) => [k, job[k]]));

async function list(c: Client, query: string): Promise<any[]> {
  const r = await c.get(`/api/workflows${query}`);
  assert.equal(r.status, 200, r.text);
  assertSchema(v.workflowList, r.body, `GET /api/workflows${query}`);
  return r.body;
}

// ------------------------------------------------------------------ job states

describe('compat: every job state in the status document', () => {
  test('never run: jobs show status "queued" (state pending); trigger "" when the definition has none', async (t) => {
    const { c } = await serve(t);
    const created = await create(c, { id: 'idle', jobs: { a: { run: 'echo a' }, b: { run: 'echo b', needs: 'a', retries: 2 } } });
    const doc = await statusDoc(c, 'idle');
    for (const d of [created, doc]) {
      assert.equal(d.id, 'idle');
      assert.equal(d.name, 'idle');
      assert.equal(d.trigger, '', `trigger of a definition without "on" must be "": ${JSON.stringify(d.trigger)}`);
      const fresh = { status: 'queued', state: 'pending', attempt: 0, duration_secs: null, started_at: null, output: null };
      expectJob(d, 'a', { ...fresh, command: 'echo a', depends_on: [], required_labels: [], max_retries: 0 });
      expectJob(d, 'b', { ...fresh, command: 'echo b', depends_on: ['a'], required_labels: [], max_retries: 2 });
      for (const j of d.jobs) {
        const times = { started_at_ms: j.started_at_ms, finished_at_ms: j.finished_at_ms, duration_ms: j.duration_ms };
        assert.deepEqual(times, { started_at_ms: null, finished_at_ms: null, duration_ms: null }, `job ${j.id}`);
      }
    }
    // The array form without a trigger is the same.
    const arr = await create(c, { name: 'no trigger', jobs: [{ id: 'x', command: 'true' }] });
    assert.equal(arr.trigger, '');
    assert.equal((await statusDoc(c, arr.id)).trigger, '');
  });

  test('pending: a job waiting on an upstream shows status "queued", state "pending"', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'wait', on: 'push', jobs: { up: { run: 'echo up' }, down: { run: 'echo down', needs: 'up' } } });
    await ok(c.post('/api/workflows/wait/run'), 202);
    const doc = await statusDoc(c, 'wait');
    assert.equal(doc.trigger, 'push');
    expectJob(doc, 'up', { status: 'queued', state: 'queued', attempt: 0, started_at: null, duration_secs: null });
    const waiting = { status: 'queued', state: 'pending', attempt: 0, started_at: null, duration_secs: null, depends_on: ['up'] };
    expectJob(doc, 'down', waiting);
  });

  test('running: a leased job shows status "running" and started_at as epoch ms', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'run', jobs: { a: { run: 'sleep 1', labels: ['a'] }, b: { run: 'echo b', needs: 'a' } } });
    await c.run('run');
    const before = Date.now();
    await claim(c, 'w-run', ['a']);
    const doc = await statusDoc(c, 'run');
    const a = expectJob(doc, 'a', { status: 'running', state: 'running', attempt: 0, output: null, finished_at_ms: null });
    assert.equal(typeof a.started_at, 'number', `started_at must be epoch ms, never an ISO string: ${JSON.stringify(a.started_at)}`);
    assert.ok(a.started_at >= before - 1000 && a.started_at <= Date.now(), `started_at ${a.started_at} is not now`);
    assert.equal(a.started_at, a.started_at_ms, 'started_at and started_at_ms are the same instant');
    expectJob(doc, 'b', { status: 'queued', state: 'pending', started_at: null });
  });

  test('success: status "success" with duration_secs a whole number of seconds', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'ok', jobs: { a: { run: 'echo a' } } });
    await c.run('ok');
    const got = await claim(c, 'w-ok', []);
    await complete(c, got.lease.lease_id, { answer: '42' });
    const doc = await statusDoc(c, 'ok');
    const a = expectJob(doc, 'a', { status: 'success', state: 'success', attempt: 0 });
    assert.ok(Number.isInteger(a.duration_secs) && a.duration_secs >= 0, `duration_secs must be an unsigned int: ${a.duration_secs}`);
    assert.equal(typeof a.started_at, 'number');
    assert.ok(Number.isInteger(a.finished_at_ms) && a.finished_at_ms >= a.started_at_ms, JSON.stringify(a));
    assert.equal(a.duration_ms, a.finished_at_ms - a.started_at_ms);
    assert.ok(Math.abs(a.duration_secs * 1000 - a.duration_ms) < 1000, `duration_secs ${a.duration_secs}, duration_ms ${a.duration_ms}`);
  });

  test('failure: retryable:false gives status "failure" (state failed); its dependents are skipped', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({
      id: 'bad',
      jobs: {
        a: { run: 'false', retries: 3, labels: ['a'] },
        b: { run: 'echo b', needs: 'a' },
        other: { run: 'true', labels: ['o'] },
      },
    });
    await c.run('bad');
    const got = await claim(c, 'w-bad', ['a']);
    await fail(c, got.lease.lease_id, 'exit code 1: no such file', false);
    const doc = await statusDoc(c, 'bad');
    const a = expectJob(doc, 'a', { status: 'failure', state: 'failed', attempt: 0, max_retries: 3 });
    assert.equal(typeof a.output, 'string');
    assert.match(a.output, /no such file/, 'output carries the error text');
    assert.ok(Number.isInteger(a.duration_secs), `duration_secs after the end: ${a.duration_secs}`);
    expectJob(doc, 'b', { status: 'skipped', state: 'skipped', started_at: null, duration_secs: null });
    expectJob(doc, 'other', { status: 'queued', state: 'queued' });
  });

  test('skipped: every job downstream of a failed one, transitively', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({
      id: 'skip',
      jobs: {
        root: { run: 'false', labels: ['root'] },
        mid: { run: 'echo mid', needs: 'root' },
        leaf: { run: 'echo leaf', needs: ['mid'] },
        side: { run: 'echo side', labels: ['side'] },
        join: { run: 'echo join', needs: ['side', 'leaf'] },
      },
    });
    await c.run('skip');
    const got = await claim(c, 'w-skip', ['root']);
    await fail(c, got.lease.lease_id, 'broken', false);
    const doc = await statusDoc(c, 'skip');
    // Never started; `output` is free (weft may put the reason there).
    const skipped = { status: 'skipped', state: 'skipped', started_at: null, duration_secs: null, attempt: 0 };
    for (const id of ['mid', 'leaf', 'join']) expectJob(doc, id, skipped);
    expectJob(doc, 'root', { status: 'failure', state: 'failed' });
    expectJob(doc, 'side', { status: 'queued', state: 'queued' });
  });

  test('cancelled: POST /cancel turns pending, queued and running jobs to "cancelled"', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({
      id: 'stop',
      jobs: {
        a: { run: 'sleep 60', labels: ['a'] },
        b: { run: 'echo b', needs: 'a' },
        c: { run: 'echo c', labels: ['c'] },
      },
    });
    await c.run('stop');
    const got = await claim(c, 'w-stop', ['a']);
    const before = await statusDoc(c, 'stop', 'status document before cancel');
    expectJob(before, 'a', { status: 'running', state: 'running' });
    expectJob(before, 'b', { status: 'queued', state: 'pending' });
    expectJob(before, 'c', { status: 'queued', state: 'queued' });

    await ok(c.post('/api/workflows/stop/cancel'), 202);
    const doc = await statusDoc(c, 'stop', 'status document after cancel');
    for (const id of ['a', 'b', 'c']) expectJob(doc, id, { status: 'cancelled', state: 'cancelled' });
    // The worker's late report changes nothing.
    await complete(c, got.lease.lease_id);
    expectJob(await statusDoc(c, 'stop', 'status document after a late complete'), 'a', { status: 'cancelled', state: 'cancelled' });
  });

  test('retrying: retryable:true within budget shows "queued", attempt 1 and the last error as output', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'flaky', jobs: { a: { run: 'curl x', retries: 2 } } });
    await c.run('flaky');

    const first = await claim(c, 'w-flaky', []);
    assert.equal(first.job.attempt, 0);
    await fail(c, first.lease.lease_id, 'connection reset by peer', true);
    let doc = await statusDoc(c, 'flaky', 'status document after the first retryable failure');
    expectJob(doc, 'a', { status: 'queued', state: 'queued', attempt: 1, max_retries: 2 });
    assert.match(jobOf(doc, 'a').output ?? '', /connection reset by peer/, 'output carries the last error');

    // No backoff: the retry is claimable at once; while it runs it is "running", attempt 1.
    const second = await until(() => c.claim('w-flaky', [], 60), 'the retry to be claimable', 5000);
    assert.equal(second.job.attempt, 1);
    doc = await statusDoc(c, 'flaky', 'status document while the retry runs');
    const running = expectJob(doc, 'a', { status: 'running', state: 'running', attempt: 1 });
    assert.equal(typeof running.started_at, 'number');

    await fail(c, second.lease.lease_id, 'timeout talking to registry', true);
    doc = await statusDoc(c, 'flaky', 'status document after the second retryable failure');
    expectJob(doc, 'a', { status: 'queued', state: 'queued', attempt: 2 });
    assert.match(jobOf(doc, 'a').output ?? '', /timeout talking to registry/, 'output carries the latest error');

    // Budget used up: a retryable failure is final.
    const third = await until(() => c.claim('w-flaky', [], 60), 'the second retry to be claimable', 5000);
    await fail(c, third.lease.lease_id, 'still down', true);
    doc = await statusDoc(c, 'flaky', 'status document after the budget is used up');
    expectJob(doc, 'a', { status: 'failure', state: 'failed', attempt: 2 });
    assert.match(jobOf(doc, 'a').output ?? '', /still down/);
  });
});

// ------------------------------------------------------------------ workflow list

/** Five workflows, one per workflow-level state, with ids in list order. */
async function fiveStates(c: Client): Promise<string[]> {
  await c.createWorkflow({ id: 'a-idle', jobs: { only: { run: 'true', labels: ['a'] } } });

  await c.createWorkflow({
    id: 'b-running',
    on: 'push',
    jobs: { only: { run: 'sleep 60', labels: ['b'] }, after: { run: 'true', needs: 'only' } },
  });
  await c.run('b-running');
  await claim(c, 'w-list', ['b']);

  await c.createWorkflow({
    id: 'c-failed',
    jobs: { first: { run: 'false', labels: ['c'] }, second: { run: 'true', needs: 'first' } },
  });
  await c.run('c-failed');
  await fail(c, (await claim(c, 'w-list', ['c'])).lease.lease_id, 'exit 1', false);

  await c.createWorkflow({ id: 'd-success', jobs: { only: { run: 'true', labels: ['d'] } } });
  await c.run('d-success');
  await complete(c, (await claim(c, 'w-list', ['d'])).lease.lease_id);

  await c.createWorkflow({ id: 'e-cancelled', jobs: { only: { run: 'true', labels: ['e'] } } });
  await c.run('e-cancelled');
  await ok(c.post('/api/workflows/e-cancelled/cancel'), 202);

  return ['a-idle', 'b-running', 'c-failed', 'd-success', 'e-cancelled'];
}

describe('compat: GET /api/workflows', () => {
  test('every item is a full workflow whose jobs match its status document, for every state on one page', async (t) => {
    const { c } = await serve(t);
    const ids = await fiveStates(c);
    const items = await list(c, '');
    assert.deepEqual(
      items.map((w) => w.id),
      ids,
    );
    for (const item of items) {
      const doc = await statusDoc(c, item.id);
      assert.deepEqual(
        { id: item.id, name: item.name, trigger: item.trigger },
        { id: doc.id, name: doc.name, trigger: doc.trigger },
        `list item ${item.id} vs its status document`,
      );
      assert.deepEqual(item.jobs.map(compatView), doc.jobs.map(compatView), `jobs of list item ${item.id} vs its status document`);
    }
    const byId = Object.fromEntries(items.map((w) => [w.id, w]));
    assert.equal(byId['a-idle'].trigger, '');
    assert.equal(byId['b-running'].trigger, 'push');
    expectJob(byId['a-idle'], 'only', { status: 'queued', state: 'pending' });
    expectJob(byId['b-running'], 'only', { status: 'running', state: 'running' });
    expectJob(byId['b-running'], 'after', { status: 'queued', state: 'pending' });
    expectJob(byId['c-failed'], 'first', { status: 'failure', state: 'failed' });
    expectJob(byId['c-failed'], 'second', { status: 'skipped', state: 'skipped' });
    expectJob(byId['d-success'], 'only', { status: 'success', state: 'success' });
    expectJob(byId['e-cancelled'], 'only', { status: 'cancelled', state: 'cancelled' });
  });

  test('stays paged by limit and offset, and each page carries jobs', async (t) => {
    const { c } = await serve(t);
    const ids = await fiveStates(c);
    const pages = [
      ['?limit=2', ids.slice(0, 2)],
      ['?limit=2&offset=2', ids.slice(2, 4)],
      ['?limit=2&offset=4', ids.slice(4)],
      ['?offset=5', []],
    ] as const;
    for (const [query, want] of pages) {
      const items = await list(c, query);
      assert.deepEqual(
        items.map((w) => w.id),
        want,
        `page ${query}`,
      );
      for (const item of items) assert.ok(item.jobs.length > 0, `list item ${item.id} has no jobs`);
    }
  });

  test('the status filter accepts both vocabularies: failure = failed, active = running', async (t) => {
    const { c } = await serve(t);
    await fiveStates(c);
    for (const [query, want] of [
      ['?status=failure', ['c-failed']],
      ['?status=failed', ['c-failed']],
      ['?status=active', ['b-running']],
      ['?status=running', ['b-running']],
    ] as const) {
      const r = await c.get(`/api/workflows${query}`);
      assert.equal(r.status, 200, `${query}: ${r.text}`);
      assert.deepEqual(
        r.body.map((w: any) => w.id),
        want,
        `${query}: ${r.text}`,
      );
    }
    // Items under either spelling are the same full workflow old clients read.
    const failure = await list(c, '?status=failure');
    expectJob(failure[0], 'first', { status: 'failure', state: 'failed' });
    assert.deepEqual(failure, await list(c, '?status=failed'));
    const active = await list(c, '?status=active');
    expectJob(active[0], 'only', { status: 'running', state: 'running' });
    assert.deepEqual(active, await list(c, '?status=running'));
  });
});

// ------------------------------------------------------------------ workers and logs

describe('compat: workers', () => {
  test('register body and list items; current_job is the held job id, current_lease the lease', async (t) => {
    const { c } = await serve(t);
    const reg = await ok(c.post('/api/workers/register', { worker_id: 'w-compat', labels: ['linux'] }));
    assertSchema(v.worker, reg.body, 'the body of POST /api/workers/register');
    const { worker_id, labels, status, current_job, current_lease } = reg.body;
    assert.deepEqual(
      { worker_id, labels, status, current_job, current_lease },
      { worker_id: 'w-compat', labels: ['linux'], status: 'idle', current_job: null, current_lease: null },
    );

    const workers = async (what: string) => {
      const r = await ok(c.get('/api/workers'));
      assertSchema(v.workerList, r.body, what);
      const w = r.body.find((x: any) => x.worker_id === 'w-compat');
      assert.ok(w, `w-compat missing from ${r.text}`);
      return w;
    };
    const idle = await workers('GET /api/workers after register');
    assert.equal(idle.status, 'idle');
    assert.equal(idle.current_job, null);

    await c.createWorkflow({ id: 'wk', jobs: { build: { run: 'make', labels: ['linux'] } } });
    await c.run('wk');
    const got = await claim(c, 'w-compat', ['linux']);
    const beforeBeat = Date.now();
    await ok(c.post(`/api/jobs/${got.lease.lease_id}/heartbeat`));
    const busy = await workers('GET /api/workers while a lease is held');
    assert.equal(busy.status, 'busy');
    assert.equal(busy.current_job, 'build', `current_job must be the job id string: ${JSON.stringify(busy.current_job)}`);
    assert.deepEqual(
      {
        workflow_id: busy.current_lease?.workflow_id,
        job_id: busy.current_lease?.job_id,
        run_number: busy.current_lease?.run_number,
        lease_id: busy.current_lease?.lease_id,
      },
      { workflow_id: 'wk', job_id: 'build', run_number: 1, lease_id: got.lease.lease_id },
    );
    assert.ok(busy.last_heartbeat_ms >= beforeBeat, `last_heartbeat_ms ${busy.last_heartbeat_ms} is before the heartbeat (${beforeBeat})`);
    assert.ok(busy.last_heartbeat_ms >= busy.registered_at_ms);

    await complete(c, got.lease.lease_id);
    const done = await workers('GET /api/workers after complete');
    assert.deepEqual(
      { status: done.status, current_job: done.current_job, current_lease: done.current_lease },
      { status: 'idle', current_job: null, current_lease: null },
    );
  });
});

describe('compat: log history', () => {
  test('GET …/logs is an array of {workflow_id, job_id, sequence, data, timestamp_ms, stream}', async (t) => {
    const { c } = await serve(t);
    await c.createWorkflow({ id: 'logs', jobs: { build: { run: 'make' } } });
    await c.run('logs');
    const got = await claim(c, 'w-logs', []);
    await ok(
      c.post(`/api/jobs/${got.lease.lease_id}/logs`, {
        chunks: [
          { sequence: 0, data: 'compiling\n', stream: 'stdout' },
          { sequence: 1, data: 'warning: unused\n', stream: 'stderr' },
          { sequence: 2, data: 'done\n', stream: 'stdout' },
        ],
      }),
    );
    await complete(c, got.lease.lease_id);
    const r = await ok(c.get('/api/workflows/logs/jobs/build/logs'));
    assertSchema(v.logHistory, r.body, 'GET /api/workflows/logs/jobs/build/logs');
    assert.deepEqual(
      r.body.map((ch: any) => [ch.workflow_id, ch.job_id, ch.sequence, ch.data, ch.stream]),
      [
        ['logs', 'build', 0, 'compiling\n', 'stdout'],
        ['logs', 'build', 1, 'warning: unused\n', 'stderr'],
        ['logs', 'build', 2, 'done\n', 'stdout'],
      ],
    );
  });
});

// ------------------------------------------------------------------ array form with the old job shape

/** A job in the full shape the upstream TS client's createWorkflow sends. */
function oldJob(fields: { id: string } & Record<string, unknown>): { id: string } & Record<string, unknown> {
  return {
    status: 'queued',
    command: 'true',
    duration_secs: null,
    started_at: null,
    depends_on: [],
    output: null,
    required_labels: [],
    max_retries: 0,
    attempt: 0,
    metadata: {},
    ports: [],
    children: null,
    collapsed: false,
    ...fields,
  };
}

const LEGACY_BUILD = oldJob({
  id: 'build',
  name: 'Build',
  command: 'echo hi',
  max_retries: 1,
  metadata: { node_type: 'agent', color: '#3b82f6' },
  ports: [{ id: 'out', label: 'Out', direction: 'output', port_type: 'text' }],
  children: null,
  collapsed: false,
});

const LEGACY_TEST = oldJob({
  id: 'test',
  name: 'Test',
  command: 'npm test',
  depends_on: ['build'],
  status: 'success',
  duration_secs: 12,
  started_at: 1700000000000,
  output: 'old text',
  attempt: 3,
  metadata: {},
  ports: [],
  children: [
    oldJob({
      id: 'unit',
      name: 'Unit tests',
      command: 'npm run unit',
      status: 'failure',
      duration_secs: 3,
      started_at: 1700000000500,
      output: 'nested text',
      attempt: 1,
      metadata: { node_type: 'tool' },
      ports: [{ id: 'in', label: 'In', direction: 'input', port_type: 'text' }],
      collapsed: false,
    }),
  ],
  collapsed: true,
});

const LEGACY = { name: 'legacy', trigger: 'push', jobs: [LEGACY_BUILD, LEGACY_TEST] };
const KEPT = ['metadata', 'ports', 'children', 'collapsed'] as const;

function expectKept(doc: any, what: string): void {
  for (const sent of [LEGACY_BUILD, LEGACY_TEST]) {
    const job = jobOf(doc, sent.id);
    assert.deepEqual(
      Object.fromEntries(KEPT.map((k) => [k, job[k]])),
      Object.fromEntries(KEPT.map((k) => [k, sent[k]])),
      `${what}: job "${sent.id}" must return metadata, ports, children and collapsed as sent: ${JSON.stringify(job, null, 2)}`,
    );
  }
}

describe('compat: POST /api/workflows with the full old job shape (array form)', () => {
  test('runtime fields are ignored; metadata, ports, children and collapsed are kept and returned', async (t) => {
    const { c } = await serve(t);
    const created = await create(c, LEGACY);
    const id: string = created.id;
    assert.equal(typeof id, 'string');
    const fresh = { status: 'queued', state: 'pending', attempt: 0, duration_secs: null, started_at: null, output: null };
    for (const [doc, what] of [
      [created, '201 body'],
      [await statusDoc(c, id), 'status document'],
    ] as const) {
      assert.deepEqual({ name: doc.name, trigger: doc.trigger }, { name: 'legacy', trigger: 'push' }, what);
      expectJob(doc, 'build', { ...fresh, name: 'Build', command: 'echo hi', depends_on: [], required_labels: [], max_retries: 1 });
      expectJob(doc, 'test', { ...fresh, name: 'Test', command: 'npm test', depends_on: ['build'], max_retries: 0 });
      expectKept(doc, what);
    }

    // Kept once a run starts, in the status document and in the list.
    await c.run(id);
    let doc = await statusDoc(c, id, 'status document after run');
    expectJob(doc, 'build', { status: 'queued', state: 'queued', attempt: 0 });
    expectJob(doc, 'test', { status: 'queued', state: 'pending', attempt: 0, output: null, started_at: null });
    expectKept(doc, 'status document after run');
    const item = (await list(c, '')).find((w) => w.id === id);
    assert.ok(item, `workflow ${id} missing from the list`);
    expectKept(item, 'list item after run');

    const got = await claim(c, 'w-legacy', []);
    assert.equal(got.job.job_id, 'build');
    await complete(c, got.lease.lease_id);
    doc = await statusDoc(c, id, 'status document after build succeeded');
    expectJob(doc, 'build', { status: 'success', state: 'success' });
    expectJob(doc, 'test', { status: 'queued', state: 'queued' });
    expectKept(doc, 'status document after build succeeded');
  });

  test('a truly unknown job key is still refused with 400 {error, message}', async (t) => {
    const { c } = await serve(t);
    for (const [key, value] of [
      ['colour', 1],
      ['comand', 'echo typo'],
    ] as const) {
      const r = await c.post('/api/workflows', { name: 'typo', jobs: [{ ...LEGACY_BUILD, [key]: value }] });
      assert.equal(r.status, 400, `unknown job key "${key}" must be refused: ${r.status} ${r.text}`);
      assert.equal(typeof r.body?.error, 'string', r.text);
      assert.equal(typeof r.body?.message, 'string', r.text);
      assert.match(r.body.message, new RegExp(key), `the message names the key: ${r.text}`);
    }
    const all = await c.get('/api/workflows');
    assert.deepEqual(all.body, [], 'nothing was created');
  });
});

describe('matrix jobs in the seed shapes (README "Matrix, fan-out and artifacts")', () => {
  test('the status document of a matrix workflow stays valid before, during and after its run; depends_on lists the instance ids', async (t) => {
    const s = await serve(t);
    const idle = await create(s.c, {
      id: 'mx',
      jobs: {
        test: { strategy: { matrix: { os: ['a', 'b'], n: [1, 2] } }, run: 'true' },
        after: { needs: 'test', run: 'true' },
      },
    });
    expectJob(idle, 'test', { group: 'test', instances: null, depends_on: [] });
    expectJob(idle, 'after', { depends_on: ['test'] });
    await ok(s.c.post('/api/workflows/mx/run'), 202);
    const running = await statusDoc(s.c, 'mx', 'status document of a started matrix run');
    assert.deepEqual(running.jobs.map((j: any) => j.id), ['test~0', 'test~1', 'test~2', 'test~3', 'after']);
    expectJob(running, 'test~3', { name: 'test (b, 2)', group: 'test', matrix: { os: 'b', n: 2 }, status: 'queued' });
    expectJob(running, 'after', { depends_on: ['test~0', 'test~1', 'test~2', 'test~3'] });
    for (let i = 0; i < 5; i++) {
      const got = await claim(s.c, 'wk', []);
      await ok(s.c.post(`/api/jobs/${got.lease.lease_id}/complete`, { outputs: {} }));
    }
    const done = await statusDoc(s.c, 'mx', 'status document of a finished matrix run');
    assert.equal(done.status, 'success');
    const list = await s.c.get('/api/workflows');
    assertSchema(v.workflowList, list.body, 'GET /api/workflows with a matrix workflow');
  });
});
