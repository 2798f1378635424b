import type Database from 'better-sqlite3';
import type { Conn } from './connection.js';
import { WRITES, type WriteCall } from './writes.js';

/** WRITES as the batch sees them: any write by its name, with the arguments its WriteCall carries. */
const ANY_WRITE: Readonly<Record<string, (c: Conn, ...args: never[]) => unknown>> = WRITES;

/** The answer to one WriteCall, by its id: the write's result, or what it threw. */
export type CallAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string; stack?: string };

/** The writer thread's answer to one batch: its results, and how long the batch took to be durable. */
export interface BatchAnswer {
  results: CallAnswer[];
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
export function runBatch(db: Database.Database, conn: Conn, calls: readonly WriteCall[]): CallAnswer[] {
  const stmt = statements(db);
  // What the connection knew of the last transaction may be stale in this one (Conn.cappedQueued).
  conn.cappedQueued = null;
  try {
    stmt.begin.run();
  } catch (err) {
    // Another process holds the write lock past busy_timeout: the whole batch is refused, unchanged.
    return calls.map((c) => failure(c.id, err));
  }
  const results: CallAnswer[] = [];
  for (const call of calls) {
    // The call crossed a thread boundary: its name is checked against WRITES' own keys (not, say,
    // `toString`) before it is run; its arguments were typed by the sender (see WriteCall).
    const fn = Object.hasOwn(WRITES, call.op) ? ANY_WRITE[call.op] : null;
    stmt.savepoint.run();
    try {
      if (!fn) throw new Error(`unknown store operation "${call.op}"`);
      const value = fn(conn, ...(call.args as never[]));
      stmt.release.run();
      results.push({ id: call.id, ok: true, value });
    } catch (err) {
      stmt.rollbackTo.run();
      stmt.release.run();
      conn.cappedQueued = null;
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

function failure(id: number, err: unknown): CallAnswer {
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
