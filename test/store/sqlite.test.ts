import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { QUERIES } from '../../src/store/sqlite/queries.js';
import { withSqlitePlans } from '../helpers/plans.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { parseDatabaseUrl } from '../../src/store/index.js';
import { Conn, openConnection } from '../../src/store/sqlite/connection.js';
import { runBatch } from '../../src/store/sqlite/group-commit.js';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { writeCall } from '../../src/store/sqlite/writes.js';
import { planRun } from '../../src/engine/run-plan.js';
import type { WorkflowDefinition } from '../../src/domain/model.js';
import { storeConformance } from './conformance.js';
import { claimOne, complete, HASH, job, start, wfRecord } from './fixtures.js';
import { assertUpgradeCarriesOn, V1_WORKFLOWS, v1JobRow, v1Jobs } from './upgrade-fixture.js';

const OPTS = { synchronous: 'NORMAL' } as const;

function tempFile(): { dir: string; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-store-'));
  return { dir, file: path.join(dir, 'weft.db') };
}

storeConformance(
  'sqlite',
  async () => {
    const { dir, file } = tempFile();
    return {
      store: new SqliteStore(file, OPTS),
      another: async () => new SqliteStore(file, OPTS),
      target: { kind: 'sqlite', file },
      dispose: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  },
  { joinRaces: 200 },
);

// `:memory:` cannot be shared with a writer thread, so its writes run inline: the same behaviour,
// through the other transaction path.
storeConformance(
  'sqlite :memory: (inline writes)',
  async () => ({
    store: new SqliteStore(':memory:'),
    another: () => Promise.reject(new Error('an in-memory database has a single store')),
    target: { kind: 'sqlite', file: ':memory:' },
    dispose: async () => {},
  }),
  { joinRaces: 0, concurrency: false },
);

test('sqlite: the claim, reaper and job-count statements are reads of their partial indexes', async () => {
  const { dir, file } = tempFile();
  await new SqliteStore(file).close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (sql: string, ...args: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    const claim = plan(QUERIES.claimCandidates, '', 0, 8);
    assert.match(claim, /USING (COVERING )?INDEX jobs_claim/, claim);
    assert.doesNotMatch(claim, /TEMP B-TREE|SCAN jobs\b(?! USING)/, claim);
    const expiry = plan(QUERIES.expiredLeases, 0, 1);
    assert.match(expiry, /USING (COVERING )?INDEX jobs_lease_expiry/, expiry);
    assert.doesNotMatch(expiry, /TEMP B-TREE/, expiry);
    const timeouts = plan(QUERIES.timedOutJobs, 0, 1);
    assert.match(timeouts, /USING (COVERING )?INDEX jobs_deadline/, timeouts);
    assert.doesNotMatch(timeouts, /TEMP B-TREE/, timeouts);
    // Read at every scrape of GET /metrics: the queue's and the active leases' entries, no finished job.
    const counts = plan(QUERIES.activeJobCounts);
    assert.match(counts, /SCAN jobs USING COVERING INDEX jobs_claim/, counts);
    assert.match(counts, /SCAN jobs USING INDEX jobs_lease_expiry/, counts);
    assert.match(counts, /USING (COVERING )?INDEX jobs_awaiting_approval/, counts);
    assert.doesNotMatch(counts, /SCAN jobs\b(?! USING)/, counts);
    // The reaper's worker pruning: the oldest sightings off workers_last_seen; the holders of active
    // leases read once off the covering jobs_lease_expiry (only active leases are in it).
    const prune = plan(QUERIES.pruneWorkers, 0, 100);
    assert.match(prune, /SEARCH w USING (COVERING )?INDEX workers_last_seen \(last_seen_ms<\?\)/, prune);
    assert.match(prune, /LIST SUBQUERY \d+ \| SCAN jobs USING COVERING INDEX jobs_lease_expiry/, prune);
    assert.doesNotMatch(prune.replace('SCAN jobs USING COVERING INDEX jobs_lease_expiry', ''), /TEMP B-TREE|\bSCAN\b/, prune);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: no statement takes its LIMIT as a bare parameter, which SQLite would compile again at every new binding', () => {
  // SQLite plans `LIMIT ?` for the value bound and so re-prepares the statement whenever the binding
  // changes; `LIMIT +?` gives the same plan without that (src/store/sqlite/queries.ts).
  const bare = Object.entries(QUERIES).filter(([, sql]) => /\bLIMIT\s+[?@:$]/i.test(sql)).map(([name]) => name);
  assert.deepEqual(bare, [], `write these statements' LIMIT as \`LIMIT +?\`: ${bare.join(', ')}`);
  assert.ok(Object.values(QUERIES).filter((sql) => /\bLIMIT\s+\+[?@]/.test(sql)).length >= 30, 'the check above no longer sees the statements it guards');
});

test('sqlite: every lease call finds its lease by id through jobs_lease, the leases moved on from by their primary key', async () => {
  await withSqlitePlans((plan) => {
    const id = { lease_id: 'l' };
    const expected: Array<[keyof typeof QUERIES, unknown[], RegExp]> = [
      ['getLease', [id], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\).*SEARCH leases USING INDEX sqlite_autoindex_leases_1 \(lease_id=\?\)/],
      ['leaseJobEnv', [id], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\).*SEARCH l USING INDEX sqlite_autoindex_leases_1 \(lease_id=\?\)/],
      ['succeedLiveJob', [{ ...id, holder: null, now_ms: 1, outputs: '{}' }], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\)/],
      ['renewLease', [1, 2, 'l'], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\)/],
      ['settleLease', ['expired', 'l'], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\)/],
      ['closeLease', ['cancelled', 'l'], /SEARCH jobs USING INDEX jobs_lease \(lease_id=\?\)/],
      ['activeLeases', [], /SCAN jobs USING INDEX jobs_lease_expiry/],
    ];
    for (const [name, args, re] of expected) {
      const p = plan(QUERIES[name], ...args);
      assert.match(p, re, `${name}: ${p}`);
      assert.doesNotMatch(p.replace('SCAN jobs USING INDEX jobs_lease_expiry', ''), /\bSCAN\b|TEMP B-TREE/, `${name} reads a whole table: ${p}`);
    }
  });
});

test('sqlite: a scheduler pass reads the due workflows off the partial index workflows_next_fire', async () => {
  const { dir, file } = tempFile();
  await new SqliteStore(file).close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${QUERIES.dueSchedules}`).all(0, 100) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    assert.match(plan, /SEARCH workflows USING INDEX workflows_next_fire \((next_fire_at_ms>\? AND )?next_fire_at_ms<\?\)/, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE|\bSCAN\b/, plan);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: retention finds and deletes runs through indexes; only pruneByCount walks the workflows', async () => {
  const { dir, file } = tempFile();
  await new SqliteStore(file).close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (sql: string, ...args: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    const run = ['w', 1];
    const expected: Array<[keyof typeof QUERIES, unknown[], RegExp]> = [
      ['pruneByAge', [0, 10], /SEARCH r USING INDEX runs_finished \(finished_at_ms<\?\)/],
      ['pruneByCount', [1, 10], /SEARCH r USING INDEX sqlite_autoindex_runs_1 \(workflow_id=\? AND run_number<\?\)/],
      ['runsOfWorkflow', ['w', 10], /SEARCH runs USING INDEX sqlite_autoindex_runs_1 \(workflow_id=\?\)/],
      // jobs_run_rows (workflow_id, run_number) or jobs_run_status, whichever the planner finds smaller.
      ['countRunJobs', run, /SEARCH jobs USING COVERING INDEX jobs_run_(status|rows)/],
      ['countRunLogChunks', run, /SEARCH log_chunks USING PRIMARY KEY \(workflow_id=\? AND run_number=\?\)/],
      ['deleteRunLogChunks', run, /SEARCH log_chunks USING PRIMARY KEY \(workflow_id=\? AND run_number=\?\)/],
      ['deleteSomeRunLogChunks', [{ workflow_id: 'w', run_number: 1, limit: 10 }], /SEARCH log_chunks USING PRIMARY KEY/],
      ['deleteRunLeases', run, /SEARCH leases USING COVERING INDEX leases_job/],
      // The foreign-key checks of the deletes are index searches too (leases_job, jobs_run_status or jobs_run_rows).
      ['deleteRunJobs', run, /SEARCH leases USING COVERING INDEX leases_job/],
      ['deleteRun', run, /SEARCH jobs USING COVERING INDEX jobs_run_(status|rows)/],
      ['deleteWorkflow', ['w'], /SEARCH runs USING COVERING INDEX sqlite_autoindex_runs_1/],
    ];
    for (const [name, args, re] of expected) {
      const p = plan(QUERIES[name], ...args);
      assert.match(p, re, `${name}: ${p}`);
      assert.doesNotMatch(p.replace('SCAN w ', ''), /\bSCAN\b/, `${name} reads a whole table: ${p}`);
    }
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: WAL mode, and every migration applied once however often the file is opened', async () => {
  const { dir, file } = tempFile();
  await new SqliteStore(file).close();
  await new SqliteStore(file).close();
  const db = new Database(file, { readonly: true });
  try {
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>;
    assert.deepEqual(rows.map((r) => r.version), SQLITE_MIGRATIONS.map((m) => m.version));
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: everything survives closing and reopening the file; a lease granted before goes on', async () => {
  const { dir, file } = tempFile();
  try {
    const first = new SqliteStore(file);
    await start(first, 'w', 1000, { a: {}, b: { needs: ['a'] } });
    const c = await claimOne(first, 1000, 'a', { ttl: 600 });
    await first.pushLogs(c.lease.lease_id, [{ sequence: 0, data: 'before' }], 1100);
    await first.close();

    const again = new SqliteStore(file);
    try {
      assert.deepEqual(await again.read((r) => r.getLease(c.lease.lease_id)), c.lease);
      const out = await complete(again, c.lease.lease_id, { k: 'v' }, 2000);
      assert.deepEqual(out.enqueued, ['b']);
      assert.deepEqual((await job(again, 'w', 'b')).upstream_outputs, { a: { k: 'v' } });
      const logs = await again.read((r) => r.getLogChunks({ workflow_id: 'w', run_number: 1, job_id: 'a', attempt: 0 }));
      assert.deepEqual(logs.map((l) => l.data), ['before']);
    } finally {
      await again.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});


test('sqlite: a database made by migration 1 gets its counters from its rows and goes on correctly', async () => {
  const { dir, file } = tempFile();
  try {
    const db = new Database(file);
    db.exec(SQLITE_MIGRATIONS[0]!.sql);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
    db.prepare('INSERT INTO schema_migrations VALUES (1, ?, 0)').run(SQLITE_MIGRATIONS[0]!.name);
    for (const id of V1_WORKFLOWS) {
      const w = wfRecord(id, 1000, { latest_run: 1 });
      db.prepare(`INSERT INTO workflows VALUES (@id, @name, @trigger, @definition, @source, @hash, @created_at_ms, @updated_at_ms, @latest_run)`)
        .run({ ...w, definition: JSON.stringify(w.definition) });
      db.prepare(`INSERT INTO runs VALUES (?, 1, 'running', 1000, NULL)`).run(id);
    }
    const jobs = v1Jobs();
    const cols = Object.keys(v1JobRow(jobs[0]!, 1));
    const insert = db.prepare(`INSERT INTO jobs (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`);
    for (const j of jobs) insert.run(v1JobRow(j, 1));
    const cRow = (db.prepare(`SELECT row_id FROM jobs WHERE job_id = 'c'`).get() as { row_id: number }).row_id;
    db.prepare(`INSERT INTO leases VALUES ('lease-c', ?, 'mid', 1, 'c', 0, 'wk', 600, 1500, 1500, 601500, 'active')`).run(cRow);
    db.prepare(`INSERT INTO label_sets VALUES ('', '[]')`).run();
    db.close();

    const store = new SqliteStore(file);
    try {
      await assertUpgradeCarriesOn(store);
    } finally {
      await store.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('DATABASE_URL parsing', () => {
  assert.deepEqual(parseDatabaseUrl(undefined), { kind: 'sqlite', file: path.join('data', 'weft.db') });
  assert.deepEqual(parseDatabaseUrl('sqlite:/tmp/x.db'), { kind: 'sqlite', file: '/tmp/x.db' });
  assert.deepEqual(parseDatabaseUrl('sqlite:rel/y'), { kind: 'sqlite', file: 'rel/y' });
  assert.deepEqual(parseDatabaseUrl('./z.sqlite'), { kind: 'sqlite', file: './z.sqlite' });
  assert.deepEqual(parseDatabaseUrl('postgres://u@h/db'), { kind: 'postgres', url: 'postgres://u@h/db' });
  assert.deepEqual(parseDatabaseUrl('postgresql://u@h/db'), { kind: 'postgres', url: 'postgresql://u@h/db' });
  assert.throws(() => parseDatabaseUrl('mysql://x'), /not understood/);
  assert.throws(() => parseDatabaseUrl('sqlite:'), /needs a file path/);
});

test('sqlite: in one write batch, a claim after a capped group was queued still honours max_parallel (what the connection knew is forgotten)', () => {
  const { dir, file } = tempFile();
  try {
    const db = openConnection(file, {});
    migrate(db);
    const conn = new Conn(db);
    const d: WorkflowDefinition = {
      id: 'capped', name: 'capped', trigger: null, env: {},
      jobs: [{
        id: 'test', name: 'test', command: 'true', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null,
        strategy: { matrix: {}, combos: Array.from({ length: 5 }, (_, i) => ({ shard: i })), fail_fast: true, max_parallel: 2 },
      }],
    };
    const { jobs, labelSets } = planRun(d, 1000);
    const ask = (n: number) => ({ worker_id: 'w', worker_labels: [], label_keys: [''], ttl_secs: 60, max: 5, lease_ids: Array.from({ length: 5 }, (_, i) => `l${n}-${i}`), now_ms: 1000 });
    runBatch(db, conn, [writeCall(0, 'saveWorkflow', wfRecord('capped', 1000))]);
    // One batch, as the writer groups concurrent requests: a claim that finds no capped instance
    // queued, then the run that queues five of a group capped at two, then a claim.
    const [first, started, second] = runBatch(db, conn, [
      writeCall(1, 'claim', ask(1)),
      writeCall(2, 'startRun', { workflow_id: 'capped', expected_hash: HASH, jobs, label_sets: labelSets, now_ms: 1000 }),
      writeCall(3, 'claim', ask(2)),
    ]);
    assert.deepEqual(first, { id: 1, ok: true, value: [] });
    assert.equal(started!.ok, true);
    assert.equal(second!.ok && (second!.value as unknown[]).length, 2, 'two instances, the group cap, not five');
    db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: listeners, a run\'s event and a delivery key are primary-key reads (README "Triggers and notifications")', async () => {
  await withSqlitePlans((plan) => {
    const expected: Array<[keyof typeof QUERIES, unknown[], RegExp]> = [
      ['listeners', ['event', 'deployed'], /SEARCH workflow_triggers USING PRIMARY KEY \(kind=\? AND key=\?\)/],
      ['getRunEvent', ['w', 1], /SEARCH run_events USING PRIMARY KEY \(workflow_id=\? AND run_number=\?\)/],
      ['deliveredRun', ['w', 'webhook/d'], /SEARCH d USING PRIMARY KEY \(workflow_id=\? AND delivery_key=\?\).*SEARCH r USING INDEX sqlite_autoindex_runs_1/],
      ['deleteWorkflowTriggers', ['w'], /SEARCH workflow_triggers USING (COVERING )?INDEX workflow_triggers_workflow/],
    ];
    for (const [name, args, re] of expected) {
      const p = plan(QUERIES[name], ...args);
      assert.match(p, re, `${name}: ${p}`);
      assert.doesNotMatch(p, /\bSCAN\b|TEMP B-TREE/, `${name} reads a whole table: ${p}`);
    }
  });
});
