import path from 'node:path';
import type { Store } from './store.js';
import type { PostgresOptions } from './postgres/options.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

export type { Store, StoreReads } from './store.js';
export * from './store.js';

export type StoreLocation = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

export const DEFAULT_SQLITE_FILE = path.join('data', 'weft.db');

/**
 * README "Configuration": unset -> data/weft.db; `sqlite:PATH` or a path ending in .db/.sqlite -> SQLite;
 * postgres:// or postgresql:// -> PostgreSQL. Anything else is refused rather than guessed.
 */
export function parseDatabaseUrl(url: string | undefined): StoreLocation {
  const value = url?.trim();
  if (!value) return { kind: 'sqlite', file: DEFAULT_SQLITE_FILE };
  if (/^postgres(ql)?:\/\//i.test(value)) return { kind: 'postgres', url: value };
  if (value.startsWith('sqlite:')) {
    const file = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!file) throw new Error('DATABASE_URL "sqlite:" needs a file path, for example sqlite:data/weft.db');
    return { kind: 'sqlite', file };
  }
  if (/\.(db|sqlite3?)$/i.test(value) || value === ':memory:') return { kind: 'sqlite', file: value };
  throw new Error(
    `DATABASE_URL "${value}" is not understood: use sqlite:PATH, a path ending in .db or .sqlite, or postgres://…`,
  );
}

export { StoreUnavailableError } from './unavailable.js';
export type { PostgresOptions } from './postgres/options.js';

export interface OpenStoreOptions {
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  postgres?: PostgresOptions;
  /** Told about a setup worth fixing that does not stop the store (a database file others may read). */
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

export async function openStore(url: string | undefined, opts: OpenStoreOptions = {}): Promise<Store> {
  const loc = parseDatabaseUrl(url);
  if (loc.kind === 'sqlite') {
    const store = new SqliteStore(loc.file, { synchronous: opts.sqliteSynchronous ?? 'FULL' });
    const mode = store.exposedFileMode;
    if (mode !== null) {
      const octal = mode.toString(8).padStart(4, '0');
      opts.warn?.(
        { file: loc.file, mode: octal },
        `the database file ${loc.file} is readable or writable by other users (mode ${octal}); it holds job env, outputs and logs: chmod 600 it (and its -wal and -shm files) unless that access is meant`,
      );
    }
    return store;
  }
  // Loaded only when chosen: an SQLite deployment never pays for the PostgreSQL driver.
  const { PostgresStore } = await import('./postgres/postgres-store.js');
  return PostgresStore.open(loc.url, opts.postgres);
}
