/**
 * Claim + complete cost against the size of the queue. Seeds N queued jobs (spread over several label
 * sets, half of them held by a backoff delay) straight into a fresh SQLite store, then times full engine
 * claim -> complete cycles. By design the cost must not grow with N.
 *
 *   npx tsx bench/claim-backlog.ts [sizes=10,10000,1000000] [ops=2000]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Engine } from '../src/engine/engine.js';
import { labelKey } from '../src/domain/labels.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { NewJob } from '../src/store/store.js';

const sizes = (process.argv[2] ?? '10,10000,1000000').split(',').map(Number);
const ops = Number(process.argv[3] ?? 2000);
const LABEL_SETS = [[], ['linux'], ['linux', 'gpu'], ['arm'], ['windows']];

/** Seeds through the Store's own operations: one workflow (and run) per batch of queued jobs. */
async function seed(store: SqliteStore, n: number): Promise<void> {
  const now = Date.now();
  const batch = 20_000;
  const labelSets = LABEL_SETS.map((labels) => ({ key: labelKey(labels), labels }));
  for (let start = 0, w = 0; start < n; start += batch, w++) {
    const id = `bench-${w}`;
    await store.createWorkflow({
      id, name: id, trigger: null, source: 'api', hash: 'x', created_at_ms: now, updated_at_ms: now, latest_run: 0,
      definition: { id, name: id, trigger: null, env: {}, jobs: [] },
    });
    const jobs: NewJob[] = [];
    for (let i = start; i < Math.min(n, start + batch); i++) {
      const labels = LABEL_SETS[i % LABEL_SETS.length]!;
      // Half the backlog waits on a backoff far in the future: claims must skip it without reading it.
      const delayed = i % 2 === 1 ? now + 3_600_000 : 0;
      jobs.push({
        workflow_id: id, job_id: `j${i}`, name: `j${i}`, command: 'true', env: {}, labels,
        label_key: labelKey(labels), needs: [], dependents: [], pending_needs: 0,
        condition: 'success', needs_results: {}, failed_upstream: false, run_cancelled: false, conditional_dependents: false, max_retries: 0, backoff: { kind: 'none' },
        timeout_secs: null, status: 'queued', attempt: 0, enqueued_at_ms: now - n + i, delayed_until_ms: delayed,
        ready_at_ms: Math.max(now - n + i, delayed), priority: 0, started_at_ms: null, finished_at_ms: null, deadline_ms: null,
        error: null, outputs: null, upstream_outputs: {}, worker_id: null, lease_id: null, group_id: null, matrix: null, max_parallel: null, fail_fast: false, for_each: null, item: null, item_index: null, concurrency_group: null, cancel_in_progress: false,
      });
    }
    const r = await store.startRun({ workflow_id: id, expected_hash: 'x', jobs, label_sets: labelSets, now_ms: now });
    if (r.kind !== 'started') throw new Error(`seeding ${id}: ${r.kind}`);
  }
}

for (const n of sizes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-bench-'));
  const store = new SqliteStore(path.join(dir, 'bench.db'), { synchronous: 'NORMAL' });
  const engine = new Engine({ store, logger: pino({ level: 'silent' }) });
  const t0 = performance.now();
  await seed(store, n);
  const seedMs = performance.now() - t0;
  const cycles = Math.min(ops, Math.floor(n / 2));
  const lat: number[] = [];
  for (let i = 0; i < cycles; i++) {
    const s = performance.now();
    const c = await engine.claim({ worker_id: 'bench', labels: ['linux', 'gpu'], lease_ttl_secs: 30 });
    if (!c) break;
    await engine.leases.heartbeat(c.lease.lease_id);
    await engine.leases.complete(c.lease.lease_id, { i: String(i) });
    lat.push(performance.now() - s);
  }
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(3);
  console.log(
    `queued=${n.toLocaleString('en')} seeded in ${(seedMs / 1000).toFixed(1)}s; ${lat.length} claim+heartbeat+complete cycles: ` +
      `p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, ${(lat.length / (lat.reduce((a, b) => a + b, 0) / 1000)).toFixed(0)} cycles/s`,
  );
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
