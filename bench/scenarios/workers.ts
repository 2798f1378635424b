/**
 * Real workers: `weft worker` processes (CONCURRENCY 8) running `true`, next to the rate at which this
 * machine starts `sh -c true` at all, which bounds any shell-job runner here. Rows: the bare rates; a
 * chain (each job needs the previous one) on 2 workers; a 1→N→1 fan-out onto 2 idle workers (16 idle
 * slots), read as how soon the first wave reaches them; and 4 workers draining a flat run. All times
 * are the server's own (the status document's started_at_ms and finished_at_ms), so what a worker
 * does between jobs (polling, spawning, reporting) is inside every figure.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { apiOk, createWorkflow, runWorkflow, type JobsSpec } from '../lib/api.js';
import { freshWeft, type FreshServer } from '../lib/fresh.js';
import { makeTempDir, startWorker, type ServerHandle } from '../lib/procs.js';
import { emptyRow, type Row } from '../lib/report.js';
import type { Settings, StoreKind } from '../lib/settings.js';
import { errorMessage, round, sleep, summarize } from '../lib/util.js';

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export interface BareRates {
  /** `sh -c true` per second from one bash loop. */
  shell_serial: number;
  /** The same from `concurrency` bash loops at once (the machine's limit for shell jobs). */
  shell_parallel: number;
  /** `sh -c true` per second spawned one after another by node:child_process, as a Node worker does. */
  node_serial: number;
  /** Mean ms per `sh -c true` from one bash loop. */
  shell_ms: number;
}

function bashLoop(n: number): string {
  return `i=0; while [ $i -lt ${n} ]; do sh -c true; i=$((i+1)); done`;
}

async function nodeSpawns(n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('sh', ['-c', 'true'], { stdio: 'ignore' });
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
  }
  return n / ((performance.now() - t0) / 1000);
}

export async function bareRates(s: Settings): Promise<BareRates> {
  const n = s.workers.bareSpawns;
  const t0 = performance.now();
  spawnSync('bash', ['-c', bashLoop(n)], { stdio: 'ignore' });
  const serialSecs = (performance.now() - t0) / 1000;
  const loops = s.workers.concurrency;
  const per = Math.ceil(n / loops);
  const t1 = performance.now();
  spawnSync('bash', ['-c', `for k in $(seq ${loops}); do (${bashLoop(per)}) & done; wait`], { stdio: 'ignore' });
  const parallelSecs = (performance.now() - t1) / 1000;
  return {
    shell_serial: round(n / serialSecs, 1)!,
    shell_parallel: round((per * loops) / parallelSecs, 1)!,
    node_serial: round(await nodeSpawns(n), 1)!,
    shell_ms: round((serialSecs * 1000) / n, 2)!,
  };
}

interface JobTimes {
  id: string;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  state: string;
}

/**
 * Runs the workflow and answers its jobs once the run is over. While it runs, only the run list's
 * newest entry is read (counts from an index): the whole status document of a 2,000-job run, read ten
 * times a second, took a tenth of this 2-core machine from the workers being measured.
 */
async function runAndWait(origin: string, id: string, deadlineMs: number): Promise<JobTimes[]> {
  await runWorkflow(origin, id);
  const until = Date.now() + deadlineMs;
  const wf = encodeURIComponent(id);
  for (;;) {
    const [run] = (await apiOk(origin, 'GET', `/api/workflows/${wf}/runs?limit=1`)).json as Array<{ finished_at_ms: number | null; job_counts: Record<string, number> }>;
    if (run && run.finished_at_ms !== null) break;
    if (Date.now() > until) throw new Error(`${id}: not finished within ${deadlineMs / 1000} s (jobs by state: ${JSON.stringify(run?.job_counts ?? {})})`);
    await sleep(100);
  }
  return ((await apiOk(origin, 'GET', `/api/workflows/${wf}/status`)).json as { jobs: JobTimes[] }).jobs;
}

function chain(n: number): JobsSpec {
  const jobs: JobsSpec = {};
  const id = (i: number) => `c${String(i).padStart(4, '0')}`;
  for (let i = 0; i < n; i++) jobs[id(i)] = i === 0 ? { run: 'true' } : { run: 'true', needs: [id(i - 1)] };
  return jobs;
}

function fan(width: number): JobsSpec {
  const jobs: JobsSpec = { root: { run: 'true' } };
  const mids = Array.from({ length: width }, (_, i) => `m${String(i).padStart(3, '0')}`);
  for (const m of mids) jobs[m] = { run: 'true', needs: ['root'] };
  jobs.sink = { run: 'true', needs: mids };
  return jobs;
}

function flat(n: number): JobsSpec {
  const jobs: JobsSpec = {};
  for (let i = 0; i < n; i++) jobs[`j${String(i).padStart(5, '0')}`] = { run: 'true' };
  return jobs;
}

async function withWorkers<T>(origin: string, s: Settings, count: number, fn: () => Promise<T>): Promise<T> {
  const dir = makeTempDir('weft-bench-work-');
  const workers: ServerHandle[] = [];
  try {
    for (let i = 0; i < count; i++) {
      workers.push(await startWorker(origin, { CONCURRENCY: String(s.workers.concurrency), WORK_DIR: path.join(dir.path, `w${i}`), LONG_POLL_SECS: '30' }));
    }
    // Every worker's claims are waiting on the server before the run starts.
    await sleep(500);
    return await fn();
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await dir.remove();
  }
}

const ms = (j: JobTimes, k: 'started_at_ms' | 'finished_at_ms') => j[k] ?? Number.NaN;

export async function workerScenario(s: Settings, store: StoreKind, bare: BareRates): Promise<Row[]> {
  const name = STORE_NAME[store];
  const c = s.workers.concurrency;
  const chainRow = emptyRow(`workers.chain.${store}`, `real workers: chain ${s.workers.chainLength} · ${name} (2 × CONCURRENCY ${c})`, 'workers', store);
  const fanRow = emptyRow(`workers.fan.${store}`, `real workers: fan 1→${s.workers.fanWidth}→1 · ${name} (2 × CONCURRENCY ${c})`, 'workers', store);
  const drainRow = emptyRow(`workers.drain.${store}`, `real workers: ${s.workers.drainWorkers} × CONCURRENCY ${c} drain ${s.workers.drainJobs} · ${name}`, 'workers', store);
  let fresh: FreshServer | null = null;
  try {
    fresh = await freshWeft(store);
    const { origin } = fresh.server;
    await createWorkflow(origin, 'w-chain', chain(s.workers.chainLength));
    await createWorkflow(origin, 'w-fan', fan(s.workers.fanWidth));
    await createWorkflow(origin, 'w-drain', flat(s.workers.drainJobs));

    await withWorkers(origin, s, 2, async () => {
      const jobs = (await runAndWait(origin, 'w-chain', 300_000)).sort((a, b) => a.id.localeCompare(b.id));
      const steps = jobs.slice(1).map((j, i) => ms(j, 'started_at_ms') - ms(jobs[i]!, 'finished_at_ms'));
      const perJob = jobs.map((j) => ms(j, 'finished_at_ms') - ms(j, 'started_at_ms'));
      const wall = ms(jobs.at(-1)!, 'finished_at_ms') - ms(jobs[0]!, 'started_at_ms');
      chainRow.jobs_per_sec = round((jobs.length * 1000) / wall, 1);
      const st = summarize(steps);
      chainRow.latency = { what: 'step: job finished → next job started (server times)', p50_ms: st.p50_ms, p99_ms: st.p99_ms };
      chainRow.summary = { wall_ms: round(wall), wall_per_job_ms: round(wall / jobs.length, 2), claimed_to_finished: summarize(perJob), bare_shell_ms: bare.shell_ms };
      chainRow.note = `${round(wall / jobs.length, 2)} ms per job; bare sh -c true ${bare.shell_ms} ms`;

      const fanJobs = await runAndWait(origin, 'w-fan', 300_000);
      const root = fanJobs.find((j) => j.id === 'root')!;
      const mids = fanJobs.filter((j) => j.id.startsWith('m')).map((j) => ms(j, 'started_at_ms') - ms(root, 'finished_at_ms')).sort((a, b) => a - b);
      const firstWave = mids.slice(0, 2 * c);
      const fw = summarize(firstWave);
      fanRow.latency = { what: `first wave: root finished → each of the first ${firstWave.length} fan-out jobs started (idle slots)`, p50_ms: fw.p50_ms, p99_ms: fw.p99_ms };
      const sink = fanJobs.find((j) => j.id === 'sink')!;
      const fanWall = ms(sink, 'finished_at_ms') - ms(root, 'started_at_ms');
      fanRow.jobs_per_sec = round((fanJobs.length * 1000) / fanWall, 1);
      fanRow.summary = { wall_ms: round(fanWall), all_started_ms: round(mids.at(-1)!), fan_width: s.workers.fanWidth };
      fanRow.note = `all ${mids.length} started ${round(mids.at(-1)!, 0)} ms after root`;
    });

    await withWorkers(origin, s, s.workers.drainWorkers, async () => {
      const jobs = await runAndWait(origin, 'w-drain', 600_000);
      const first = Math.min(...jobs.map((j) => ms(j, 'started_at_ms')));
      const last = Math.max(...jobs.map((j) => ms(j, 'finished_at_ms')));
      const rate = (jobs.length * 1000) / (last - first);
      drainRow.jobs_per_sec = round(rate, 1);
      drainRow.summary = { wall_ms: round(last - first), bare_shell_parallel: bare.shell_parallel, ratio_to_bare_shell: round(rate / bare.shell_parallel, 3) };
      drainRow.note = `${round(rate / bare.shell_parallel, 2)} × bare sh -c true (${bare.shell_parallel}/s from ${c} shells)`;
    });
  } catch (err) {
    for (const r of [chainRow, fanRow, drainRow]) {
      if (r.jobs_per_sec !== null) continue;
      r.status = 'error';
      r.note = `${errorMessage(err).split('\n')[0]}${fresh ? ` | server: ${fresh.server.tail().split('\n').slice(-3).join(' / ')}` : ''}`;
    }
  } finally {
    await fresh?.close();
  }
  return [chainRow, fanRow, drainRow];
}

/** The row of bare rates: what any shell-job runner on this machine can reach at best. */
export function bareRow(bare: BareRates, s: Settings): Row {
  const row = emptyRow('workers.bare', `bare: sh -c true from ${s.workers.concurrency} bash loops`, 'workers', null);
  row.jobs_per_sec = bare.shell_parallel;
  row.summary = { ...bare };
  row.note = `one bash loop ${bare.shell_serial}/s (${bare.shell_ms} ms each); node:child_process one after another ${bare.node_serial}/s`;
  return row;
}
