import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/**
 * Needs a PostgreSQL server; by default postgres://postgres@127.0.0.1:5432/postgres with trust auth.
 * Each test gets a database of its own, dropped afterwards. An unreachable server fails the tests.
 */
export const ADMIN_URL = process.env.WEFT_TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const HOW_TO_START =
  `PostgreSQL is not reachable at ${ADMIN_URL}. Start it with ` +
  '`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` ' +
  '(or point WEFT_TEST_PG_ADMIN_URL at a server whose user may CREATE DATABASE)';

export const admin = postgres(ADMIN_URL, { max: 2, onnotice: () => {}, connect_timeout: 5 });
after(() => admin.end({ timeout: 5 }));

let reachable: Promise<void> | undefined;
export function ensureReachable(): Promise<void> {
  reachable ??= admin`SELECT 1`.then(
    () => undefined,
    (err: Error) => {
      throw new Error(`${HOW_TO_START}: ${err.message}`, { cause: err });
    },
  );
  return reachable;
}

function urlFor(db: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function createDatabase(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  await ensureReachable();
  const name = `weft_test_${randomBytes(6).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  return {
    name,
    url: urlFor(name),
    drop: async () => {
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`;
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

