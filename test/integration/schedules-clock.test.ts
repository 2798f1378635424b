/**
 * Schedules driven by an injected clock (docs/api.md "Schedules"): two engines, each on its own
 * connection to one real database (a SQLite file, a PostgreSQL database), run scheduler passes at the
 * same instants, as two `weft scheduler` processes would. The clock moves from one scheduled time to
 * the next, so every policy is checked at the exact times it speaks of, without waiting for them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { definitionHash, parseWorkflowObject } from '../../src/definitions/index.js';
import { Engine } from '../../src/engine/engine.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { createDatabase } from '../helpers/postgres.js';

const at = (iso: string) => Date.parse(iso);

interface Pair {
  a: Engine;
  b: Engine;
  clock: { now: number };
  /** Every log line of both engines, parsed. */
  logs: Array<Record<string, unknown>>;
  store: Store;
}

type Opener = () => Promise<{ open: () => Promise<Store>; dispose: () => Promise<void> }>;

const openers: Record<string, Opener> = {
  sqlite: async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-sched-'));
    const file = path.join(dir, 'weft.db');
    return { open: async () => new SqliteStore(file, { synchronous: 'NORMAL' }), dispose: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  },
  postgres: async () => {
    const db = await createDatabase();
    return { open: () => PostgresStore.open(db.url, { max: 4 }), dispose: db.drop };
  },
};

async function pair(kind: string, start: number): Promise<Pair> {
  const { open, dispose } = await openers[kind]!();
  const stores = [await open(), await open()];
  const clock = { now: start };
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      done();
    },
  });
  const engine = (store: Store) => new Engine({ store, logger: pino({ level: 'info' }, sink), now: () => clock.now, scheduleGraceMs: 60_000 });
  const [a, b] = [engine(stores[0]!), engine(stores[1]!)];
  after(async () => {
    for (const e of [a, b]) e.close();
    for (const s of stores) await s.close();
    await dispose();
  });
  return { a, b, clock, logs, store: stores[0]! };
}

function definition(id: string, schedule: unknown[], run = 'true') {
  const def = parseWorkflowObject({ on: { schedule }, jobs: { a: { run }, b: { needs: 'a', run } } }, { source: 'test', id });
  return { def, hash: definitionHash(def) };
}

async function save(e: Engine, id: string, schedule: unknown[], run?: string) {
  const { def, hash } = definition(id, schedule, run);
  return e.saveWorkflow(def, hash, 'api');
}

/** Both engines' passes, twice each, all at once. */
async function race(p: Pair): Promise<number> {
  const totals = await Promise.all([p.a.housekeeping.fireSchedules(), p.b.housekeeping.fireSchedules(), p.a.housekeeping.fireSchedules(), p.b.housekeeping.fireSchedules()]);
  return totals.reduce((n, t) => n + (t?.started ?? 0), 0);
}

const runsOf = async (e: Engine, id: string) => (await e.runs(id, { limit: 100, offset: 0 })).map((r) => [r.run_number, r.created_at_ms]);

for (const kind of Object.keys(openers)) {
  describe(`schedules on ${kind}`, () => {
    test('two schedulers racing on the same due times start exactly one run per scheduled time', async () => {
      const p = await pair(kind, at('2026-06-01T00:00:30Z'));
      const ids = Array.from({ length: 8 }, (_, i) => `every5-${i}`);
      for (const id of ids) await save(p.a, id, [{ cron: '*/5 * * * *' }]);
      assert.equal((await p.b.status(ids[0]!)).next_fire_at_ms, at('2026-06-01T00:05:00Z'));
      assert.equal(await race(p), 0, 'nothing is due yet');
      for (let k = 1; k <= 4; k++) {
        const fireAt = at('2026-06-01T00:00:00Z') + k * 5 * 60_000;
        p.clock.now = fireAt + 1500;
        assert.equal(await race(p), ids.length, `time ${k}: one run per workflow`);
        assert.equal(await race(p), 0, `time ${k}: a later pass starts nothing more`);
        for (const id of ids) {
          const doc = await p.a.status(id);
          assert.deepEqual([doc.run_number, doc.status, doc.next_fire_at_ms], [k, 'running', fireAt + 5 * 60_000]);
          await p.b.cancel(id);
        }
      }
      for (const id of ids) assert.equal((await runsOf(p.a, id)).length, 4);
      const listed = await p.b.listWorkflows({ limit: 100, offset: 0 });
      assert.deepEqual(new Set(listed.map((d) => d.next_fire_at_ms)), new Set([at('2026-06-01T00:25:00Z')]));
    });

    test('times missed while no scheduler ran: catch_up latest starts one run for the latest, none drops them', async () => {
      const p = await pair(kind, at('2026-06-01T00:00:00Z'));
      await save(p.a, 'latest', [{ cron: '0 2 * * *' }]);
      await save(p.a, 'none', [{ cron: '0 2 * * *', catch_up: 'none' }]);
      // Three nightly times pass with nothing running; the schedulers start at noon on the fourth day.
      p.clock.now = at('2026-06-04T12:00:00Z');
      assert.equal(await race(p), 1);
      assert.deepEqual(await runsOf(p.a, 'latest'), [[1, p.clock.now]]);
      assert.deepEqual(await runsOf(p.a, 'none'), []);
      for (const id of ['latest', 'none']) assert.equal((await p.a.status(id)).next_fire_at_ms, at('2026-06-05T02:00:00Z'));
      const dropped = p.logs.find((l) => l.msg === 'missed scheduled times dropped (catch_up: none)');
      assert.equal(dropped?.workflow_id, 'none');
      assert.equal(dropped?.missed_at, '2026-06-04T02:00:00.000Z');
      const caughtUp = p.logs.find((l) => l.msg === 'scheduled run started for a missed time');
      assert.deepEqual([caughtUp?.workflow_id, caughtUp?.fire_at, caughtUp?.run_number], ['latest', '2026-06-04T02:00:00.000Z', 1]);
      await p.a.cancel('latest');
      // The next time comes while the schedulers run: both start on time.
      p.clock.now = at('2026-06-05T02:00:02Z');
      assert.equal(await race(p), 2);
      assert.deepEqual((await runsOf(p.a, 'none')).map(([n]) => n), [1]);
      assert.deepEqual((await runsOf(p.a, 'latest')).map(([n]) => n), [2, 1]);
    });

    test('a time that comes while a run is active is skipped and logged, not retried; the next one starts a run', async () => {
      const p = await pair(kind, at('2026-06-01T00:30:00Z'));
      await save(p.a, 'hourly', [{ cron: '0 * * * *', timezone: 'Europe/Paris' }]);
      p.clock.now = at('2026-06-01T01:00:01Z');
      assert.equal(await race(p), 1);
      p.clock.now = at('2026-06-01T02:00:01Z');
      assert.equal(await race(p), 0);
      const skipped = p.logs.filter((l) => l.msg === 'scheduled run skipped: the workflow already has an active run');
      assert.equal(skipped.length, 1, 'logged once, by the scheduler that handled the time');
      assert.deepEqual([skipped[0]!.workflow_id, skipped[0]!.active_run, skipped[0]!.fire_at], ['hourly', 1, '2026-06-01T02:00:00.000Z']);
      assert.equal((await p.a.status('hourly')).next_fire_at_ms, at('2026-06-01T03:00:00Z'));
      await p.a.cancel('hourly');
      p.clock.now = at('2026-06-01T02:30:00Z');
      assert.equal(await race(p), 0, 'the skipped time is not retried once the run is over');
      p.clock.now = at('2026-06-01T03:00:01Z');
      assert.equal(await race(p), 1);
      assert.deepEqual((await runsOf(p.a, 'hourly')).map(([n]) => n), [2, 1]);
    });

    test('a stored schedule that no longer computes is unscheduled with an error; the others still fire', async () => {
      const p = await pair(kind, at('2026-06-01T00:00:00Z'));
      await save(p.a, 'good', [{ cron: '0 2 * * *' }]);
      // As if stored by a runtime that knew a time zone this one does not.
      const { def, hash } = definition('broken', [{ cron: '0 2 * * *' }]);
      def.schedules = [{ cron: '0 2 * * *', timezone: 'Mars/Olympus', catch_up: 'latest' }];
      await p.store.saveWorkflow({
        id: 'broken', name: 'broken', trigger: null, definition: def, source: 'api', hash,
        created_at_ms: p.clock.now, updated_at_ms: p.clock.now, latest_run: 0, next_fire_at_ms: at('2026-06-01T01:00:00Z'),
      });
      p.clock.now = at('2026-06-01T02:00:01Z');
      assert.equal(await race(p), 1);
      assert.equal((await p.a.status('good')).run_number, 1);
      assert.deepEqual([(await p.a.status('broken')).run_number, (await p.a.status('broken')).next_fire_at_ms], [null, null]);
      assert.ok(p.logs.some((l) => l.level === 50 && l.workflow_id === 'broken' && /cannot be computed/.test(String(l.msg))));
    });

    test('a changed definition recomputes the next time when its schedules changed, keeps it otherwise', async () => {
      const p = await pair(kind, at('2026-06-01T00:00:00Z'));
      await save(p.a, 'edit', [{ cron: '0 2 * * *' }]);
      assert.equal((await p.a.status('edit')).next_fire_at_ms, at('2026-06-01T02:00:00Z'));
      // 02:00 passes with no scheduler; the jobs are edited meanwhile: the catch-up still comes.
      p.clock.now = at('2026-06-01T05:00:00Z');
      assert.equal((await save(p.a, 'edit', [{ cron: '0 2 * * *' }], 'echo edited')).outcome, 'updated');
      assert.equal((await p.a.status('edit')).next_fire_at_ms, at('2026-06-01T02:00:00Z'));
      assert.equal(await race(p), 1);
      assert.equal((await p.a.status('edit')).jobs[0]!.command, 'echo edited');
      assert.equal((await p.a.status('edit')).next_fire_at_ms, at('2026-06-02T02:00:00Z'));
      await save(p.a, 'edit', [{ cron: '15 6 * * *' }], 'echo edited');
      assert.equal((await p.a.status('edit')).next_fire_at_ms, at('2026-06-01T06:15:00Z'));
      const { def, hash } = definition('edit', [{ cron: '15 6 * * *' }]);
      delete def.schedules;
      await p.b.saveWorkflow({ ...def, trigger: 'push' }, hash + 'x', 'api');
      assert.equal((await p.a.status('edit')).next_fire_at_ms, null, 'no schedules: null');
      p.clock.now = at('2026-06-09T00:00:00Z');
      assert.equal(await race(p), 0);
    });
  });
}
