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
import { errorMessage, median, round, sleep, summarize } from '../lib/util.js';

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export interface BareRates {
  /** `sh -c true` per second from one bash loop. */
  shell_serial: number;
  /** The same from `concurrency` bash loops at once (the machine's limit for shell jobs). */
  shell_parallel: number;
  /** `sh -c true` per second spawned one after another by node:child_process, as a Node worker does. */
  node_serial: number | null;
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

/** `node: false` leaves out the node:child_process rate (null), the slowest of the three to take. */
export async function bareRates(s: Settings, opts: { node?: boolean } = {}): Promise<BareRates> {
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
    node_serial: opts.node === false ? null : round(await nodeSpawns(n), 1),
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

/** One repetition of the three rows, next to the bare rates measured just before it. */
interface WorkerRep {
  bare_shell_ms: number;
  bare_shell_parallel: number;
  chain: { wall_ms: number; wall_per_job_ms: number; over_bare_ms: number; step_p50_ms: number | null; step_p99_ms: number | null };
  fan: { first_wave_p50_ms: number | null; first_wave_p99_ms: number | null; all_started_ms: number; wall_ms: number; jobs_per_sec: number };
  drain: { wall_ms: number; jobs_per_sec: number; ratio_to_bare_shell: number };
}

async function workerRep(origin: string, s: Settings, bare: BareRates): Promise<WorkerRep> {
  const c = s.workers.concurrency;
  let chainRep: WorkerRep['chain'] | null = null;
  let fanRep: WorkerRep['fan'] | null = null;
  await withWorkers(origin, s, 2, async () => {
    const jobs = (await runAndWait(origin, 'w-chain', 300_000)).sort((a, b) => a.id.localeCompare(b.id));
    const steps = summarize(jobs.slice(1).map((j, i) => ms(j, 'started_at_ms') - ms(jobs[i]!, 'finished_at_ms')));
    const wall = ms(jobs.at(-1)!, 'finished_at_ms') - ms(jobs[0]!, 'started_at_ms');
    const perJob = wall / jobs.length;
    chainRep = { wall_ms: round(wall)!, wall_per_job_ms: round(perJob, 2)!, over_bare_ms: round(perJob - bare.shell_ms, 2)!, step_p50_ms: steps.p50_ms, step_p99_ms: steps.p99_ms };

    const fanJobs = await runAndWait(origin, 'w-fan', 300_000);
    const root = fanJobs.find((j) => j.id === 'root')!;
    const mids = fanJobs.filter((j) => j.id.startsWith('m')).map((j) => ms(j, 'started_at_ms') - ms(root, 'finished_at_ms')).sort((a, b) => a - b);
    const firstWave = summarize(mids.slice(0, 2 * c));
    const sink = fanJobs.find((j) => j.id === 'sink')!;
    const fanWall = ms(sink, 'finished_at_ms') - ms(root, 'started_at_ms');
    fanRep = { first_wave_p50_ms: firstWave.p50_ms, first_wave_p99_ms: firstWave.p99_ms, all_started_ms: round(mids.at(-1)!)!, wall_ms: round(fanWall)!, jobs_per_sec: round((fanJobs.length * 1000) / fanWall, 1)! };
  });
  let drainRep: WorkerRep['drain'] | null = null;
  await withWorkers(origin, s, s.workers.drainWorkers, async () => {
    const jobs = await runAndWait(origin, 'w-drain', 600_000);
    const first = Math.min(...jobs.map((j) => ms(j, 'started_at_ms')));
    const last = Math.max(...jobs.map((j) => ms(j, 'finished_at_ms')));
    const rate = (jobs.length * 1000) / (last - first);
    drainRep = { wall_ms: round(last - first)!, jobs_per_sec: round(rate, 1)!, ratio_to_bare_shell: round(rate / bare.shell_parallel, 3)! };
  });
  return { bare_shell_ms: bare.shell_ms, bare_shell_parallel: bare.shell_parallel, chain: chainRep!, fan: fanRep!, drain: drainRep! };
}

const mid = (values: ReadonlyArray<number | null>, digits = 2) => round(median(values), digits);
const list = (values: readonly number[]) => values.join(' / ');

/**
 * The three rows over `s.repetitions` repetitions, each run of the workflows next to bare rates
 * measured just before it: this machine's speed at starting processes drifts by half within minutes
 * (bench/README.md, the real-worker rows), so each figure is taken against its own repetition's bare
 * rate and the rows give the medians, with every repetition in `raw`.
 */
export async function workerScenario(s: Settings, store: StoreKind): Promise<Row[]> {
  const name = STORE_NAME[store];
  const c = s.workers.concurrency;
  const chainRow = emptyRow(`workers.chain.${store}`, `real workers: chain ${s.workers.chainLength} · ${name} (2 × CONCURRENCY ${c})`, 'workers', store);
  const fanRow = emptyRow(`workers.fan.${store}`, `real workers: fan 1→${s.workers.fanWidth}→1 · ${name} (2 × CONCURRENCY ${c})`, 'workers', store);
  const drainRow = emptyRow(`workers.drain.${store}`, `real workers: ${s.workers.drainWorkers} × CONCURRENCY ${c} drain ${s.workers.drainJobs} · ${name}`, 'workers', store);
  let fresh: FreshServer | null = null;
  const reps: WorkerRep[] = [];
  try {
    fresh = await freshWeft(store);
    const { origin } = fresh.server;
    await createWorkflow(origin, 'w-chain', chain(s.workers.chainLength));
    await createWorkflow(origin, 'w-fan', fan(s.workers.fanWidth));
    await createWorkflow(origin, 'w-drain', flat(s.workers.drainJobs));
    for (let rep = 0; rep < s.repetitions; rep++) reps.push(await workerRep(origin, s, await bareRates(s, { node: false })));
  } catch (err) {
    for (const r of [chainRow, fanRow, drainRow]) {
      r.status = 'error';
      r.note = `${errorMessage(err).split('\n')[0]}${fresh ? ` | server: ${fresh.server.tail().split('\n').slice(-3).join(' / ')}` : ''}`;
    }
  } finally {
    await fresh?.close();
  }
  if (chainRow.status !== 'ok') return [chainRow, fanRow, drainRow];
  const n = reps.length;
  const median3 = n > 1 ? `; median of ${n}` : '';

  const bareMs = mid(reps.map((r) => r.bare_shell_ms));
  chainRow.jobs_per_sec = mid(reps.map((r) => (s.workers.chainLength * 1000) / r.chain.wall_ms), 1);
  chainRow.latency = { what: 'step: job finished → next job started (server times)', p50_ms: mid(reps.map((r) => r.chain.step_p50_ms)), p99_ms: mid(reps.map((r) => r.chain.step_p99_ms)) };
  chainRow.summary = { wall_ms: mid(reps.map((r) => r.chain.wall_ms), 0), wall_per_job_ms: mid(reps.map((r) => r.chain.wall_per_job_ms)), over_bare_ms: mid(reps.map((r) => r.chain.over_bare_ms)), bare_shell_ms: bareMs };
  chainRow.note = `${chainRow.summary.wall_per_job_ms} ms per job, ${chainRow.summary.over_bare_ms} ms over a bare sh -c true (${bareMs} ms)${median3}${n > 1 ? `: ${list(reps.map((r) => r.chain.wall_per_job_ms))} ms over ${list(reps.map((r) => r.bare_shell_ms))}` : ''}`;
  chainRow.raw = reps.map((r) => ({ bare_shell_ms: r.bare_shell_ms, ...r.chain }));

  fanRow.jobs_per_sec = mid(reps.map((r) => r.fan.jobs_per_sec), 1);
  fanRow.latency = { what: `first wave: root finished → each of the first ${2 * c} fan-out jobs started (idle slots)`, p50_ms: mid(reps.map((r) => r.fan.first_wave_p50_ms)), p99_ms: mid(reps.map((r) => r.fan.first_wave_p99_ms)) };
  fanRow.summary = { wall_ms: mid(reps.map((r) => r.fan.wall_ms), 0), all_started_ms: mid(reps.map((r) => r.fan.all_started_ms), 0), fan_width: s.workers.fanWidth };
  fanRow.note = `all ${s.workers.fanWidth} started ${fanRow.summary.all_started_ms} ms after root${median3}${n > 1 ? `; first wave p99 ${list(reps.map((r) => r.fan.first_wave_p99_ms ?? Number.NaN))} ms` : ''}`;
  fanRow.raw = reps.map((r) => r.fan);

  const ratio = mid(reps.map((r) => r.drain.ratio_to_bare_shell), 3);
  drainRow.jobs_per_sec = mid(reps.map((r) => r.drain.jobs_per_sec), 1);
  drainRow.summary = { wall_ms: mid(reps.map((r) => r.drain.wall_ms), 0), bare_shell_parallel: mid(reps.map((r) => r.bare_shell_parallel), 1), ratio_to_bare_shell: ratio };
  drainRow.note = `${round(ratio, 2)} × bare sh -c true from ${c} shells${median3}${n > 1 ? `: ${list(reps.map((r) => r.drain.ratio_to_bare_shell))} × against ${list(reps.map((r) => r.bare_shell_parallel))}/s` : ` (${reps[0]!.bare_shell_parallel}/s)`}`;
  drainRow.raw = reps.map((r) => ({ bare_shell_parallel: r.bare_shell_parallel, ...r.drain }));
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
