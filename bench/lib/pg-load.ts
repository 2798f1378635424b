/**
 * The transactions one measurement's database committed or rolled back, from pg_stat_database (the
 * PostgreSQL rows' notes, see bench/README.md "Rows"). Every statement the store sends outside a
 * transaction is a transaction of its own, so transactions per job is the count of commits per job
 * (and of statements, but for the few in a BEGIN … COMMIT). Backend CPU is bench/lib/pgcpu.ts's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { PG_ADMIN_URL } from './pg.js';

function admin() {
  return postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
}

function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

async function backends(sql: postgres.Sql, db: string): Promise<number[]> {
  const rows = await sql`SELECT pid FROM pg_stat_activity WHERE datname = ${db} AND pid <> pg_backend_pid()`;
  return rows.map((r) => r.pid as number);
}

/**
 * Transactions committed or rolled back in the database so far. A backend reports its counts when it
 * goes idle, at most once a second, and for good when it exits; `settle` waits (up to 15 s) until no
 * backend of the database is left, for a count taken after its clients have closed.
 */
export async function transactions(url: string, settle = false): Promise<number | null> {
  const sql = admin();
  const db = databaseOf(url);
  try {
    if (settle) {
      const deadline = Date.now() + 15_000;
      while ((await backends(sql, db)).length > 0 && Date.now() < deadline) await sleep(100);
    }
    const [row] = await sql`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = ${db}`;
    return row ? Number(row.n) : null;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}
