/**
 * `npx tsx bench/store-ops.ts [jobs] [group]`: what the SQLite store's writer spends per operation,
 * without HTTP in the way. Seeds `jobs` queued no-op jobs, then drains them the way the writer thread
 * sees the spec path: groups of `group` operations (claims of new jobs and completes of the previous
 * group's leases, half and half) in one transaction with one COMMIT, as group-commit.ts runs them.
 * Prints microseconds per claim, per complete and per COMMIT. Used to decide store-level changes
 * (docs/performance.md); nothing here asserts anything.
 *
 * NOCKPT=1 turns the WAL checkpoint off for the drain, so that every page a commit wrote stays in the
 * -wal file: it then also prints the WAL frames per batch and per job, and the frames per job of each
 * table and index (the page numbers of the frames, named through the dbstat table). SYNC=NORMAL skips
 * the fsync of each commit, for counting pages on a busy machine; V7=1 makes lease ids time-ordered.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { labelKey } from '../src/domain/labels.js';
import { openStore } from '../src/store/index.js';
import type { Claimed } from '../src/store/store.js';
import { Conn, openConnection } from '../src/store/sqlite/connection.js';
import { runBatch } from '../src/store/sqlite/group-commit.js';
import { runWrite, writeCall, type WriteCall } from '../src/store/sqlite/writes.js';

function leaseId(): string {
  if (process.env.V7 !== '1') return randomUUID();
  const ms = Date.now().toString(16).padStart(12, '0');
  const r = randomUUID().replace(/-/g, '');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${r.slice(13, 16)}-${r.slice(16, 20)}-${r.slice(20)}`;
}
const JOBS = Number(process.argv[2] ?? 20_000);
const GROUP = Number(process.argv[3] ?? 8);
/** Jobs per seeded run (RUN_JOBS; the spec path's seeding puts 2,000 in each, the `large` section 10,000 in one). */
const RUN_JOBS = Number(process.env.RUN_JOBS ?? 2000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-store-ops-'));
const file = path.join(dir, 'weft.db');

async function seed(): Promise<void> {
  const store = await openStore(`sqlite:${file}`, { sqliteSynchronous: 'NORMAL' });
  const now = Date.now();
  const labels: string[] = [];
  const key = labelKey(labels);
  for (let w = 0; w * RUN_JOBS < JOBS; w++) {
    const id = `wf-${w}`;
    await store.createWorkflow({
      id, name: id, trigger: null, source: 'api', hash: 'h', created_at_ms: now, updated_at_ms: now, latest_run: 0,
      definition: { id, name: id, trigger: null, env: {}, jobs: [] },
    } as never);
    const jobs = Array.from({ length: Math.min(RUN_JOBS, JOBS - w * RUN_JOBS) }, (_, i) => ({
      workflow_id: id, job_id: `j${i}`, name: `j${i}`, command: 'true', env: {}, labels, label_key: key, needs: [],
      dependents: [], pending_needs: 0, condition: 'success', needs_results: {}, failed_upstream: false, run_cancelled: false,
      conditional_dependents: false, max_retries: 0, backoff: { kind: 'none' }, timeout_secs: null, status: 'queued',
      attempt: 0, enqueued_at_ms: now, delayed_until_ms: 0, ready_at_ms: now, started_at_ms: null, finished_at_ms: null,
      deadline_ms: null, error: null, outputs: null, upstream_outputs: {}, worker_id: null, lease_id: null, group_id: null, matrix: null, max_parallel: null, fail_fast: false, for_each: null, item: null, item_index: null, concurrency_group: null, cancel_in_progress: false,
    }));
    await store.startRun({ workflow_id: id, expected_hash: 'h', jobs: jobs as never, label_sets: [{ key, labels }], now_ms: now });
  }
  await store.close();
}

await seed();
const db = openConnection(file, { synchronous: (process.env.SYNC as 'FULL' | 'NORMAL') ?? 'FULL' });
const conn = new Conn(db);
if (process.env.NOCKPT === '1') db.pragma('wal_autocheckpoint = 0');
const spent = { claim: 0, complete: 0, commit: 0, batches: 0, claims: 0, completes: 0 };
let held: string[] = [];
let nextId = 1;
const key = labelKey([]);
for (let done = 0; done < JOBS; ) {
  const now = Date.now();
  const calls: WriteCall[] = [];
  for (const leaseId of held) calls.push(writeCall(nextId++, 'complete', leaseId, {}, now));
  const claims = Math.max(1, GROUP - held.length);
  for (let i = 0; i < claims; i++) {
    const req = { worker_id: `w${i % 16}`, worker_labels: [], label_keys: [key], ttl_secs: 60, max: 1, lease_ids: [leaseId()], now_ms: now };
    calls.push(writeCall(nextId++, 'claim', req));
  }
  const t0 = performance.now();
  const results = runBatch(db, conn, calls);
  spent.commit += performance.now() - t0;
  spent.batches++;
  held = [];
  for (const [i, r] of results.entries()) {
    if (!r.ok) throw new Error(r.message);
    if (calls[i]!.op === 'claim') {
      spent.claims++;
      for (const c of r.value as Claimed[]) held.push(c.lease.lease_id);
    } else {
      spent.completes++;
      done++;
    }
  }
  if (held.length === 0 && calls.every((c) => c.op === 'claim')) break;
}
// Read before closing: the last connection to close checkpoints the WAL and deletes it.
const wal = process.env.NOCKPT === '1' ? walFrames(db, `${file}-wal`) : undefined;
db.close();

// Per-operation time: the same operations again, timed one by one inside a transaction without COMMIT.
const perOp = timeOps();
fs.rmSync(dir, { recursive: true, force: true });
const us = (ms: number, n: number) => ((ms * 1000) / n).toFixed(1);
console.log(
  JSON.stringify({
    jobs: JOBS, group: GROUP, batches: spent.batches,
    us_per_batch: us(spent.commit, spent.batches), us_per_job: us(spent.commit, spent.completes), ...perOp,
    wal_frames_per_batch: wal ? (wal.frames / spent.batches).toFixed(1) : undefined,
    wal_frames_per_job: wal ? (wal.frames / spent.completes).toFixed(2) : undefined,
    wal_frames_per_job_by_tree: wal
      ? Object.fromEntries(
          [...wal.byTree].sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, Number((n / spent.completes).toFixed(2))]),
        )
      : undefined,
  }),
);

/**
 * The frames of the -wal file (https://sqlite.org/fileformat2.html#walformat: a 32-byte header, then
 * frames of a 24-byte header and one page each), counted per table or index that owns the page now.
 */
function walFrames(d: typeof db, walFile: string): { frames: number; byTree: Map<string, number> } {
  const owner = new Map<number, string>();
  for (const r of d.prepare('SELECT name, pageno FROM dbstat').all() as Array<{ name: string; pageno: number }>) owner.set(r.pageno, r.name);
  const buf = fs.readFileSync(walFile);
  const pageSize = buf.readUInt32BE(8);
  const salt = [buf.readUInt32BE(16), buf.readUInt32BE(20)];
  const byTree = new Map<string, number>();
  let frames = 0;
  for (let off = 32; off + 24 + pageSize <= buf.length; off += 24 + pageSize) {
    // A frame of an earlier generation of the file (salts differ) is not part of this run.
    if (buf.readUInt32BE(off + 8) !== salt[0] || buf.readUInt32BE(off + 12) !== salt[1]) break;
    const name = owner.get(buf.readUInt32BE(off)) ?? '(free or new)';
    byTree.set(name, (byTree.get(name) ?? 0) + 1);
    frames++;
  }
  return { frames, byTree };
}

function timeOps() {
  const db2 = openConnection(file, { synchronous: 'FULL' });
  const c2 = new Conn(db2);
  const n = 2000;
  // Fresh queued jobs for the timing: requeue what was just completed, as it was.
  // Schema version 24 keeps the lease in the job row: clear it there too, before lease_id, so that the
  // job is as a fresh queued one and no lease moves to the history (the bench runs on older schemas too).
  const leaseInRow = (db2.prepare(`SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'lease_state'`).get() ?? null) !== null;
  if (leaseInRow) db2.exec(`UPDATE jobs SET lease_state = NULL, lease_ttl_secs = NULL, lease_granted_at_ms = NULL, lease_renewed_at_ms = NULL,
    lease_expires_at_ms = NULL, lease_token_name = NULL`);
  db2.exec(`UPDATE jobs SET status = 'queued', lease_id = NULL, worker_id = NULL, outputs = NULL, finished_at_ms = NULL, started_at_ms = NULL`);
  db2.exec(`UPDATE runs SET unfinished_jobs = 1000000, status = 'running'`);
  const now = Date.now();
  const leases: string[] = [];
  db2.exec('BEGIN IMMEDIATE');
  let t = performance.now();
  for (let i = 0; i < n; i++) {
    const req = { worker_id: `w${i % 16}`, worker_labels: [], label_keys: [key], ttl_secs: 60, max: 1, lease_ids: [leaseId()], now_ms: now };
    const got = runWrite(c2, 'claim', req);
    leases.push(got[0]!.lease.lease_id);
  }
  const claimUs = ((performance.now() - t) * 1000) / n;
  t = performance.now();
  for (const l of leases) runWrite(c2, 'complete', l, {}, now);
  const completeUs = ((performance.now() - t) * 1000) / n;
  db2.exec('ROLLBACK');
  db2.close();
  return { us_claim: claimUs.toFixed(1), us_complete: completeUs.toFixed(1) };
}

