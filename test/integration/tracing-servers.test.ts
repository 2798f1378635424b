/**
 * Traces across servers (README "Traces (OpenTelemetry)"): three engines on one database, as three
 * `weft server` processes would be, each with a span sink of its own. A run starts on one, its job is
 * claimed on another and ends on a third; the ids the claim named in TRACEPARENT are the ones the
 * ending server exports, each span is exported once, by the server whose operation ended it, and
 * with the times of the store's records. On SQLite (three stores on one file) and on PostgreSQL.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { definitionHash, parseWorkflowObject } from '../../src/definitions/index.js';
import type { SpanRecord } from '../../src/domain/trace-context.js';
import { Engine } from '../../src/engine/engine.js';
import { attemptSpanId, runSpanId, runTraceId } from '../../src/engine/trace-spans.js';
import type { Store } from '../../src/store/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';

const NEVER_MS = 600_000;

interface Server {
  name: string;
  engine: Engine;
  spans: SpanRecord[];
  /** This server's clock: each server reads its own. */
  clock: { now: number };
}

/** Opens stores on one database; `dispose` removes the database once every store is closed. */
type Backend = () => Promise<{ open: () => Promise<Store>; dispose: () => Promise<void> }>;

const sqlite: Backend = async () => {
  const dir = tempDir('weft-traces-');
  const file = path.join(dir, 'weft.db');
  return { open: async () => new SqliteStore(file, { synchronous: 'NORMAL' }), dispose: async () => fs.rmSync(dir, { recursive: true, force: true }) };
};

const pg: Backend = async () => {
  const db = await createDatabase();
  return { open: () => PostgresStore.open(db.url, { max: 3 }), dispose: () => db.drop() };
};

async function servers(t: TestContext, backend: Backend, names: string[]): Promise<Server[]> {
  const { open, dispose } = await backend();
  const out: Server[] = [];
  const stores: Store[] = [];
  // `after` hooks run in the order they were added: this one closes the stores, then drops the database.
  t.after(async () => {
    for (const s of out) {
      s.engine.close();
      await s.engine.tracing?.close();
    }
    for (const store of stores) await store.close();
    await dispose();
  });
  for (const name of names) {
    const store = await open();
    stores.push(store);
    const spans: SpanRecord[] = [];
    const clock = { now: 1_000_000 };
    const engine = new Engine({
      store,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
      now: () => clock.now,
      claimSweepMs: NEVER_MS,
      traceSink: { export: (s) => spans.push(...s) },
    });
    out.push({ name, engine, spans, clock });
  }
  return out;
}

/** Exports what each server heard so far (what a graceful stop does); the spans each one exported. */
async function flushed(all: Server[]): Promise<Record<string, SpanRecord[]>> {
  for (const s of all) await s.engine.tracing!.close();
  return Object.fromEntries(all.map((s) => [s.name, s.spans]));
}

async function workflow(engine: Engine, value: { id: string; jobs: Record<string, unknown> }) {
  const def = parseWorkflowObject(value, { source: 'test' });
  await engine.saveWorkflow(def, definitionHash(def), 'api');
}

async function runOf(engine: Engine, id: string, n = 1) {
  const run = await engine.readStore((r) => r.getRun(id, n));
  assert.ok(run);
  return run;
}

const claim = async (s: Server, worker: string) => {
  const c = await s.engine.claim({ worker_id: worker, labels: [], lease_ttl_secs: 30 });
  assert.ok(c, `${s.name}: a job to claim`);
  return c;
};

for (const [label, backend] of [['sqlite', sqlite], ['postgres', pg]] as const) {
  describe(label, () => {
    test(`${label}: started on A, claimed on B, completed on C: C exports the attempt and the run with the ids B's claim named`, async (t) => {
      const [a, b, c] = await servers(t, backend, ['A', 'B', 'C']);
      // A workflow's own TRACEPARENT cannot put the job's spans in another trace: weft names the span.
      const forged = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
      await workflow(a!.engine, { id: 'w', jobs: { only: { run: 'true', labels: ['x'], env: { TRACEPARENT: forged } } } });
      a!.clock.now = 1_000_000;
      await a!.engine.run('w');
      b!.clock.now = 1_000_250;
      const claimed = await b!.engine.claim({ worker_id: 'worker-b', labels: ['x'], lease_ttl_secs: 30 });
      assert.ok(claimed);
      c!.clock.now = 1_001_000;
      await c!.engine.leases.complete(claimed.lease.lease_id, {});
      const spans = await flushed([a!, b!, c!]);
      assert.deepEqual([spans.A, spans.B], [[], []], 'the servers that ended nothing export nothing');

      const run = await runOf(a!.engine, 'w');
      const trace = runTraceId(run);
      const attemptId = attemptSpanId(run, 'only', 0);
      assert.equal(claimed.job.env?.TRACEPARENT, `00-${trace}-${attemptId}-01`, 'the claim names the attempt span');
      const byName = new Map(spans.C!.map((s) => [s.name, s]));
      assert.deepEqual([...byName.keys()].sort(), ['execute', 'job only', 'queue', 'run w']);
      const runSpan = byName.get('run w')!;
      assert.deepEqual(
        [runSpan.traceId, runSpan.spanId, runSpan.parentSpanId, runSpan.startMs, runSpan.endMs, runSpan.attributes['weft.run.status']],
        [trace, runSpanId(run), undefined, 1_000_000, 1_001_000, 'success'],
      );
      const job = byName.get('job only')!;
      assert.deepEqual(
        [job.traceId, job.spanId, job.parentSpanId, job.startMs, job.endMs],
        [trace, attemptId, runSpan.spanId, 1_000_000, 1_001_000],
        'from claimable to completed, as the store recorded them',
      );
      assert.deepEqual(
        [job.attributes['weft.worker.id'], job.attributes['weft.job.labels'], job.attributes['weft.job.result'], job.attributes['weft.job.queue_wait_ms']],
        ['worker-b', ['x'], 'success', 250],
      );
      assert.deepEqual([byName.get('queue')!.startMs, byName.get('queue')!.endMs, byName.get('execute')!.endMs], [1_000_000, 1_000_250, 1_001_000]);
    });

    test(`${label}: a failure retried, an expiry found by another server's reaper, then a success: each attempt once, by the server that ended it`, async (t) => {
      const [a, b, c] = await servers(t, backend, ['A', 'B', 'C']);
      await workflow(a!.engine, { id: 'w', jobs: { flaky: { run: 'true', retries: 2 } } });
      await a!.engine.run('w');
      for (const s of [a!, b!, c!]) s.clock.now = 1_000_100;
      const first = await claim(b!, 'worker-b');
      b!.clock.now = 1_000_500;
      assert.equal((await b!.engine.leases.fail(first.lease.lease_id, 'boom', true)).status, 'queued');
      c!.clock.now = 1_000_700;
      const second = await claim(c!, 'worker-c');
      assert.equal(second.job.attempt, 1);
      // The lease runs out unseen; A's reaper finds it.
      a!.clock.now = 1_000_700 + 31_000;
      const reaped = await a!.engine.housekeeping.reap();
      assert.equal(reaped.expired, 1);
      b!.clock.now = a!.clock.now + 100;
      const third = await claim(b!, 'worker-b');
      b!.clock.now += 400;
      await b!.engine.leases.complete(third.lease.lease_id, {});
      const spans = await flushed([a!, b!, c!]);
      const run = await runOf(a!.engine, 'w');
      const attempts = (s: SpanRecord[]) => s.filter((x) => x.name === 'job flaky').map((x) => [x.attributes['weft.job.attempt'], x.attributes['weft.job.result']]);
      assert.deepEqual(attempts(spans.B!), [[0, 'failure'], [2, 'success']]);
      assert.deepEqual(attempts(spans.A!), [[1, 'expired']], 'the expiry, exported by the reaper that found it');
      assert.deepEqual(spans.C!, [], 'C only claimed');
      const expired = spans.A!.find((x) => x.name === 'job flaky')!;
      assert.deepEqual(
        [expired.spanId, expired.startMs, expired.endMs, expired.attributes['weft.worker.id'], expired.attributes['weft.job.retried'], expired.error],
        [attemptSpanId(run, 'flaky', 1), 1_000_500, 1_000_700 + 31_000, 'worker-c', true, 'lease expired'],
        'the re-queued attempt’s ready time, claim and worker come from the store’s record of it as it ran',
      );
      assert.equal(second.job.env?.TRACEPARENT?.split('-')[2], expired.spanId);
      const failed = spans.B!.find((x) => x.name === 'job flaky' && x.attributes['weft.job.attempt'] === 0)!;
      assert.deepEqual([failed.startMs, failed.endMs, failed.attributes['weft.job.retried'], failed.error], [1_000_000, 1_000_500, true, 'boom']);
      assert.equal(spans.B!.filter((x) => x.name === 'run w').length, 1, 'the run ended by B’s completion');
    });

    test(`${label}: the last two jobs ended at once on two servers: the run's span is exported by one of them`, async (t) => {
      const [a, b, c] = await servers(t, backend, ['A', 'B', 'C']);
      await workflow(a!.engine, { id: 'w', jobs: { x: { run: 'true' }, y: { run: 'true' } } });
      for (let n = 1; n <= 5; n++) {
        for (const s of [a!, b!, c!]) s.clock.now = 2_000_000 * n;
        await a!.engine.run('w');
        const [cx, cy] = [await claim(b!, 'wb'), await claim(c!, 'wc')];
        b!.clock.now += 10;
        c!.clock.now += 20;
        await Promise.all([b!.engine.leases.complete(cx.lease.lease_id, {}), c!.engine.leases.complete(cy.lease.lease_id, {})]);
      }
      const spans = await flushed([a!, b!, c!]);
      const runs = [...spans.B!, ...spans.C!].filter((s) => s.name === 'run w').map((s) => s.attributes['weft.run.number']);
      assert.deepEqual(runs.sort(), [1, 2, 3, 4, 5], 'each run once');
      assert.deepEqual(spans.A, [], 'A only started them');
      assert.equal([...spans.B!, ...spans.C!].filter((s) => s.name.startsWith('job ')).length, 10);
    });

    test(`${label}: a cancel on A of a job running under B's claim: A exports the run and the cancelled attempt`, async (t) => {
      const [a, b] = await servers(t, backend, ['A', 'B']);
      await workflow(a!.engine, { id: 'w', jobs: { long: { run: 'sleep 600' }, after: { needs: 'long', run: 'true' } } });
      await a!.engine.run('w');
      const running = await claim(b!, 'worker-b');
      a!.clock.now += 5000;
      await a!.engine.cancel('w');
      const spans = await flushed([a!, b!]);
      assert.deepEqual(spans.B, []);
      const run = await runOf(a!.engine, 'w');
      const job = spans.A!.find((s) => s.name === 'job long')!;
      assert.deepEqual(
        [job.spanId, job.parentSpanId, job.endMs, job.attributes['weft.job.result'], job.attributes['weft.worker.id'], job.error],
        [attemptSpanId(run, 'long', 0), runSpanId(run), a!.clock.now, 'cancelled', 'worker-b', undefined],
      );
      assert.equal(running.job.env?.TRACEPARENT?.split('-')[2], job.spanId);
      assert.deepEqual(spans.A!.filter((s) => s.name.startsWith('job ')).map((s) => s.name), ['job long'], 'a job that never ran has no attempt span');
      assert.equal(spans.A!.find((s) => s.name === 'run w')?.attributes['weft.run.status'], 'cancelled');
    });
  });
}

test('without a span sink there is no tracer and a claim carries no TRACEPARENT', async (t) => {
  const { open, dispose } = await sqlite();
  const store = await open();
  const engine = new Engine({ store, logger: pino({ level: 'silent' }), claimSweepMs: NEVER_MS });
  t.after(async () => {
    engine.close();
    await store.close();
    await dispose();
  });
  assert.equal(engine.tracing, null);
  assert.equal(engine.events.listenerCount('changed'), 0);
  assert.equal(engine.events.listenerCount('attempt'), 0);
  await workflow(engine, { id: 'w', jobs: { only: { run: 'true', env: { TRACEPARENT: 'as the workflow says' } } } });
  await engine.run('w');
  const c = await engine.claim({ worker_id: 'w', labels: [] });
  assert.equal(c?.job.env?.TRACEPARENT, 'as the workflow says', 'a workflow’s own value goes through untouched');
});
