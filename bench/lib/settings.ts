/** What one `npm run bench` measures, from the environment (see bench/README.md). */
import { envInt } from './util.js';

export type StoreKind = 'sqlite' | 'postgres';
export type Section = 'ceiling' | 'spec' | 'batch' | 'servers' | 'dag' | 'backlog' | 'workers' | 'reference' | 'large';
const SECTIONS: Section[] = ['ceiling', 'spec', 'batch', 'servers', 'dag', 'backlog', 'workers', 'reference', 'large'];

export interface Settings {
  quick: boolean;
  /** Jobs per throughput repetition. */
  jobs: number;
  repetitions: number;
  loadgenProcesses: number;
  loopsPerProcess: number;
  leaseTtlSecs: number;
  /** `max_jobs` of the batched rows: one row per size, per store (and one ceiling row per size). */
  batchSizes: number[];
  /** Extra jobs per throughput repetition, claimed and completed before the measured N (not timed). */
  warmupJobs: number;
  /**
   * Time budget of one measurement: a repetition ends when its N jobs are drained or when this much
   * time has passed, whichever comes first (jobs/s is then over the jobs done). Keeps the whole run
   * bounded on a slow or busy machine.
   */
  repSecs: number;
  dag: { chainLength: number; fanWidth: number; longPollSecs: number; pollPauseMs: number; deadlineSecs: number };
  backlog: { sizes: number[]; labelSets: number; claimsPerLoop: { small: number; large: number } };
  /** Real `weft worker` processes running `true` (bench/scenarios/workers.ts). */
  workers: { concurrency: number; chainLength: number; fanWidth: number; drainJobs: number; drainWorkers: number; bareSpawns: number };
  /**
   * Large runs (bench/scenarios/large.ts): a flat run of `jobs` and a `layers` × `width` layered one;
   * each shape created `creates` times, its status document and the list page read `reads` times.
   */
  large: { jobs: number; layers: number; width: number; creates: number; reads: number; shapes: Array<'flat' | 'layered'> };
  /** Server counts of the `servers` rows: the spec path on PostgreSQL through that many servers on one database. */
  serverCounts: number[];
  stores: StoreKind[];
  sections: Section[];
  build: boolean;
}

function list(name: string): string[] | null {
  const raw = process.env[name]?.trim();
  return raw ? raw.split(',').map((s) => s.trim()).filter(Boolean) : null;
}

export function loadSettings(): Settings {
  const quick = process.env.BENCH_QUICK === '1';
  const stores = (list('BENCH_STORES') ?? ['sqlite', 'postgres']) as StoreKind[];
  for (const s of stores) if (s !== 'sqlite' && s !== 'postgres') throw new Error(`BENCH_STORES: unknown store "${s}"`);
  const sections = (list('BENCH_ONLY') ?? SECTIONS) as Section[];
  for (const s of sections) if (!SECTIONS.includes(s)) throw new Error(`BENCH_ONLY: unknown section "${s}" (${SECTIONS.join(', ')})`);
  const sizes = (list('BENCH_BACKLOG_SIZES') ?? (quick ? ['1000'] : ['1000', '1000000'])).map((s) => {
    const n = Number(s.replace(/_/g, ''));
    if (!Number.isInteger(n) || n < 100) throw new Error(`BENCH_BACKLOG_SIZES: "${s}" is not an integer >= 100`);
    return n;
  });
  return {
    quick,
    jobs: envInt('BENCH_JOBS', quick ? 2000 : 20_000),
    repetitions: Math.max(1, envInt('BENCH_REPS', quick ? 1 : 3)),
    loadgenProcesses: 2,
    loopsPerProcess: 8,
    leaseTtlSecs: 60,
    batchSizes: [...new Set((list('BENCH_BATCH_MAX_JOBS') ?? ['10', '50']).map((x) => {
      const n = Number(x);
      if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error(`BENCH_BATCH_MAX_JOBS: "${x}" is not an integer 1..1000`);
      return n;
    }))],
    warmupJobs: envInt('BENCH_WARMUP_JOBS', quick ? 400 : 1000),
    repSecs: Math.max(1, envInt('BENCH_REP_SECS', quick ? 15 : 60)),
    dag: { chainLength: quick ? 100 : 200, fanWidth: 50, longPollSecs: 30, pollPauseMs: 2, deadlineSecs: 90 },
    // 1k: every loop's two fitting label sets hold 40 jobs, so 30 claims per loop never run dry.
    backlog: { sizes, labelSets: 50, claimsPerLoop: { small: 30, large: 150 } },
    workers: { concurrency: 8, chainLength: quick ? 50 : 200, fanWidth: 50, drainJobs: quick ? 400 : 2000, drainWorkers: 4, bareSpawns: quick ? 200 : 1000 },
    large: {
      jobs: envInt('BENCH_LARGE_JOBS', 10_000),
      layers: 100,
      width: 100,
      creates: 3,
      reads: quick ? 10 : 30,
      shapes: (list('BENCH_LARGE_SHAPES') ?? ['flat', 'layered']).map((x) => {
        if (x !== 'flat' && x !== 'layered') throw new Error(`BENCH_LARGE_SHAPES: unknown shape "${x}" (flat, layered)`);
        return x;
      }),
    },
    serverCounts: (list('BENCH_SERVER_COUNTS') ?? ['2', '3']).map((x) => {
      const n = Number(x);
      if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`BENCH_SERVER_COUNTS: "${x}" is not an integer 1..8`);
      return n;
    }),
    stores,
    sections,
    build: process.env.BENCH_NO_BUILD !== '1',
  };
}

export function claimsPerLoop(s: Settings, size: number): number {
  // A loop fits 2 of the 50 label sets, so it can see 2 * size / 50 jobs; stay at 3/4 of that so
  // that no loop runs dry.
  const visible = Math.floor((2 * size * 3) / (50 * 4));
  return size >= 100_000 ? s.backlog.claimsPerLoop.large : Math.max(1, Math.min(s.backlog.claimsPerLoop.small, visible));
}
