import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { QUERIES, type QueryName } from './queries.js';

export interface SqliteStoreOptions {
  /** `synchronous` pragma. FULL makes every acknowledged commit survive power loss, not only a crash. */
  synchronous?: 'FULL' | 'NORMAL';
  busyTimeoutMs?: number;
  /**
   * Where writes run. `thread` (the default for a file): a dedicated writer thread with its own
   * connection, committing whatever operations arrived together as one transaction, so the event loop
   * never waits on an fsync. `inline`: on the calling thread, one transaction per operation (the only
   * choice for `:memory:`, which a second connection cannot share).
   */
  writer?: 'thread' | 'inline';
}

/**
 * Makes sure the database file exists before SQLite opens it, created readable and writable by its
 * owner only (0600): it holds every job's env, outputs and logs, which often carry secrets, and SQLite
 * would create it 0644. Its -wal and -shm files take the database file's mode, so they are 0600 too.
 * A directory created for it is 0700. An existing file keeps its mode (an operator may have opened it
 * to a group on purpose); the answer is that mode when group or others may read or write it, so the
 * caller can warn, else null.
 */
export function prepareDatabaseFile(file: string): number | null {
  if (file === ':memory:' || file === '') return null;
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
  try {
    // An empty file is a new database to SQLite. `wx`: never touches a file that already exists.
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
    return null;
  } catch (err) {
    // Anything but "exists" (no permission, a directory in the way) is SQLite's to report on open.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  try {
    const mode = fs.statSync(file).mode & 0o777;
    return (mode & 0o077) !== 0 ? mode : null;
  } catch {
    return null;
  }
}

/** Opens a connection with the settings every connection of the store shares. */
export function openConnection(file: string, opts: SqliteStoreOptions): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw new Error(`cannot open SQLite database at ${file}: ${(err as Error).message}`, { cause: err });
  }
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
  db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * One connection and its prepared statements. Preparing is the costly part of a statement, so each
 * SQL text of QUERIES is prepared once, on first use, and kept for the connection's life.
 */
export class Conn {
  private readonly stmts = new Map<QueryName, Statement>();

  /**
   * Whether an instance of a capped matrix group may be queued, as last found in this transaction;
   * null: not known. Lets a claim skip reading capped instances (claim.ts) when none are queued, the
   * common case, instead of paying for that read on every claim (docs/performance.md). Forgotten at
   * every transaction's start and after an operation rolled back (group-commit.ts, whose transactions
   * also see other processes' writes), and whenever a statement that may queue a job is used.
   */
  cappedQueued: boolean | null = null;

  constructor(readonly db: Database.Database) {}

  q(name: QueryName): Statement {
    if (MAY_QUEUE.has(name)) this.cappedQueued = null;
    let s = this.stmts.get(name);
    if (!s) {
      s = this.db.prepare(QUERIES[name]);
      this.stmts.set(name, s);
    }
    return s;
  }

  private readonly rawStmts = new Map<QueryName, { stmt: Statement; columns: string[] }>();

  /** `name` prepared in better-sqlite3's raw mode (rows as arrays), with its column names. */
  private raw(name: QueryName): { stmt: Statement; columns: string[] } {
    if (MAY_QUEUE.has(name)) this.cappedQueued = null;
    let r = this.rawStmts.get(name);
    if (!r) {
      const stmt = this.db.prepare(QUERIES[name]).raw(true);
      r = { stmt, columns: stmt.columns().map((c) => c.name) };
      this.rawStmts.set(name, r);
    }
    return r;
  }

  /**
   * All rows of the read `name`, as q(name).all(...params) answers them, but read as arrays
   * (better-sqlite3's raw mode) and made objects here: for many rows of many columns that costs about
   * three quarters as much (a status document's 10,000 jobs: docs/performance.md "Third round").
   */
  rows(name: QueryName, ...params: unknown[]): Array<Record<string, unknown>> {
    const { stmt, columns } = this.raw(name);
    const out: Array<Record<string, unknown>> = [];
    for (const values of stmt.all(...params) as unknown[][]) out.push(toObject(columns, values));
    return out;
  }

  /**
   * The first row of `name`, as q(name).get(...params) answers it, made an object the way rows()
   * makes them: the whole job row a claim or a complete returns costs a quarter less so
   * (docs/performance.md "Fourth round").
   */
  row(name: QueryName, ...params: unknown[]): Record<string, unknown> | undefined {
    const { stmt, columns } = this.raw(name);
    const values = stmt.get(...params) as unknown[] | undefined;
    return values === undefined ? undefined : toObject(columns, values);
  }
}

function toObject(columns: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
  return row;
}

/** The statements that can make a job `queued` (insert one queued, or move one to `queued`). */
const MAY_QUEUE: ReadonlySet<QueryName> = new Set<QueryName>(['insertJob', 'enqueueReady', 'requeueJob', 'unclaimJob', 'applyDecision']);
