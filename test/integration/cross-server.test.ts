/**
 * Two servers on one PostgreSQL database (docs/architecture.md "Events between servers"): what one
 * changes wakes the long-poll claims and live log streams of the other. Each server has its own store,
 * pool and listening connection, and answers real HTTP; neither looks periodically (claim sweep and
 * log poll are set far beyond the tests' deadlines), so only the message from the other server can
 * deliver in time.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import postgres from 'postgres';
import { Engine } from '../../src/engine/engine.js';
import { buildApp } from '../../src/http/app.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { Reaper } from '../../src/runtime/reaper.js';
import { client, request, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { json, openSse } from '../helpers/sse.js';

const NEVER_MS = 600_000;

async function server(t: TestContext, url: string, opts: { reapIntervalMs?: number } = {}) {
  const store = await PostgresStore.open(url, { max: 4 });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const engine = new Engine({ store, logger, claimSweepMs: NEVER_MS });
  await engine.connectPeers();
  const app = await buildApp({ engine, logger, logPollMs: NEVER_MS });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const reaper = opts.reapIntervalMs ? new Reaper(engine.housekeeping, opts.reapIntervalMs, logger) : null;
  reaper?.start();
  t.after(async () => {
    await reaper?.stop();
    await app.close();
    await engine.disconnectPeers();
    await store.close();
  });
  return { url: base, engine, api: client(base) };
}

async function pair(t: TestContext, opts: { reapIntervalMs?: number } = {}) {
  const db = await createDatabase();
  // `after` hooks run in the order they were added: the servers close first, then the database is
  // dropped. Dropped under them, their reaper and listener would chase it for ever.
  let servers;
  try {
    servers = [await server(t, db.url, opts), await server(t, db.url)] as const;
  } finally {
    t.after(() => db.drop());
  }
  const [a, b] = servers;
  return { db, a, b };
}

/** A claim that waits up to 30 s; the test's own deadlines are far shorter. */
function waitingClaim(url: string, worker: string, labels: string[]) {
  return request('POST', `${url}/api/jobs/claim`, { worker_id: worker, labels, lease_ttl_secs: 30, wait_secs: 30 });
}

async function parked(s: { engine: Engine }, n = 1) {
  await until(() => s.engine.waitingClaims >= n, `${n} waiting claims`, 5000, 5);
}

/** Resolves with the claim's answer, or fails well before the claim's own deadline. */
async function answered(p: Promise<{ status: number; body: any; text: string }>, what: string) {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not answered within 10 s`)), 10_000);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

test('a claim waiting on one server is woken by a run started through the other', async (t) => {
  const { a, b } = await pair(t);
  await a.api.createWorkflow({ id: 'x', jobs: { only: { run: 'true', labels: ['x'] } } });
  const pending = waitingClaim(b.url, 'wb', ['x']);
  await parked(b);
  await a.api.run('x');
  const r = await answered(pending, 'claim on B');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.job.job_id, 'only');
});

test('a completion through one server wakes a claim on the other for the job it unblocks; label sets new to it are found', async (t) => {
  const { a, b } = await pair(t);
  // B has never seen these labels: the run through A brings them.
  await a.api.createWorkflow({ id: 'd', jobs: { first: { run: 'true', labels: ['one'] }, then: { run: 'true', labels: ['two'], needs: 'first' } } });
  await a.api.run('d');
  const first = (await a.api.claim('wa', ['one']))!;
  const pending = waitingClaim(b.url, 'wb', ['two']);
  await parked(b);
  const done = await a.api.post(`/api/jobs/${first.lease.lease_id}/complete`, { outputs: { k: 'v' } });
  assert.equal(done.status, 200, done.text);
  const r = await answered(pending, 'claim on B');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.job.job_id, 'then');
  assert.deepEqual(r.body.job.upstream_outputs, { first: { k: 'v' } });
});

test('a retry made through one server is claimed on the other when its backoff ends', async (t) => {
  const { a, b } = await pair(t);
  await a.api.createWorkflow({ id: 'r', jobs: { flaky: { run: 'x', labels: ['r'], retries: 1, backoff: { fixed: { delay_secs: 1 } } } } });
  await a.api.run('r');
  const c = (await a.api.claim('wa', ['r']))!;
  const pending = waitingClaim(b.url, 'wb', ['r']);
  await parked(b);
  const failed = await a.api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'boom', retryable: true });
  assert.equal(failed.status, 200, failed.text);
  assert.equal(failed.body.status, 'queued');
  const r = await answered(pending, 'claim on B');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.job.job_id, 'flaky');
  assert.equal(r.body.job.attempt, 1);
  assert.ok(Date.now() >= failed.body.delayed_until_ms, 'not before its backoff ended');
});

test('a lease reaped by one server is claimed on the other', async (t) => {
  const { a, b } = await pair(t, { reapIntervalMs: 100 });
  await a.api.createWorkflow({ id: 'e', jobs: { lost: { run: 'x', labels: ['e'], retries: 1 } } });
  await a.api.run('e');
  const c = await a.api.post('/api/jobs/claim', { worker_id: 'gone', labels: ['e'], lease_ttl_secs: 1 });
  assert.equal(c.body.job.job_id, 'lost');
  const pending = waitingClaim(b.url, 'wb', ['e']);
  await parked(b);
  const r = await answered(pending, 'claim on B');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.job.job_id, 'lost');
  assert.equal(r.body.job.attempt, 1);
});

test('a live log stream on one server gets the chunks and the end pushed through the other', async (t) => {
  const { a, b } = await pair(t);
  await a.api.createWorkflow({ id: 'l', jobs: { talk: { run: 'x', labels: ['l'] } } });
  await a.api.run('l');
  const c = (await a.api.claim('wa', ['l']))!;
  const stream = await openSse(`${b.url}/api/workflows/l/jobs/talk/logs/stream`);
  t.after(() => stream.close());
  assert.equal(stream.status, 200, stream.text);
  const pushed = await a.api.post(`/api/jobs/${c.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'hello\n' }] });
  assert.equal(pushed.status, 200, pushed.text);
  await stream.waitFor((evs) => evs.some((e) => e.event === 'log'), 'the chunk pushed through A', 10_000);
  await a.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} });
  const evs = await stream.waitForEnd(10_000);
  assert.deepEqual(evs.filter((e) => e.event === 'log').map((e) => json(e).data), ['hello\n']);
  assert.equal(json(evs.at(-1)!).status, 'success');
});

test('a server whose listening connection is cut off listens again and hears the other server', async (t) => {
  const { db, a, b } = await pair(t);
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  t.after(() => sql.end({ timeout: 5 }));
  await a.api.createWorkflow({ id: 'c', jobs: { only: { run: 'true', labels: ['c'] } } });
  const cut = await sql`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
    WHERE datname = ${db.name} AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`;
  assert.equal(cut.length, 2, 'both servers were listening');
  await until(
    async () => (await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND query ILIKE 'LISTEN%'`)[0]!.n === 2,
    'both servers listening again',
    10_000,
    20,
  );
  const pending = waitingClaim(b.url, 'wb', ['c']);
  await parked(b);
  await a.api.run('c');
  const r = await answered(pending, 'claim on B');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.job.job_id, 'only');
});

test('a dashboard following a workflow on one server sees the run and job changes made through the other', async (t) => {
  const { a, b } = await pair(t);
  await b.api.createWorkflow({ id: 'seen', jobs: [{ id: 'x', command: 'true' }, { id: 'y', command: 'true', depends_on: ['x'] }] });
  const events = await openSse(`${a.url}/api/workflows/seen/events`);
  t.after(() => events.close());
  const list = await openSse(`${a.url}/api/events`);
  t.after(() => list.close());
  await b.api.run('seen');
  for (const job of ['x', 'y']) {
    const c = (await b.api.claim('w-b'))!;
    assert.equal(c.job.job_id, job);
    assert.equal((await request('POST', `${b.url}/api/jobs/${c.lease.lease_id}/complete`, {})).status, 200);
  }
  const got = await events.waitFor(
    (evs) => evs.some((e) => e.event === 'run' && json(e).status === 'success'),
    'the run ends, as seen on the other server',
    5000,
  );
  const last = (id: string) => got.filter((e) => e.event === 'job' && json(e).id === id).map((e) => json(e).state).at(-1);
  assert.equal(last('x'), 'success');
  assert.equal(last('y'), 'success');
  await list.waitFor((evs) => evs.some((e) => json(e).id === 'seen' && json(e).status === 'success'), 'the list item ends in success', 5000);
});

/** Every message on the servers' channel, read on a connection of the test's own. */
async function overhear(t: TestContext, url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const heard: Array<{ i: string; j?: unknown[]; s?: 1; w?: 1; all?: 1 }> = [];
  await sql.listen('weft_events', (payload) => heard.push(JSON.parse(payload)));
  t.after(() => sql.end({ timeout: 5 }));
  return heard;
}

test('job changes are not sent to a server where nothing waits or follows; once a claim waits there, they are', async (t) => {
  const { db, a, b } = await pair(t);
  const heard = await overhear(t, db.url);
  await a.api.createWorkflow({ id: 'q', jobs: { one: { run: 'true', labels: ['q'] }, two: { run: 'true', labels: ['q'] } } });
  await a.api.run('q');
  const first = (await a.api.claim('wa', ['q']))!;
  assert.equal((await a.api.post(`/api/jobs/${first.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  // A run with labels new to the servers is always told (label sets): once its message is out, so is
  // anything gathered before it.
  await a.api.createWorkflow({ id: 'm', jobs: { only: { run: 'true', labels: ['marker'] } } });
  await a.api.run('m');
  await until(() => heard.some((m) => m.s === 1), 'the label-set message', 10_000, 5);
  assert.deepEqual(heard.filter((m) => m.j || m.all), [], 'no job changes sent while B wanted none');

  const pending = waitingClaim(b.url, 'wb', ['none-such']);
  await parked(b);
  await until(() => heard.some((m) => m.w === 1), 'B saying it wants changes', 10_000, 5);
  const second = (await a.api.claim('wa', ['q']))!;
  assert.equal((await a.api.post(`/api/jobs/${second.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await until(() => heard.some((m) => m.j), 'the completion sent to B', 10_000, 5);
  await b.engine.close();
  await pending;
});

test('a server that knows a workflow with concurrency groups is sent the other server\'s job changes', async (t) => {
  const { db, a, b } = await pair(t);
  const heard = await overhear(t, db.url);
  await b.api.createWorkflow({
    id: 'g',
    jobs: { build: { run: 'true', labels: ['g'] }, deploy: { needs: 'build', run: 'true', labels: ['g'], concurrency: { group: 'deploy' } } },
  });
  // Started on B: B settles the group's arrivals after changes of this workflow, wherever they are made.
  await b.api.run('g');
  await until(() => heard.some((m) => m.w === 1), 'B saying it wants changes', 10_000, 5);
  const c = (await a.api.claim('wa', ['g']))!;
  assert.equal((await a.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await until(() => heard.some((m) => m.j), 'the completion sent to B', 10_000, 5);
});

test('a server that knows a workflow calling another is sent the other server\'s job changes', async (t) => {
  const { db, a, b } = await pair(t);
  const heard = await overhear(t, db.url);
  await a.api.createWorkflow({ id: 'callee', jobs: { work: { run: 'true', labels: ['callee'] } } });
  // Saved on B: B starts the call once a change of this workflow queues it, wherever it is made.
  await b.api.createWorkflow({ id: 'caller', jobs: { first: { run: 'true', labels: ['caller'] }, call: { needs: 'first', uses: 'callee' } } });
  await until(() => heard.some((m) => m.w === 1), 'B saying it wants changes', 10_000, 5);
  await a.api.run('caller');
  const c = (await a.api.claim('wa', ['caller']))!;
  assert.equal((await a.api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  await until(() => heard.some((m) => m.j), 'the completion sent to B', 10_000, 5);
});
