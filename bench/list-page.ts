/**
 * Cost of one page of the workflow list, whose items carry every job of their latest run. Creates N
 * workflows of J jobs (half of them run once) in a fresh SQLite store, then times GET /api/workflows
 * with limit=N over real HTTP. The page must cost a fixed number of queries, not one per item.
 *
 *   npx tsx bench/list-page.ts [workflows=1000] [jobs=5] [reps=20]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Engine } from '../src/engine/engine.js';
import { buildApp } from '../src/http/app.js';
import { definitionHash, parseWorkflowObject } from '../src/definitions/index.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

const n = Number(process.argv[2] ?? 1000);
const jobsPer = Number(process.argv[3] ?? 5);
const reps = Number(process.argv[4] ?? 20);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-list-'));
const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
const logger = pino({ level: 'silent' });
const engine = new Engine({ store, logger });
try {
  for (let i = 0; i < n; i++) {
    const jobs: Record<string, { run: string; needs?: string }> = {};
    for (let j = 0; j < jobsPer; j++) jobs[`j${j}`] = j === 0 ? { run: 'true' } : { run: 'true', needs: `j${j - 1}` };
    const def = parseWorkflowObject({ id: `wf-${String(i).padStart(5, '0')}`, jobs }, { source: 'bench' });
    await engine.createWorkflow(def, definitionHash(def));
    if (i % 2 === 0) await engine.run(def.id);
  }
  const app = await buildApp({ engine, logger });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/workflows?limit=${n}`;
  const times: number[] = [];
  let bytes = 0;
  for (let r = 0; r < reps + 2; r++) {
    const t0 = performance.now();
    const res = await fetch(url);
    const text = await res.text();
    const ms = performance.now() - t0;
    if (r >= 2) times.push(ms); // the first two warm caches and the JIT
    bytes = text.length;
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(1);
  console.log(`GET /api/workflows?limit=${n} (${jobsPer} jobs each, half run): p50 ${pct(0.5)} ms, p90 ${pct(0.9)} ms, ${(bytes / 1024).toFixed(0)} KiB`);
  await app.close();
} finally {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
