/**
 * Throwaway PostgreSQL databases: one per measurement, so no run sees another's rows, dropped when the
 * measurement ends (or by the cleanup registry if the bench dies first).
 */
import { spawnSync } from 'node:child_process';
import postgres from 'postgres';
import { cleanup, REPO_DIR } from './procs.js';
import { errorMessage } from './util.js';

export const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let counter = 0;

function admin() {
  return postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
}

/** The same server and credentials as the admin URL, another database. */
export function databaseUrl(name: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Null when PostgreSQL answers; otherwise why not (the PostgreSQL rows are then skipped, not failed). */
export async function pgUnavailable(): Promise<string | null> {
  const sql = admin();
  try {
    await sql`SELECT 1`;
    return null;
  } catch (err) {
    return errorMessage(err);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export interface TempDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function dropDatabase(name: string): Promise<void> {
  const sql = admin();
  try {
    // FORCE ends sessions a killed server may have left behind.
    await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** The exit path cannot await, so the drop runs in a synchronous child process. */
function dropDatabaseSync(name: string): void {
  const script = `import('postgres').then(async ({ default: postgres }) => {
    const sql = postgres(process.env.U, { max: 1, onnotice: () => {} });
    await sql.unsafe('DROP DATABASE IF EXISTS "' + process.env.N + '" WITH (FORCE)').finally(() => sql.end({ timeout: 1 }));
  })`;
  spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: REPO_DIR,
    env: { ...process.env, U: PG_ADMIN_URL, N: name },
    timeout: 15_000,
    stdio: 'ignore',
  });
}

export async function createDatabase(): Promise<TempDatabase> {
  const name = `weft_bench_${process.pid}_${++counter}`;
  const sql = admin();
  try {
    await sql.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
  const drop = cleanup.add(
    `drop database ${name}`,
    () => dropDatabase(name),
    () => dropDatabaseSync(name),
  );
  return { name, url: databaseUrl(name), drop };
}
