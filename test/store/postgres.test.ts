import { after, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { PostgresStore, connectionParameters } from '../../src/store/postgres/postgres-store.js';
import { QUERIES } from '../../src/store/postgres/queries.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openStore } from '../../src/store/index.js';
import { storeConformance } from './conformance.js';
import { claim, claimOne, claimRequest, complete, job, runStatus, start, wfRecord } from './fixtures.js';
import { assertUpgradeCarriesOn, V1_WORKFLOWS, v1JobRow, v1Jobs } from './upgrade-fixture.js';
import { ADMIN_URL, createDatabase, ensureReachable } from '../helpers/postgres.js';

test('postgres: the server is reachable', async () => {
  await ensureReachable();
});

/**
 * Every conformance case gets a database of its own, copied from one migrated once: a copy costs a
 * fraction of creating and migrating anew. Pools stay small (several stores and processes share the
 * server, and other test files use it at the same time); each still runs its statements in parallel.
 */
const POOL = { max: 4 };
// Its own admin connection: the shared one (helpers/postgres.ts) is ended by an earlier `after` hook.
const admin = postgres(ADMIN_URL, { max: 2, onnotice: () => {} });
let template: Promise<string> | undefined;
after(async () => {
  if (template) await admin.unsafe(`DROP DATABASE IF EXISTS ${await template} WITH (FORCE)`);
  await admin.end({ timeout: 5 });
});

function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const db = await createDatabase();
    await (await PostgresStore.open(db.url, POOL)).close();
    return db.name;
  })();
  return template;
}

async function freshCopy(): Promise<{ url: string; drop: () => Promise<void> }> {
  const source = await migratedTemplate();
  const name = `weft_test_${randomBytes(6).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined) };
}

storeConformance(
  'postgres',
  async () => {
    const db = await freshCopy();
    try {
      const store = await PostgresStore.open(db.url, POOL);
      return {
        store,
        another: () => PostgresStore.open(db.url, POOL),
        target: { kind: 'postgres', url: db.url },
        dispose: db.drop,
      };
    } catch (err) {
      await db.drop();
      throw err;
    }
  },
  { joinRaces: 1000 },
);

/** Parameters of the EXPLAINed statements, as their comments in queries.ts list them. */
const CLAIM_PARAMS = [['', '["gpu"]'], 0, 8]; // label keys, now, per-key limit
// keys, now, slots; per slot: lease id, worker id, ttl, expiry, token, now; per worker: id, labels (JSON), now
const CLAIM_STATEMENT_PARAMS = [
  ['', '["gpu"]'], 0, 2, ['l1', 'l2'], ['wk', 'wk'], [30, 30], [30_000, 30_000], ['tok', 'tok'], [0, 0], ['wk'], ['[]'], [0], [1],
];
const EXPIRY_PARAMS = [0, 100]; // now, limit
const TIMEOUT_PARAMS = [0, 100]; // now, limit

/** A plain connection to a test database, for what the store must not be asked: plans and old schemas. */
function connect(url: string) {
  return postgres(url, { max: 1, onnotice: () => {} });
}

test('postgres: openStore picks PostgreSQL for a postgres:// DATABASE_URL', async () => {
  const db = await createDatabase();
  try {
    const store = await openStore(db.url);
    assert.equal(store.kind, 'postgres');
    await store.close();
  } finally {
    await db.drop();
  }
});

test('postgres: the claim and reaper statements are ordered reads of their partial indexes', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await (await PostgresStore.open(db.url)).close();
    await sql.begin(async (tx) => {
      // A fresh table is tiny, where a sequential scan is cheapest; forbid it to see the index plan.
      await tx.unsafe('SET LOCAL enable_seqscan = off');
      await tx.unsafe('ANALYZE jobs');
      await tx.unsafe('ANALYZE leases');
      const plan = async (text: string, params: unknown[]) =>
        ((await tx.unsafe(`EXPLAIN ${text}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>)
          .map((r) => r['QUERY PLAN'])
          .join('\n');
      const claim = await plan(QUERIES.claimCandidates, CLAIM_PARAMS);
      assert.match(claim, /Index (Only )?Scan using jobs_claim/, claim);
      assert.doesNotMatch(claim, /Sort|Seq Scan/, claim);
      // A claim across keys reads those candidates inside one statement; only its few picked rows are
      // ordered. A claim of one key locks its jobs as it reads them off the index, in order.
      assert.ok(QUERIES.claimAcrossKeys.includes(QUERIES.claimCandidates), 'the claim across keys reads exactly the EXPLAINed candidates');
      const across = await plan(QUERIES.claimAcrossKeys, CLAIM_STATEMENT_PARAMS);
      assert.match(across, /Index (Only )?Scan using jobs_claim/, across);
      assert.doesNotMatch(across, /Seq Scan/, across);
      const one = await plan(QUERIES.claim, [[''], ...CLAIM_STATEMENT_PARAMS.slice(1)]);
      assert.match(one, /Index (Only )?Scan using jobs_claim/, one);
      assert.doesNotMatch(one, /Seq Scan/, one);
      const expiry = await plan(QUERIES.expiredLeases, EXPIRY_PARAMS);
      assert.match(expiry, /Index (Only )?Scan using leases_expiry/, expiry);
      assert.doesNotMatch(expiry, /Sort|Seq Scan/, expiry);
      const timeouts = await plan(QUERIES.timedOutJobs, TIMEOUT_PARAMS);
      assert.match(timeouts, /Index (Only )?Scan using jobs_deadline/, timeouts);
      assert.doesNotMatch(timeouts, /Sort|Seq Scan/, timeouts);
      // Sent after every completion: probes of the run's index entries, never a pass over its jobs.
      const open = await plan(QUERIES.runOpen, ['w', 1]);
      assert.match(open, /Index (Only )?Scan using jobs_run_status/, open);
      assert.doesNotMatch(open, /Seq Scan/, open);
      const stranded = await plan(QUERIES.unsettledRuns, [100]);
      assert.match(stranded, /Index (Only )?Scan (using|on) runs_running/, stranded);
      // The reaper's worker pruning: the oldest sightings off workers_last_seen, one lease probe each.
      const prune = await plan(QUERIES.pruneWorkers, [0, 100]);
      assert.match(prune, /Index (Only )?Scan using workers_last_seen/, prune);
      assert.match(prune, /Index (Only )?Scan using leases_worker/, prune);
      assert.doesNotMatch(prune, /Seq Scan/, prune);
    });
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: a statement planned on a fresh database still reads its table by index once the table is large', async () => {
  // A connection keeps the plan of a prepared statement until the table is analyzed again; planned on
  // the few rows of a new database, the run check behind each complete read all of `leases` at every
  // run (postgres-store.ts connectionParameters).
  const db = await createDatabase();
  const store = await PostgresStore.open(db.url, POOL);
  const session = postgres(db.url, { max: 1, onnotice: () => {}, connection: connectionParameters(30_000) as never });
  try {
    // No ANALYZE behind the test's back: the statistics are the ones taken below, of a few leases.
    await session.unsafe('ALTER TABLE leases SET (autovacuum_enabled = false)');
    const now = 1_000_000;
    await start(store, 'big', now, Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`j${i}`, {}])));
    await claim(store, now, { max: 100 });
    await session.unsafe('ANALYZE leases');
    await session.unsafe(`PREPARE runs_open (text) AS ${QUERIES.runsOpenOfLeases}`);
    // Past five runs PostgreSQL keeps one plan for every binding (plan_cache_mode auto).
    for (let i = 0; i < 8; i++) await session.unsafe(`EXECUTE runs_open('["none"]')`);
    for (let got = -1; got !== 0; ) got = (await claim(store, now, { max: 500 })).length;
    const plan = ((await session.unsafe(`EXPLAIN EXECUTE runs_open('["none"]')`)) as unknown as Array<{ 'QUERY PLAN': string }>)
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    assert.match(plan, /(Index (Only )?Scan using|Bitmap Index Scan on) leases_pkey/, plan);
    assert.doesNotMatch(plan, /Seq Scan on leases/, plan);
  } finally {
    await session.end({ timeout: 5 });
    await store.close();
    await db.drop();
  }
});

test('postgres: the run check behind each complete keeps one plan on its connection, probing leases by key', async () => {
  // Sized by the lease ids bound at each run, every custom plan looked cheaper than the generic one,
  // and PostgreSQL planned the statement anew at every complete (run-queries.ts runsOpenOfLeases).
  const db = await createDatabase();
  const store = await PostgresStore.open(db.url, POOL);
  const session = postgres(db.url, { max: 1, onnotice: () => {}, connection: connectionParameters(30_000) as never });
  try {
    const now = 1_000_000;
    await start(store, 'plan', now, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`j${i}`, {}])));
    const leases = (await claim(store, now, { max: 40 })).map((c) => c.lease.lease_id);
    assert.equal(leases.length, 40);
    await session.unsafe(`PREPARE runs_open (text) AS ${QUERIES.runsOpenOfLeases}`);
    // As completes come: one lease, or a few that arrived together, a different count at each run.
    const sizes = [1, 3, 2, 5, 1, 4, 2, 6, 1, 3];
    let at = 0;
    for (const n of sizes) {
      const ids = leases.slice(at, at + n);
      at += n;
      // EXECUTE takes no bind parameters: the JSON goes in as a quoted literal (lease ids hold no quote).
      const rows = await session.unsafe(`EXECUTE runs_open('${JSON.stringify(ids)}')`);
      assert.deepEqual(rows.map((r) => [r.workflow_id, r.run_number, r.open]), [['plan', 1, true]]);
    }
    const [stats] = await session.unsafe(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'runs_open'`);
    // plan_cache_mode auto: five custom plans, then the generic one for good when it costs no more.
    assert.ok(Number(stats!.custom_plans) <= 5, `planned anew at ${stats!.custom_plans} of ${sizes.length} runs`);
    const plan = ((await session.unsafe(`EXPLAIN EXECUTE runs_open('["none"]')`)) as unknown as Array<{ 'QUERY PLAN': string }>)
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    assert.match(plan, /Nested Loop[\s\S]*Index Scan using leases_pkey/, plan);
  } finally {
    await session.end({ timeout: 5 });
    await store.close();
    await db.drop();
  }
});

test('postgres: the job counts of GET /metrics read the queue and the active leases, never the finished jobs', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    const store = await PostgresStore.open(db.url);
    await start(store, 'w', 1000, { seed: {} });
    await store.close();
    // The shape of a database that has run a while: thousands of finished jobs, each with its settled
    // lease, a few dozen running and queued. The planner chooses by statistics, so it needs them.
    await sql.unsafe(`INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
        max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms, started_at_ms,
        finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id, pending_needs)
      SELECT 'w', 1, 'j' || g, 'n', 'c', '{}', '[]', CASE WHEN g % 3 = 0 THEN '' ELSE '["gpu"]' END, '[]', '[]', 0, '{}', NULL,
        CASE WHEN g <= 5000 THEN 'success' WHEN g <= 5030 THEN 'running' ELSE 'queued' END,
        0, 0, 0, g, 0, 0, NULL, NULL, NULL, '{}', 'wk', 'l' || g, 0
      FROM generate_series(1, 5060) g`);
    await sql.unsafe(`INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
        granted_at_ms, renewed_at_ms, expires_at_ms, state)
      SELECT lease_id, row_id, 'w', 1, job_id, 0, 'wk', 30, 0, 0, 30000, CASE WHEN status = 'running' THEN 'active' ELSE 'completed' END
      FROM jobs WHERE status <> 'queued'`);
    await sql.unsafe('ANALYZE jobs');
    await sql.unsafe('ANALYZE leases');
    const plan = ((await sql.unsafe(`EXPLAIN ${QUERIES.activeJobCounts}`)) as unknown as Array<{ 'QUERY PLAN': string }>)
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    assert.match(plan, /Index (Only )?Scan on jobs_claim|Index (Only )?Scan using jobs_claim/, plan);
    assert.match(plan, /Index (Only )?Scan using leases_(expiry|worker)/, plan);
    assert.match(plan, /Index Scan using jobs_pkey on jobs j\s+\(.*\)\s+Index Cond: \(row_id = l\.job_row_id\)/, plan);
    assert.match(plan, /Index (Only )?Scan (on|using) jobs_awaiting_approval/, plan);
    assert.doesNotMatch(plan, /Seq Scan|jobs_run_status/, plan);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: a scheduler pass reads the due workflows off the partial index workflows_next_fire', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await (await PostgresStore.open(db.url)).close();
    // 20,000 workflows, one in a hundred scheduled: the pass must not read them all.
    await sql.unsafe(`
      INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run, schedules, next_fire_at_ms)
        SELECT 'w' || i, 'n', NULL, '{}', 'api', 'h', 0, 0, 0,
          CASE WHEN i % 100 = 0 THEN '[]' END, CASE WHEN i % 100 = 0 THEN i * 1000 END
        FROM generate_series(1, 20000) i;
      ANALYZE workflows;
    `);
    const plan = ((await sql.unsafe(`EXPLAIN ${QUERIES.dueSchedules}`, [5_000_000, 100] as never[])) as unknown as Array<{ 'QUERY PLAN': string }>)
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    assert.match(plan, /Index Scan using workflows_next_fire/, plan);
    assert.doesNotMatch(plan, /Seq Scan|Sort/, plan);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: retention finds and deletes runs through indexes on a database of realistic proportions', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await (await PostgresStore.open(db.url)).close();
    // 40 workflows of 100 finished runs, 3 jobs a run, a lease a job, 10 log chunks a job: enough rows
    // for the planner to weigh indexes against scans as it would on a real database.
    await sql.unsafe(`
      INSERT INTO workflows SELECT 'w' || i, 'n', NULL, '{}', 'api', 'h', 0, 0, 100 FROM generate_series(1, 40) i;
      INSERT INTO runs SELECT 'w' || i, n, 'success', n, n * 10 FROM generate_series(1, 40) i, generate_series(1, 100) n;
      INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
          max_retries, backoff, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms, upstream_outputs)
        SELECT workflow_id, run_number, 'j' || x, 'n', 'c', '{}', '[]', '', '[]', '[]', 0, '{}', 'success', 0, 0, 0, 0, '{}'
        FROM runs, generate_series(1, 3) x;
      INSERT INTO leases SELECT 'l' || row_id, row_id, workflow_id, run_number, job_id, 0, 'wk', 30, 0, 0, 0, 'completed' FROM jobs;
      INSERT INTO log_chunks SELECT workflow_id, run_number, job_id, 0, s, 'stdout', 'x', 0 FROM jobs, generate_series(1, 10) s;
      ANALYZE workflows; ANALYZE runs; ANALYZE jobs; ANALYZE leases; ANALYZE log_chunks;
    `);
    const keys = [['w1', 'w2'], [1, 2]];
    const expected: Array<[keyof typeof QUERIES, unknown[], RegExp]> = [
      ['pruneByAge', [50, 100], /Index Scan (using|on) runs_finished/],
      ['previewByAge', [50, 100], /Index Scan (using|on) runs_finished/],
      ['pruneByCount', [90, 100], /Index Scan (using|on) runs_pkey[^\n]*\n\s*Index Cond: \(\(workflow_id = w\.id\)/],
      ['previewByCount', [90, 100], /Index Scan (using|on) runs_pkey[^\n]*\n\s*Index Cond: \(\(workflow_id = w\.id\)/],
      ['runsOfWorkflow', ['w1', 10], /Index Scan using runs_pkey/],
      ['runCounts', keys, /Index (Only )?Scan (using|on) log_chunks_pkey/],
      ['deleteRunsLeases', keys, /Index Scan using leases_job/],
      ['deleteRunsLogChunks', keys, /Index (Only )?Scan (using|on) log_chunks_pkey/],
      ['deleteRunsJobs', keys, /Index (Only )?Scan (using|on) jobs_run_status/],
      ['deleteRuns', keys, /Index Scan using runs_pkey/],
      ['deleteSomeRunLogChunks', ['w1', 1, 10], /Tid Scan/],
      ['deleteWorkflow', ['w1'], /Index (Only )?Scan (using|on) runs_pkey/],
      ['dropStaleLogChunks', ['w1'], /Index (Only )?Scan (using|on) log_chunks_pkey/],
    ];
    for (const [name, params, re] of expected) {
      const plan = ((await sql.unsafe(`EXPLAIN ${QUERIES[name]}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>)
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      assert.match(plan, re, `${name}:\n${plan}`);
      // Only the workflows table (one row a workflow) may be read whole.
      assert.doesNotMatch(plan, /Seq Scan on (runs|jobs|leases|log_chunks)/, `${name}:\n${plan}`);
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: a claim that went behind completes and failed there claims again on its own, and the completes stand', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    const store = await PostgresStore.open(db.url, POOL);
    try {
      await start(store, 'w', 1000, { a: {}, b: { needs: ['a'] } });
      const a = await claimOne(store, 2000, 'a');
      // The next lease written fails, once: that is the claim riding behind the complete.
      await sql.unsafe(`CREATE SEQUENCE lease_failures;
        CREATE FUNCTION fail_first_lease() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF nextval('lease_failures') = 1 THEN RAISE EXCEPTION 'injected lease failure'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER fail_first_lease BEFORE INSERT ON leases FOR EACH ROW EXECUTE FUNCTION fail_first_lease();`);
      const completed = store.complete(a.lease.lease_id, { k: 'v' }, 3000, null);
      const claimed = store.claim({ ...claimRequest(3000, { worker: 'r' }), after_completes: true });
      const outcome = await completed;
      assert.equal(outcome.kind, 'completed', 'the complete does not fail with the claim behind it');
      const got = await claimed;
      assert.deepEqual(got.map((c) => c.job.job_id), ['b'], 'the claim, tried again on its own, takes the job');
      const [seq] = await sql`SELECT last_value AS n FROM lease_failures`;
      assert.equal(Number(seq?.n), 2, 'the claim went behind the complete first, then alone');
      assert.deepEqual((await job(store, 'w', 'a')).outputs, { k: 'v' });
    } finally {
      await store.close();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: a run start clears log chunks left above its workflow’s latest run (a push that raced a deletion)', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    const store = await PostgresStore.open(db.url, POOL);
    try {
      await start(store, 'kept', 1000, { a: {} });
      await store.createWorkflow(wfRecord('w'));
      // What such a push leaves behind once the workflow was deleted and created again: chunks of a
      // run the workflow does not have.
      await sql`INSERT INTO log_chunks VALUES ('w', 1, 'a', 0, 0, 'stdout', 'stale', 0), ('w', 1, 'a', 0, 1, 'stdout', 'stale', 0)`;
      await sql`INSERT INTO log_chunks VALUES ('kept', 1, 'a', 0, 0, 'stdout', 'mine', 0)`;
      await start(store, 'w', 2000, { a: {} });
      const c = await claimOne(store, 2000, 'a');
      assert.equal(c.job.workflow_id, 'kept', 'the oldest queued job first');
      const w = await claimOne(store, 2000, 'a');
      await store.pushLogs(w.lease.lease_id, [{ sequence: 0, data: 'fresh' }], 2100);
      const logs = await store.read((r) => r.getLogChunks({ workflow_id: 'w', run_number: 1, job_id: 'a', attempt: 0 }));
      assert.deepEqual(logs.map((l) => l.data), ['fresh']);
      const kept = await store.read((r) => r.getLogChunks({ workflow_id: 'kept', run_number: 1, job_id: 'a', attempt: 0 }));
      assert.deepEqual(kept.map((l) => l.data), ['mine'], 'chunks of an existing run stay');
    } finally {
      await store.close();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: stores opening one fresh database at once apply every migration once', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    const stores = await Promise.all([PostgresStore.open(db.url), PostgresStore.open(db.url), PostgresStore.open(db.url)]);
    try {
      const rows = await sql`SELECT version FROM schema_migrations ORDER BY version`;
      assert.deepEqual(rows.map((r) => r.version), POSTGRES_MIGRATIONS.map((m) => m.version));
      for (const s of stores) assert.deepEqual(await s.read((r) => r.listWorkers()), []);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // Reopening finds nothing to do.
    await (await PostgresStore.open(db.url)).close();
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});


test('postgres: the reaper settles a run whose last job committed without its settlement (a crash in between)', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    const store = await PostgresStore.open(db.url, POOL);
    try {
      await start(store, 'done', 1000, { a: {} });
      await start(store, 'busy', 1500, { a: {}, b: {} });
      const got = await claimOne(store, 2000, 'a');
      assert.equal(got.job.workflow_id, 'done', 'the oldest queued job first');
      await complete(store, got.lease.lease_id, {}, 2000);
      assert.deepEqual(await runStatus(store, 'done'), { status: 'success', finished_at_ms: 2000 });
      // What a crash between the completion's COMMIT and the settlement leaves behind.
      await sql`UPDATE runs SET status = 'running', finished_at_ms = NULL WHERE workflow_id = 'done'`;
      assert.equal(await store.settleStrandedRuns(5000, 100), 1, 'only the run with nothing left in motion');
      assert.deepEqual(await runStatus(store, 'done'), { status: 'success', finished_at_ms: 5000 });
      assert.deepEqual(await runStatus(store, 'busy'), { status: 'running', finished_at_ms: null });
      assert.equal(await store.settleStrandedRuns(6000, 100), 0);
    } finally {
      await store.close();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: a database made by migration 1 gets its counters from its rows and goes on correctly', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(POSTGRES_MIGRATIONS[0]!.sql);
      await tx.unsafe(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)`);
      await tx`INSERT INTO schema_migrations VALUES (1, ${POSTGRES_MIGRATIONS[0]!.name}, 0)`;
      for (const id of V1_WORKFLOWS) {
        // Migration 1 has no next_fire_at_ms column (migration 5 adds it).
        const { next_fire_at_ms: _, ...w } = wfRecord(id, 1000, { latest_run: 1 });
        await tx`INSERT INTO workflows ${tx({ ...w, definition: JSON.stringify(w.definition) } as Record<string, unknown>)}`;
        await tx`INSERT INTO runs (workflow_id, run_number, status, created_at_ms) VALUES (${id}, 1, 'running', 1000)`;
      }
      for (const j of v1Jobs()) await tx`INSERT INTO jobs ${tx(v1JobRow(j, 1))}`;
      const [c] = await tx`SELECT row_id FROM jobs WHERE job_id = 'c'`;
      await tx`INSERT INTO leases VALUES ('lease-c', ${c!.row_id}, 'mid', 1, 'c', 0, 'wk', 600, 1500, 1500, 601500, 'active')`;
      await tx`INSERT INTO label_sets VALUES ('', '[]')`;
    });
    const store = await PostgresStore.open(db.url);
    try {
      await assertUpgradeCarriesOn(store);
    } finally {
      await store.close();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres: listeners of an event and a delivery key are index reads among 20,000 workflows (README "Triggers and notifications")', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await (await PostgresStore.open(db.url)).close();
    await sql.unsafe(`
      INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run)
        SELECT 'w' || i, 'n', NULL, '{}', 'api', 'h', 0, 0, 1 FROM generate_series(1, 20000) i;
      INSERT INTO workflow_triggers (kind, key, workflow_id)
        SELECT 'event', CASE WHEN i % 1000 = 0 THEN 'deployed' ELSE 'e' || i END, 'w' || i FROM generate_series(1, 20000) i;
      INSERT INTO runs (workflow_id, run_number, status, created_at_ms) SELECT 'w' || i, 1, 'success', 0 FROM generate_series(1, 20000) i;
      -- One busy hook with 20,000 deliveries kept: its key must be found by the key, not among its deliveries.
      INSERT INTO run_deliveries (workflow_id, delivery_key, run_number, created_at_ms) SELECT 'w1', 'webhook/d' || i, 1, 0 FROM generate_series(1, 20000) i;
      ANALYZE workflows; ANALYZE workflow_triggers; ANALYZE runs; ANALYZE run_deliveries;
    `);
    const plan = async (text: string, params: unknown[]) =>
      ((await sql.unsafe(`EXPLAIN ${text}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n');
    const listeners = await plan(QUERIES.listeners, ['event', 'deployed']);
    assert.match(listeners, /Index (Only )?Scan using workflow_triggers_pkey/, listeners);
    const delivered = await plan(QUERIES.deliveredRun, ['w1', 'webhook/d5']);
    assert.match(delivered, /Index Scan using run_deliveries_pkey/, delivered);
    assert.match(delivered, /Index Scan using runs_pkey/, delivered);
    for (const p of [listeners, delivered]) assert.doesNotMatch(p, /Seq Scan/, p);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});
