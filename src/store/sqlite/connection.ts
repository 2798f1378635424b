import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

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

/** Opens a connection with the settings every connection of the store shares. */
export function openConnection(file: string, opts: SqliteStoreOptions): Database.Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
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
