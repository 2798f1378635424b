/**
 * Schema version 24 of the SQLite store (src/store/sqlite/migrations.ts): leases move from the
 * `leases` table into their job's row. A database left by version 23 with leases in every state is
 * upgraded by opening it; every lease must read back as it was, and every late call on it must get
 * the answer it got before (SPEC/CONTRACT lease errors: a settled lease is `settled`, not unknown).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { QUERIES } from '../../src/store/sqlite/queries.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { jobRow } from '../../src/store/rows.js';
import type { LeaseRecord, NewJob } from '../../src/store/store.js';
import { buildJobs, change, claim, complete, job, lease, read, runStatus, wfRecord } from './fixtures.js';

const WF = 'up';

/** A lease row as version 23 stored it. */
function leaseRow(over: Partial<LeaseRecord> & Pick<LeaseRecord, 'lease_id' | 'job_id' | 'job_row_id' | 'state'>): LeaseRecord {
  return {
    workflow_id: WF, run_number: 1, attempt: 0, worker_id: 'wk1', ttl_secs: 600, granted_at_ms: 1000, renewed_at_ms: 1000,
    expires_at_ms: 601_000, token_name: null, ...over,
  };
}

/**
 * Run 1 of `up`: `live` runs its second attempt under L-live (token tok-a, renewed once; its first
 * attempt's L-old expired), `late` runs under L-late, past its expiry by the time the test acts,
 * `done` succeeded under L-done, and `next` waits for `live`. L-void is an active lease of `done` that
 * no job runs under (what a crash between two writes of an older version could leave). Run 2, a
 * re-run, keeps `done`: its copy names L-done without holding it.
 */
function writeVersion23(file: string): Record<string, LeaseRecord> {
  const db = new Database(file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
  for (const m of SQLITE_MIGRATIONS.filter((x) => x.version <= 23)) {
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
  }
  const w = wfRecord(WF, 1000, { latest_run: 2 });
  db.prepare(QUERIES.insertWorkflow).run({ ...w, definition: JSON.stringify(w.definition), schedules: null });
  const run = (n: number, status: string, unfinished: number, rerunOf: number | null) =>
    db.prepare(QUERIES.insertRun).run({
      workflow_id: WF, run_number: n, status, created_at_ms: 1000, finished_at_ms: null, unfinished_jobs: unfinished, inputs: null,
      rerun_of: rerunOf, plan: null, concurrency_group: null, trigger: null, definition_hash: null, event_name: null,
    });
  run(1, 'running', 3, null);
  run(2, 'running', 1, 1);
  const patch: Record<string, Partial<NewJob>> = {
    live: { status: 'running', attempt: 1, started_at_ms: 1000, worker_id: 'wk1', lease_id: 'L-live' },
    late: { status: 'running', started_at_ms: 1000, worker_id: 'wk2', lease_id: 'L-late' },
    done: { status: 'success', outputs: { D: '1' }, started_at_ms: 1000, finished_at_ms: 1200, worker_id: 'wk1', lease_id: 'L-done' },
  };
  const specs = { live: { max_retries: 3 }, late: { max_retries: 3 }, done: {}, next: { needs: ['live'] } };
  const insert = db.prepare(QUERIES.insertJob);
  for (const j of buildJobs(WF, 1000, specs)) insert.run(jobRow({ ...j, ...patch[j.job_id] }, 1));
  const kept = buildJobs(WF, 2000, { done: {}, again: {} }).map((j) => (j.job_id === 'done' ? { ...j, ...patch.done! } : j));
  for (const j of kept) insert.run(jobRow(j, 2));
  db.prepare(`INSERT INTO label_sets VALUES ('', '[]')`).run();
  const rowOf = (id: string) => (db.prepare('SELECT row_id FROM jobs WHERE run_number = 1 AND job_id = ?').get(id) as { row_id: number }).row_id;
  const leases: Record<string, LeaseRecord> = {
    old: leaseRow({ lease_id: 'L-old', job_id: 'live', job_row_id: rowOf('live'), state: 'expired', worker_id: 'wk0', ttl_secs: 30, granted_at_ms: 500, renewed_at_ms: 500, expires_at_ms: 30_500, token_name: 'tok-a' }),
    live: leaseRow({ lease_id: 'L-live', job_id: 'live', job_row_id: rowOf('live'), attempt: 1, state: 'active', renewed_at_ms: 1500, expires_at_ms: 601_500, token_name: 'tok-a' }),
    late: leaseRow({ lease_id: 'L-late', job_id: 'late', job_row_id: rowOf('late'), state: 'active', worker_id: 'wk2', ttl_secs: 30, expires_at_ms: 31_000 }),
    done: leaseRow({ lease_id: 'L-done', job_id: 'done', job_row_id: rowOf('done'), state: 'completed' }),
    void: leaseRow({ lease_id: 'L-void', job_id: 'done', job_row_id: rowOf('done'), state: 'active', worker_id: 'wk3' }),
  };
  const ins = db.prepare(`INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
      granted_at_ms, renewed_at_ms, expires_at_ms, state, token_name)
    VALUES (@lease_id, @job_row_id, @workflow_id, @run_number, @job_id, @attempt, @worker_id, @ttl_secs,
      @granted_at_ms, @renewed_at_ms, @expires_at_ms, @state, @token_name)`);
  for (const l of Object.values(leases)) ins.run(l);
  db.close();
  return leases;
}

test('sqlite: version 24 moves each job\'s lease into its row; every lease reads back and answers late calls as before, and the runs carry on', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-lease-upgrade-'));
  const file = path.join(dir, 'weft.db');
  try {
    const before = writeVersion23(file);
    const store = new SqliteStore(file, { synchronous: 'NORMAL' });
    try {
      // Every lease reads back as it was; the void one is settled, as the first call on it would have.
      for (const key of ['old', 'live', 'late', 'done'] as const) assert.deepEqual(await lease(store, before[key]!.lease_id), before[key], key);
      assert.deepEqual(await lease(store, 'L-void'), { ...before.void, state: 'expired' });
      assert.deepEqual((await read(store, (r) => r.activeLeases())).map((l) => l.lease_id).sort(), ['L-late', 'L-live']);
      assert.deepEqual((await job(store, WF, 'done', 2)).lease_id, 'L-done', 'the kept copy still names the lease it kept');

      // The live lease stays bound to its token and renews by its own ttl.
      assert.deepEqual(await store.heartbeat('L-live', 2000, 'tok-b'), { kind: 'not_yours', token_name: 'tok-a' });
      assert.deepEqual(await store.heartbeat('L-live', 2000, 'tok-a'), {
        kind: 'renewed', lease: { ...before.live, renewed_at_ms: 2000, expires_at_ms: 602_000 },
      });
      // Late calls on settled leases: their state, not "unknown lease".
      assert.deepEqual(await store.complete('L-old', {}, 2000, 'tok-a'), { kind: 'settled', state: 'expired' });
      assert.deepEqual(await store.complete('L-done', {}, 2000), { kind: 'settled', state: 'completed' });
      assert.deepEqual(await store.fail('L-void', 'x', true, 2000), { kind: 'settled', state: 'expired' });

      // The reaper finds the lease that ran out in the job row, re-queues its job, and the lease moves to
      // the history with its state: a late complete learns it expired.
      assert.deepEqual((await store.expireLeases(40_000, 10)).changes, [change(WF, 'late')]);
      assert.deepEqual([(await job(store, WF, 'late')).status, (await job(store, WF, 'late')).attempt], ['queued', 1]);
      assert.deepEqual(await lease(store, 'L-late'), { ...before.late, state: 'expired' });
      assert.deepEqual(await store.complete('L-late', {}, 40_000), { kind: 'settled', state: 'expired' });

      // The live lease completes with its token and queues what waits for it; the runs end.
      const out = await store.complete('L-live', { L: '1' }, 50_000, 'tok-a');
      assert.equal(out.kind, 'completed');
      assert.deepEqual(out.kind === 'completed' && out.enqueued, ['next']);
      assert.equal((await lease(store, 'L-live')).state, 'completed');
      const got = await claim(store, 60_000, { max: 3 });
      assert.deepEqual(got.map((c) => `${c.job.run_number}/${c.job.job_id}`).sort(), ['1/late', '1/next', '2/again']);
      for (const c of got) await complete(store, c.lease.lease_id, {}, 61_000);
      assert.equal((await runStatus(store, WF, 1)).status, 'success');
      assert.equal((await runStatus(store, WF, 2)).status, 'success');
      assert.deepEqual(await lease(store, 'L-done'), before.done, 'the kept job of the re-run did not take the lease over');
    } finally {
      await store.close();
    }
    // What is left in `leases` is the history only, all settled; its live-lease indexes are gone.
    const db = new Database(file, { readonly: true });
    try {
      assert.deepEqual(db.prepare(`SELECT lease_id, state FROM leases ORDER BY lease_id`).all(), [
        { lease_id: 'L-late', state: 'expired' },
        { lease_id: 'L-old', state: 'expired' },
        { lease_id: 'L-void', state: 'expired' },
      ]);
      const indexes = (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'leases'`).all() as Array<{ name: string }>).map((r) => r.name);
      assert.deepEqual(indexes.sort(), ['leases_job', 'sqlite_autoindex_leases_1']);
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
