/**
 * Index-plan tests of the store's statements (the QUERIES registries): a fresh, migrated database of
 * each kind, and a `plan` that answers how the database would run a statement, as one line of text.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createDatabase } from './postgres.js';

/** `EXPLAIN QUERY PLAN` on a fresh SQLite file migrated by the store, its details joined by ` | `. */
export async function withSqlitePlans(fn: (plan: (sql: string, ...args: unknown[]) => string) => void | Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-plans-'));
  try {
    const file = path.join(dir, 'weft.db');
    await new SqliteStore(file).close();
    const db = new Database(file, { readonly: true });
    try {
      await fn((sql, ...args) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | '));
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `EXPLAIN` on a fresh PostgreSQL database migrated by the store, in a transaction with sequential
 * scans off and `analyze` tables analyzed: a fresh table is tiny, where a scan is cheapest, so this
 * shows the index plan the statement gets once the table is large.
 */
export async function withPostgresPlans(analyze: readonly string[], fn: (plan: (text: string, params: unknown[]) => Promise<string>) => Promise<void>): Promise<void> {
  const db = await createDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await (await PostgresStore.open(db.url)).close();
    await sql.begin(async (tx) => {
      await tx.unsafe('SET LOCAL enable_seqscan = off');
      for (const table of analyze) await tx.unsafe(`ANALYZE ${table}`);
      await fn(async (text, params) =>
        ((await tx.unsafe(`EXPLAIN ${text}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n'),
      );
    });
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
}
