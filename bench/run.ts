/**
 * `npm run bench`: weft's throughput and latency, each row read against a bare node:http ceiling
 * measured in the same run on the same machine. See bench/README.md for what every row measures and
 * the environment variables; nothing here asserts anything, it only measures and reports.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pgUnavailable, PG_ADMIN_URL } from './lib/pg.js';
import { BENCH_DIR, buildSnapshot, cleanup, REPO_DIR, useWeftBin, type BuildOutcome } from './lib/procs.js';
import { emptyRow, markdownTable, settleReps, type Row } from './lib/report.js';
import { loadSettings, type Settings, type StoreKind } from './lib/settings.js';
import { errorMessage, median, round } from './lib/util.js';
import { pgCpuNote } from './lib/pgcpu.js';
import { referenceSection } from './scenarios/reference.js';
import { backlogScenario, labelSets } from './scenarios/backlog.js';
import { dagScenario } from './scenarios/dag.js';
import { largeScenario } from './scenarios/large.js';
import { bareRates, bareRow, workerScenario } from './scenarios/workers.js';
import { throughputRep, type Target, type ThroughputRep } from './scenarios/throughput.js';

const started = Date.now();
const log = (msg: string) => {
  const t = Math.round((Date.now() - started) / 1000);
  process.stderr.write(`[bench ${String(Math.floor(t / 60)).padStart(2, '0')}:${String(t % 60).padStart(2, '0')}] ${msg}\n`);
};

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu_model: cpus[0]?.model ?? null,
    cores: cpus.length,
    memory_bytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadavg_at_start: os.loadavg().map((x) => round(x, 2)),
  };
}

interface ThroughputRowState {
  row: Row;
  target: Target;
  mode: 'spec' | 'batch';
  /** Servers on the one store (the `servers` rows); 1 otherwise. */
  servers: number;
  /** `max_jobs` of a batched row. */
  maxJobs: number;
  reps: ThroughputRep[];
  /** Repetitions that could not be measured at all (the server did not start, say), with why. */
  failures: string[];
}

/** A batched row's id: `max_jobs` 10 keeps the id the rows had when 10 was the only size. */
function batchId(base: string, maxJobs: number): string {
  return maxJobs === 10 ? base : `${base}.${maxJobs}`;
}

function throughputRows(s: Settings, pgSkip: string | null): ThroughputRowState[] {
  const out: ThroughputRowState[] = [];
  if (s.sections.includes('ceiling')) {
    out.push({ row: emptyRow('ceiling', 'ceiling: bare node:http, fixed answers', 'ceiling', null), target: 'ceiling', mode: 'spec', servers: 1, maxJobs: 1, reps: [], failures: [] });
    if (s.sections.includes('batch')) {
      for (const n of s.batchSizes) {
        const row = emptyRow(batchId('ceiling.batch', n), `ceiling · batched protocol (max_jobs ${n})`, 'ceiling', null);
        out.push({ row, target: 'ceiling', mode: 'batch', servers: 1, maxJobs: n, reps: [], failures: [] });
      }
    }
  }
  for (const mode of ['spec', 'batch'] as const) {
    if (!s.sections.includes(mode)) continue;
    for (const n of mode === 'spec' ? [1] : s.batchSizes) {
      for (const store of s.stores) {
        const label = mode === 'spec' ? `spec path · ${STORE_NAME[store]}` : `batched path · ${STORE_NAME[store]} (max_jobs ${n})`;
        const id = mode === 'spec' ? `spec.${store}` : batchId(`batch.${store}`, n);
        const row = emptyRow(id, store === 'sqlite' ? `${label}${mode === 'spec' ? ' (synchronous FULL)' : ''}` : label, mode, store);
        if (store === 'postgres' && pgSkip) {
          row.status = 'skipped';
          row.note = `PostgreSQL unreachable at ${PG_ADMIN_URL}: ${pgSkip}`;
        }
        out.push({ row, target: store, mode, servers: 1, maxJobs: n, reps: [], failures: [] });
      }
    }
  }
  if (s.sections.includes('servers') && s.stores.includes('postgres')) {
    for (const n of s.serverCounts) {
      const loops = n === 1 ? s.loadgenProcesses * s.loopsPerProcess : Math.floor((s.loadgenProcesses * s.loopsPerProcess) / n) * n;
      const row = emptyRow(`servers.postgres.${n}`, `spec path · PostgreSQL · ${n} server${n === 1 ? '' : 's'} (${loops} loops)`, 'servers', 'postgres');
      if (pgSkip) {
        row.status = 'skipped';
        row.note = `PostgreSQL unreachable at ${PG_ADMIN_URL}: ${pgSkip}`;
      }
      out.push({ row, target: 'postgres', mode: 'spec', servers: n, maxJobs: 1, reps: [], failures: [] });
    }
  }
  return out;
}

function finishThroughput(st: ThroughputRowState, s: Settings): void {
  const { row, reps } = st;
  if (!settleReps(row, reps, st.failures)) return;
  row.latency = {
    what: st.mode === 'batch' ? 'batched request round trip' : 'claim round trip',
    p50_ms: round(median(reps.map((r) => r.latency.p50_ms))),
    p99_ms: round(median(reps.map((r) => r.latency.p99_ms))),
  };
  row.summary = {
    reps: reps.length,
    completed: reps.map((r) => r.completed),
    expected: s.jobs,
    errors: reps.reduce((a, r) => a + r.errors, 0),
    timed_out: reps.some((r) => r.timed_out),
    ...(st.target !== 'ceiling' ? { server_peak_rss_bytes: median(reps.map((r) => r.server_peak_rss_bytes)) } : {}),
  };
  const notes: string[] = [];
  const short = reps.filter((r) => r.completed < r.expected);
  if (short.length) {
    const done = reps.map((r) => r.completed.toLocaleString('en')).join(', ');
    notes.push(
      reps.some((r) => r.timed_out)
        ? `${s.repSecs} s time budget reached: ${done} of ${s.jobs.toLocaleString('en')} jobs done`
        : `only ${done} of ${s.jobs.toLocaleString('en')} jobs done`,
    );
  }
  const xacts = reps.flatMap((r) => (r.pg_transactions_per_job != null ? [r.pg_transactions_per_job] : []));
  if (xacts.length) notes.push(`PostgreSQL transactions per job ${round(median(xacts), 2)}`);
  const serverCpu = reps.flatMap((r) => (r.server_cpu_ms_per_job != null ? [r.server_cpu_ms_per_job] : []));
  if (serverCpu.length) notes.push(`server CPU ${round(median(serverCpu), 2)} ms/job`);
  if (st.failures.length) notes.push(`${st.failures.length} repetition(s) failed: ${st.failures.join('; ')}`);
  const cpu = pgCpuNote(reps.map((r) => r.pg_cpu));
  if (cpu) notes.push(cpu);
  if (notes.length) row.note = notes.join('; ');
}

async function main(): Promise<void> {
  const s = loadSettings();
  const host = machine();
  log(`settings: ${s.quick ? 'quick, ' : ''}${s.jobs} jobs x ${s.repetitions} rep(s), stores ${s.stores.join('+')}, sections ${s.sections.join(',')}`);

  let build: BuildOutcome | null = null;
  let distMain = path.join(REPO_DIR, 'dist', 'cli', 'main.js');
  if (s.build) {
    log('compiling src/ into a private snapshot for this run (tsc)');
    build = buildSnapshot();
    if (build.exit_code !== 0) log(`tsc reported errors (exit ${build.exit_code}); it still wrote its output, measuring that:\n${build.output_tail}`);
    distMain = path.join(path.dirname(path.dirname(build.bin)), 'dist', 'cli', 'main.js');
    useWeftBin(build.bin);
  }
  if (!fs.existsSync(distMain)) throw new Error(`${distMain} is missing${s.build ? '' : ': run npm run build'}`);

  const pgSkip = s.stores.includes('postgres') ? await pgUnavailable() : null;
  if (pgSkip) log(`PostgreSQL rows skipped: ${pgSkip}`);
  const rows: Row[] = [];

  // Throughput repetitions are interleaved (ceiling, stores, batched, then again) so that a burst of
  // load from elsewhere on this shared machine lands on every row alike, which keeps the ratios fair.
  const tp = throughputRows(s, pgSkip);
  for (let rep = 1; rep <= s.repetitions; rep++) {
    for (const st of tp) {
      if (st.row.status !== 'ok') continue;
      try {
        const out = await throughputRep(s, st.target, st.mode, st.servers, st.maxJobs);
        if (out.kind === 'unsupported') {
          st.row.status = 'unsupported';
          st.row.note = out.note;
          log(`${st.row.name}: not supported by this server (${out.note})`);
          continue;
        }
        st.reps.push(out.rep);
        log(
          `${st.row.name} rep ${rep}/${s.repetitions}: ${out.rep.jobs_per_sec ?? '—'} jobs/s, ${out.rep.completed}/${out.rep.expected} jobs, ` +
            `p50 ${out.rep.latency.p50_ms} ms, p99 ${out.rep.latency.p99_ms} ms${out.rep.errors ? `, ${out.rep.errors} errors` : ''}`,
        );
      } catch (err) {
        // One failed repetition (a server that would not start, say) leaves the others standing.
        st.failures.push(errorMessage(err).split('\n')[0]!);
        log(`${st.row.name} rep ${rep}/${s.repetitions} failed: ${errorMessage(err)}`);
      }
    }
  }
  for (const st of tp) {
    finishThroughput(st, s);
    rows.push(st.row);
  }

  // graphile-worker and pg-boss on the same PostgreSQL, right after the throughput rows they are read against.
  if (s.sections.includes('reference')) rows.push(...(await referenceSection(s, pgSkip, log)));

  const liveStores = s.stores.filter((k) => !(k === 'postgres' && pgSkip));
  const skippedRow = (id: string, name: string, section: 'dag' | 'backlog' | 'large', store: StoreKind) => {
    const row = emptyRow(id, name, section, store);
    row.status = 'skipped';
    row.note = `PostgreSQL unreachable: ${pgSkip}`;
    return row;
  };

  if (s.sections.includes('dag')) {
    for (const store of s.stores) {
      if (!liveStores.includes(store)) {
        rows.push(skippedRow(`dag.${store}`, `DAG scenarios · ${STORE_NAME[store]}`, 'dag', store));
        continue;
      }
      log(`DAG chain ${s.dag.chainLength} and fan 1→${s.dag.fanWidth}→1 on ${STORE_NAME[store]}`);
      const out = await dagScenario(s, store);
      for (const r of out) log(`${r.name}: ${r.status === 'ok' ? `p50 ${r.latency?.p50_ms} ms, p99 ${r.latency?.p99_ms} ms` : `${r.status}: ${r.note}`}`);
      rows.push(...out);
    }
  }

  if (s.sections.includes('backlog')) {
    for (const store of s.stores) {
      for (const size of s.backlog.sizes) {
        if (!liveStores.includes(store)) {
          rows.push(skippedRow(`backlog.${store}.${size}`, `backlog ${size} queued · ${STORE_NAME[store]}`, 'backlog', store));
          continue;
        }
        log(`backlog of ${size.toLocaleString('en')} queued jobs on ${STORE_NAME[store]}: seeding`);
        for (const row of await backlogScenario(s, store, size)) {
          log(`${row.name}: ${row.status === 'ok' ? `claim p50 ${row.latency?.p50_ms} ms, p99 ${row.latency?.p99_ms} ms` : `${row.status}: ${row.note}`}`);
          rows.push(row);
        }
      }
    }
  }

  if (s.sections.includes('workers')) {
    log(`real workers: the bare rate of sh -c true (${s.workers.bareSpawns} spawns)`);
    const bare = await bareRates(s);
    const row = bareRow(bare, s);
    log(`${row.name}: ${row.jobs_per_sec}/s; ${row.note}`);
    rows.push(row);
    for (const store of liveStores) {
      log(`real workers on ${STORE_NAME[store]}: chain ${s.workers.chainLength}, fan 1→${s.workers.fanWidth}→1, ${s.workers.drainWorkers} workers draining ${s.workers.drainJobs}`);
      for (const r of await workerScenario(s, store)) {
        log(`${r.name}: ${r.status === 'ok' ? `${r.jobs_per_sec} jobs/s, p50 ${r.latency?.p50_ms ?? '—'} ms, p99 ${r.latency?.p99_ms ?? '—'} ms; ${r.note}` : `${r.status}: ${r.note}`}`);
        rows.push(r);
      }
    }
  }

  if (s.sections.includes('large')) {
    for (const store of s.stores) {
      for (const shape of s.large.shapes) {
        if (!liveStores.includes(store)) {
          rows.push(skippedRow(`large.${shape}.${store}`, `large ${shape} run · ${STORE_NAME[store]}`, 'large', store));
          continue;
        }
        log(`large ${shape} run on ${STORE_NAME[store]}: create, start, status document, list page, drain`);
        for (const row of await largeScenario(s, store, shape)) {
          log(`${row.name}: ${row.status === 'ok' ? `${row.jobs_per_sec === null ? '' : `${row.jobs_per_sec} jobs/s, `}p50 ${row.latency?.p50_ms} ms, p99 ${row.latency?.p99_ms} ms${row.note ? `; ${row.note}` : ''}` : `${row.status}: ${row.note}`}`);
          rows.push(row);
        }
      }
    }
  }

  const ceiling = rows.find((r) => r.id === 'ceiling');
  for (const r of rows) {
    if (r.jobs_per_sec !== null && ceiling?.jobs_per_sec) r.ratio_to_ceiling = round(r.jobs_per_sec / ceiling.jobs_per_sec, 4);
  }

  const results = {
    generated_at: new Date().toISOString(),
    duration_secs: Math.round((Date.now() - started) / 1000),
    machine: { ...host, loadavg_at_end: os.loadavg().map((x) => round(x, 2)) },
    weft: {
      git_head: git(['rev-parse', 'HEAD']),
      // The working tree may hold uncommitted edits; they are what dist/ was built from.
      uncommitted_paths: git(['status', '--porcelain'])?.split('\n').filter(Boolean).length ?? null,
      build,
    },
    settings: {
      ...s,
      sqlite_synchronous: 'FULL (npm start default)',
      postgres_admin_url: PG_ADMIN_URL,
      backlog_label_sets: labelSets().map((l) => l.join('+')),
      clock: 'performance.timeOrigin + performance.now() in every process',
    },
    rows,
  };
  const file = path.join(BENCH_DIR, 'results.json');
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${path.relative(REPO_DIR, file)}`);
  process.stdout.write(`\n${markdownTable(rows)}\n\n`);
}

let exiting = false;
async function shutdown(code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  await cleanup.runAll();
  process.exit(code);
}

// Ctrl-C or a kill must still stop every server and load generator and drop every database.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`${signal}: cleaning up`);
    void shutdown(130);
  });
}
process.on('exit', () => cleanup.runSync());

main().then(
  () => shutdown(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void shutdown(1);
  },
);
