/**
 * The bench's PostgreSQL CPU figure (bench/lib/pgcpu.ts): it counts the CPU the database's backends
 * burn inside the window, including a backend that disconnects before the window ends, and leaves
 * out what a backend burned before the window began. Each burn is a CPU-bound query whose cost the
 * test reads from /proc itself, so the checks hold on a busy machine: they compare CPU time, not
 * wall time.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import postgres from 'postgres';
import { PgCpuSampler } from '../../bench/lib/pgcpu.js';
import { createDatabase } from '../helpers/postgres.js';

const TICK_MS = 10;

function ticks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]);
}

async function connect(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const [{ pid }] = (await sql`SELECT pg_backend_pid() AS pid`) as unknown as [{ pid: number }];
  return { sql, pid };
}

/** About half a second of one backend's CPU; returns the ticks it burned, read from /proc. */
async function burn(b: { sql: postgres.Sql; pid: number }): Promise<number> {
  const before = ticks(b.pid);
  await b.sql`SELECT sum(sqrt(g)) FROM generate_series(1, 4000000) g`;
  return ticks(b.pid) - before;
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('PG CPU: counts the window, including a backend that exits in it, and not what came before', async () => {
  const db = await createDatabase();
  after(() => db.drop());
  const early = await connect(db.url);
  const stays = await connect(db.url);
  const leaves = await connect(db.url);
  after(() => Promise.all([early, stays, leaves].map((b) => b.sql.end({ timeout: 1 }).catch(() => {}))));

  const before = await burn(early);
  assert.ok(before >= 10, `the warm-up burn used ${before} ticks; it must be large enough to show if counted`);

  const sampler = await PgCpuSampler.start(db.name, 50);
  const inStays = await burn(stays);
  const inLeaves = await burn(leaves);
  // Two more samples after the burn, so the sampler has seen all of the leaving backend's CPU
  // before it disconnects (what a backend burns after its last sample is, by design, not counted).
  const seen = sampler.sampleCount;
  await until('two samples after the burn', () => sampler.sampleCount >= seen + 2);
  await leaves.sql.end({ timeout: 5 });
  await until('the leaving backend to be gone', () => !fs.existsSync(`/proc/${leaves.pid}`));

  const out = await sampler.stop(100);
  assert.ok(!('error' in out), `the sampler failed: ${'error' in out ? out.error : ''}`);
  const inWindowMs = (inStays + inLeaves) * TICK_MS;
  assert.ok(out.cpu_ms >= inWindowMs, `counted ${out.cpu_ms} ms, the two burns in the window alone took ${inWindowMs} ms`);
  assert.ok(out.cpu_ms < inWindowMs + before * TICK_MS, `counted ${out.cpu_ms} ms: the ${before * TICK_MS} ms burned before the window were counted too`);
  // At least: an autovacuum worker visiting the new database would be counted as well.
  assert.ok(out.backends >= 3, `${out.backends} backends counted, 3 connected`);
  assert.ok(out.exited_backends >= 1, 'the backend that disconnected is not reported as exited');
  assert.equal(out.ms_per_job, Math.round((out.cpu_ms / 100) * 10_000) / 10_000);
});
