import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { parseDatabaseUrl } from '../../src/store/index.js';
import { tempDir } from '../helpers/server.js';
import { storeConformance } from './conformance.js';

storeConformance('sqlite', async () => {
  const dir = tempDir('weft-store-');
  const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
  return Object.assign(store, { dispose: async () => fs.rmSync(dir, { recursive: true, force: true }) });
});

test('sqlite: the claim and reaper queries are index seeks, never a scan of jobs or leases', async () => {
  const dir = tempDir('weft-plan-');
  const file = path.join(dir, 'weft.db');
  const store = new SqliteStore(file);
  await store.close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (sql: string, ...args: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    const claim = plan(
      `SELECT * FROM jobs WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ? ORDER BY ready_at_ms, row_id LIMIT 1`,
      '',
      0,
    );
    assert.match(claim, /USING INDEX jobs_claim/);
    assert.doesNotMatch(claim, /SCAN jobs|TEMP B-TREE/);
    const expiry = plan(`SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`, 0, 1);
    assert.match(expiry, /USING INDEX leases_expiry/);
    const timeouts = plan(
      `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ? ORDER BY deadline_ms LIMIT ?`,
      0,
      1,
    );
    assert.match(timeouts, /USING INDEX jobs_deadline/);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('sqlite: WAL mode and versioned migrations applied once', async () => {
  const dir = tempDir('weft-mig-');
  const file = path.join(dir, 'weft.db');
  await new SqliteStore(file).close();
  await new SqliteStore(file).close();
  const db = new Database(file, { readonly: true });
  try {
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    const rows = db.prepare('SELECT version FROM schema_migrations').all();
    assert.deepEqual(rows, [{ version: 1 }]);
  } finally {
    db.close();
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
