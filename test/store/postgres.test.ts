import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostgresStore, CLAIM_CANDIDATES_SQL, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import { openStore } from '../../src/store/index.js';
import { storeConformance } from './conformance.js';
import { createDatabase, ensureReachable } from '../helpers/postgres.js';

async function freshStore(opts: PostgresStoreOptions = {}) {
  const db = await createDatabase();
  try {
    const store = await PostgresStore.open(db.url, opts);
    return Object.assign(store, { dispose: db.drop });
  } catch (err) {
    await db.drop();
    throw err;
  }
}

test('postgres: the server is reachable', async () => {
  await ensureReachable();
});

storeConformance('postgres', () => freshStore());
// The same suite with writes not serialized: claiming then relies on FOR UPDATE SKIP LOCKED alone.
storeConformance('postgres (row locks only)', () => freshStore({ serializeWrites: false }));

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

test('postgres: the claim and reaper queries use their partial indexes', async () => {
  const store = await freshStore();
  try {
    await store.sql.begin(async (tx) => {
      // A fresh table is tiny, where a sequential scan is cheapest; forbid it to see the index plan.
      await tx.unsafe('SET LOCAL enable_seqscan = off');
      await tx.unsafe('SET LOCAL enable_bitmapscan = off');
      await tx.unsafe('ANALYZE jobs');
      await tx.unsafe('ANALYZE leases');
      const plan = async (sql: string, params: unknown[]) =>
        ((await tx.unsafe(`EXPLAIN ${sql}`, params as any[])) as unknown as Array<{ 'QUERY PLAN': string }>)
          .map((r) => r['QUERY PLAN'])
          .join('\n');
      const claim = await plan(CLAIM_CANDIDATES_SQL, ['', 0, 0, 0, 8]);
      assert.match(claim, /Index (Only )?Scan using jobs_claim/, claim);
      assert.doesNotMatch(claim, /Sort|Seq Scan/, claim);
      const expiry = await plan(
        `SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < $1 ORDER BY expires_at_ms LIMIT $2`,
        [0, 1],
      );
      assert.match(expiry, /leases_expiry/, expiry);
      const timeouts = await plan(
        `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < $1 ORDER BY deadline_ms LIMIT $2`,
        [0, 1],
      );
      assert.match(timeouts, /jobs_deadline/, timeouts);
    });
  } finally {
    await store.close();
    await store.dispose();
  }
});

test('postgres: two stores opening one fresh database concurrently apply migrations once', async () => {
  const db = await createDatabase();
  try {
    const stores = await Promise.all([PostgresStore.open(db.url), PostgresStore.open(db.url), PostgresStore.open(db.url)]);
    try {
      const rows = await stores[0]!.sql`SELECT version FROM schema_migrations ORDER BY version`;
      assert.deepEqual(
        rows.map((r) => r.version),
        [1],
      );
      for (const s of stores) assert.deepEqual(await s.read((ops) => ops.listWorkers()), []);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // Reopening finds nothing to do.
    await (await PostgresStore.open(db.url)).close();
  } finally {
    await db.drop();
  }
});
