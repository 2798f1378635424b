/**
 * `npx tsx bench/cross-server-wake.ts [trials]`: how long a long-poll claim waiting on one server takes
 * to be answered when a run starts through another server on the same PostgreSQL database (the
 * LISTEN/NOTIFY path of docs/architecture.md "Events between servers"). Two `weft server` processes,
 * the claim sweep out of the way; prints p50/p99/max of (claim answered − run answered) in ms.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createDatabase } from './lib/pg.js';
import { makeTempDir, REPO_DIR } from './lib/procs.js';

const trials = Number(process.argv[2] ?? 50);
const db = await createDatabase();
const workflows = makeTempDir('weft-bench-wf-');
const procs: ReturnType<typeof spawn>[] = [];
async function server(apiOnly: boolean): Promise<string> {
  const p = spawn(process.execPath, [path.join(REPO_DIR, 'bin', 'weft'), 'server'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: db.url, WORKFLOWS_DIR: workflows.path, API_ONLY: apiOnly ? '1' : '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(p);
  let out = '';
  return new Promise((resolve, reject) => {
    const on = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    p.stdout!.on('data', on);
    p.stderr!.on('data', on);
    p.once('exit', () => reject(new Error(`server exited:\n${out}`)));
  });
}
const post = async (url: string, body?: unknown) => {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: (await r.json().catch(() => null)) as { job?: { job_id?: string } } | null };
};
try {
  const [a, b] = [await server(false), await server(true)];
  const gaps: number[] = [];
  for (let i = 0; i < trials; i++) {
    const id = `wake-${i}`;
    await post(`${a}/api/workflows`, { id, jobs: { only: { run: 'true', labels: [id] } } });
    const claim = post(`${b}/api/jobs/claim`, { worker_id: 'w', labels: [id], wait_secs: 30 }).then((r) => ({ r, at: performance.now() }));
    // Let the claim park on B before the run starts.
    await new Promise((r) => setTimeout(r, 50));
    const ran = await post(`${a}/api/workflows/${id}/run`);
    const runAt = performance.now();
    if (ran.status !== 200 && ran.status !== 201 && ran.status !== 202) throw new Error(`run answered ${ran.status}`);
    const { r, at } = await claim;
    if (r.body?.job?.job_id !== 'only') throw new Error(`claim answered ${JSON.stringify(r.body)}`);
    gaps.push(at - runAt);
  }
  gaps.sort((x, y) => x - y);
  const q = (p: number) => gaps[Math.min(gaps.length - 1, Math.floor(p * gaps.length))]!.toFixed(1);
  console.log(JSON.stringify({ trials, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: gaps.at(-1)!.toFixed(1) }));
} finally {
  for (const p of procs) p.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await db.drop();
  await workflows.remove();
}
