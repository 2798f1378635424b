import type Database from 'better-sqlite3';
import type { Conn } from './connection.js';
import * as operations from './writes.js';

/** The store's write operations by name, each `(conn, ...args) => outcome` (writes.ts). */
export const OPERATIONS = operations as unknown as Record<string, (c: Conn, ...args: unknown[]) => unknown>;
export type OperationName = keyof typeof operations;

export interface WriteCall {
  id: number;
  op: string;
  args: unknown[];
}

export type WriteResult = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string; stack?: string };

/** The writer thread's answer to one batch: its results, and how long the batch took to be durable. */
export interface BatchAnswer {
  results: WriteResult[];
  seconds: number;
}

/** runBatch, timed from BEGIN to the end of COMMIT (README "Metrics": store commit latency). */
export function timedBatch(db: Database.Database, conn: Conn, calls: readonly WriteCall[]): BatchAnswer {
  const started = performance.now();
  const results = runBatch(db, conn, calls);
  return { results, seconds: (performance.now() - started) / 1000 };
}

/**
 * Group commit (docs/performance.md): the operations of `calls` run one after another inside ONE
 * transaction, each in its own savepoint, and all of them become durable with a single COMMIT (one
 * fsync for the batch). An operation that throws is rolled back to its savepoint alone; its neighbours'
 * work stays. Nothing is answered before the COMMIT: a caller told "done" is on disk.
 */
export function runBatch(db: Database.Database, conn: Conn, calls: readonly WriteCall[]): WriteResult[] {
  const stmt = statements(db);
  try {
    stmt.begin.run();
  } catch (err) {
    // Another process holds the write lock past busy_timeout: the whole batch is refused, unchanged.
    return calls.map((c) => failure(c.id, err));
  }
  const results: WriteResult[] = [];
  for (const call of calls) {
    const fn = OPERATIONS[call.op];
    stmt.savepoint.run();
    try {
      if (!fn) throw new Error(`unknown store operation "${call.op}"`);
      const value = fn(conn, ...call.args);
      stmt.release.run();
      results.push({ id: call.id, ok: true, value });
    } catch (err) {
      stmt.rollbackTo.run();
      stmt.release.run();
      results.push(failure(call.id, err));
    }
  }
  try {
    stmt.commit.run();
  } catch (err) {
    if (db.inTransaction) stmt.rollback.run();
    return calls.map((c) => failure(c.id, err));
  }
  return results;
}

function failure(id: number, err: unknown): WriteResult {
  const e = err instanceof Error ? err : new Error(String(err));
  return { id, ok: false, message: e.message, stack: e.stack };
}

const cache = new WeakMap<Database.Database, ReturnType<typeof prepare>>();

function statements(db: Database.Database) {
  let s = cache.get(db);
  if (!s) {
    s = prepare(db);
    cache.set(db, s);
  }
  return s;
}

function prepare(db: Database.Database) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    savepoint: db.prepare('SAVEPOINT op'),
    release: db.prepare('RELEASE op'),
    rollbackTo: db.prepare('ROLLBACK TO op'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
  };
}
