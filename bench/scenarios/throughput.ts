/**
 * Jobs per second through claim -> complete: the ceiling server, the spec path (one claim and one
 * complete per job) and the batched path (report-batch completing what a loop holds and claiming more
 * in the same request). Each repetition gets a fresh server and store, seeded before the load
 * generators start, so a repetition measures draining a queue of root jobs and nothing else.
 */
import { api, seedRootJobs } from '../lib/api.js';
import { freshStore, freshWeft, type FreshServer } from '../lib/fresh.js';
import { databaseOf, PgCpuSampler, type PgCpuOutcome } from '../lib/pgcpu.js';
import { transactions } from '../lib/pg-load.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Loadgens, readCpuMs, readMemory, startCeiling, type ServerHandle } from '../lib/procs.js';
import type { LoadgenConfig, LoadgenResult, LoopMode } from '../lib/protocol.js';
import type { Settings, StoreKind } from '../lib/settings.js';
import { round, summarize, type LatencySummary } from '../lib/util.js';

export type Target = 'ceiling' | StoreKind;

export interface ThroughputRep {
  jobs_per_sec: number | null;
  completed: number;
  /** Jobs the measured part could drain: those seeded minus those the warm-up took. */
  expected: number;
  warmup_completed: number;
  warmup_errors: number;
  span_ms: number | null;
  /** spec: claim round trips; batch: report-batch/claim-batch round trips. */
  latency: LatencySummary;
  requests: number;
  null_claims: number;
  errors: number;
  error_samples: string[];
  timed_out: boolean;
  seed_ms: number | null;
  server_peak_rss_bytes: number | null;
  /**
   * The server's event-loop delay (its /healthz, read as the drain ends: the last one to two seconds of
   * it), when it reports one.
   */
  server_event_loop_delay_ms?: { p50: number; p99: number; max: number };
  /** The server's last output lines, kept when requests failed (a crash or a signal shows there). */
  server_log_tail?: string[];
  /** batch: how full the batches were. */
  claims_per_request?: { requests: number; mean: number | null; max: number };
  /** PostgreSQL: the backends' CPU over the measured drain (bench/lib/pgcpu.ts), per completed job. */
  pg_cpu?: PgCpuOutcome;
  /** PostgreSQL: the database's transactions over the measured drain, per completed job (bench/lib/pg-load.ts). */
  pg_transactions_per_job?: number | null;
  /**
   * The CPU time every weft server process of the measurement used over the measured drain, per
   * completed job: with the backends' (pg_cpu), what a job costs whatever else shares the machine.
   */
  server_cpu_ms_per_job?: number | null;
}

export type RepOutcome = { kind: 'ok'; rep: ThroughputRep } | { kind: 'unsupported'; note: string };

/**
 * Both batch endpoints must exist; a 404 from either means this server predates them. Any other
 * answer counts as "exists": a server that rejects these minimal probe bodies (say, an empty
 * `reports`) should still be measured, and a real incompatibility then shows as request errors.
 */
async function probeBatch(origin: string, s: Settings): Promise<string | null> {
  const claim = { worker_id: 'bench-probe', labels: [], lease_ttl_secs: s.leaseTtlSecs, max_jobs: 1, wait_secs: 0 };
  const probes = [
    { path: '/api/jobs/claim-batch', body: claim },
    { path: '/api/jobs/report-batch', body: { reports: [], claim } },
  ];
  for (const p of probes) {
    // Nothing is queued yet, so a server that has the endpoint hands out nothing here.
    const a = await api(origin, 'POST', p.path, p.body);
    if (a.status === 404) return `POST ${p.path} answered 404`;
  }
  return null;
}

export function logTail(server: ServerHandle, lines = 15): string[] {
  return server.tail().split('\n').slice(-lines);
}

export function loadgenConfigs(
  s: Settings,
  origin: string,
  mode: LoopMode,
  extra: Partial<LoadgenConfig> = {},
  labelsFor: (proc: number) => string[][] = () => [[]],
): LoadgenConfig[] {
  return Array.from({ length: s.loadgenProcesses }, (_, p) => ({
    origin,
    mode,
    loops: s.loopsPerProcess,
    workerPrefix: `lg${p}`,
    labels: labelsFor(p),
    leaseTtlSecs: s.leaseTtlSecs,
    ...extra,
  }));
}

/** Folds the children's results into one measurement: the span runs from the first claim sent by any loop to the last completion answered. */
export function combine(results: LoadgenResult[], seeded: number): Omit<ThroughputRep, 'seed_ms' | 'server_peak_rss_bytes'> {
  const first = Math.min(...results.map((r) => r.firstClaimAt ?? Infinity));
  const last = Math.max(...results.map((r) => r.lastCompleteAt ?? -Infinity));
  const completed = results.reduce((a, r) => a + r.completed, 0);
  const span = Number.isFinite(first) && Number.isFinite(last) && last > first ? last - first : null;
  const perRequest = results.flatMap((r) => r.claimsPerRequest ?? []);
  const warmup = results.reduce((a, r) => a + (r.warmupCompleted ?? 0), 0);
  const expected = seeded - warmup;
  return {
    jobs_per_sec: span === null ? null : round((completed * 1000) / span, 1),
    completed,
    expected,
    warmup_completed: warmup,
    warmup_errors: results.reduce((a, r) => a + (r.warmupErrors ?? 0), 0),
    span_ms: round(span),
    latency: summarize(results.flatMap((r) => r.latencies)),
    requests: results.reduce((a, r) => a + r.requests, 0),
    null_claims: results.reduce((a, r) => a + r.nullClaims, 0),
    errors: results.reduce((a, r) => a + r.errors, 0),
    error_samples: results.flatMap((r) => r.errorSamples).slice(0, 10),
    timed_out: results.some((r) => r.timedOut),
    ...(perRequest.length
      ? {
          claims_per_request: {
            requests: perRequest.length,
            mean: round(perRequest.reduce((a, b) => a + b, 0) / perRequest.length, 2),
            max: Math.max(...perRequest),
          },
        }
      : {}),
  };
}

/** One repetition of the throughput measurement against `target`. */
export async function throughputRep(s: Settings, target: Target, mode: 'spec' | 'batch', servers = 1, maxJobs = 10): Promise<RepOutcome> {
  let fresh: FreshServer | null = null;
  let loadgens: Loadgens | null = null;
  let sampler: PgCpuSampler | null = null;
  let database: string | null = null;
  let pgUrl: string | null = null;
  try {
    let seedMs: number | null = null;
    const warmupPerLoop = Math.ceil(s.warmupJobs / (s.loadgenProcesses * s.loopsPerProcess));
    const seeded = s.jobs + warmupPerLoop * s.loadgenProcesses * s.loopsPerProcess;
    if (target === 'ceiling') {
      const server = await startCeiling(seeded);
      fresh = { server, extra: [], close: () => server.stop() };
    } else {
      const store = await freshStore(target);
      if (target === 'postgres') {
        database = databaseOf(store.url);
        pgUrl = store.url;
      }
      fresh = await freshWeft(store, servers);
      if (mode === 'batch') {
        const missing = await probeBatch(fresh.server.origin, s);
        if (missing) return { kind: 'unsupported', note: missing };
      }
      seedMs = (await seedRootJobs(fresh.server.origin, seeded)).ms;
    }
    const { origin, pid } = fresh.server;
    const extra = fresh.extra;
    // Several servers: one load-generator process per server, the loops split evenly among them.
    const configs =
      extra.length === 0
        ? loadgenConfigs(s, origin, mode, { warmupClaimsPerLoop: warmupPerLoop, batchMaxJobs: maxJobs })
        : [fresh.server, ...extra].map((srv, p) => ({
            ...loadgenConfigs(s, srv.origin, mode, { warmupClaimsPerLoop: warmupPerLoop, batchMaxJobs: maxJobs })[0]!,
            workerPrefix: `lg${p}`,
            loops: Math.floor((s.loadgenProcesses * s.loopsPerProcess) / (extra.length + 1)),
          }));
    loadgens = await Loadgens.start(configs);
    let xactsBefore: number | null = null;
    if (pgUrl) {
      // Idle backends report their transaction counts within a second: let the warm-up's arrive first.
      await sleep(1500);
      xactsBefore = await transactions(pgUrl);
    }
    // Started after the warm-up (Loadgens.start returns once it is done), so only the measured drain counts.
    if (database) sampler = await PgCpuSampler.start(database);
    const serverPids = target === 'ceiling' ? [] : [pid, ...extra.map((x) => x.pid)];
    const cpuOf = (): number | null => {
      let sum = 0;
      for (const p of serverPids) {
        const ms = readCpuMs(p);
        if (ms === null) return null;
        sum += ms;
      }
      return sum;
    };
    const cpuBefore = cpuOf();
    const results = await loadgens.go(s.repSecs * 1000);
    const cpuAfter = cpuOf();
    const pgCpu = sampler ? await sampler.stop(results.reduce((a, r) => a + r.completed, 0)) : null;
    sampler = null;
    const peak = readMemory(pid).hwm_bytes;
    const rep: ThroughputRep = { ...combine(results, seeded), seed_ms: seedMs, server_peak_rss_bytes: target === 'ceiling' ? null : peak };
    if (pgCpu) rep.pg_cpu = pgCpu;
    if (target !== 'ceiling' && rep.completed > 0) {
      rep.server_cpu_ms_per_job = cpuBefore === null || cpuAfter === null ? null : round((cpuAfter - cpuBefore) / rep.completed, 3);
    }
    if (target !== 'ceiling') {
      const health = (await fetch(`${origin}/healthz`).then((r) => r.json()).catch(() => null)) as { event_loop_delay_ms?: ThroughputRep['server_event_loop_delay_ms'] } | null;
      if (health?.event_loop_delay_ms) rep.server_event_loop_delay_ms = health.event_loop_delay_ms;
    }
    if (rep.errors + rep.warmup_errors > 0) rep.server_log_tail = logTail(fresh.server);
    if (pgUrl && xactsBefore !== null && rep.completed > 0) {
      // Every server stopped, their backends have exited and reported their last counts.
      await loadgens.close();
      await Promise.all([fresh.server, ...fresh.extra].map((srv) => srv.stop()));
      const xacts = await transactions(pgUrl, true);
      rep.pg_transactions_per_job = xacts === null ? null : round((xacts - xactsBefore) / rep.completed, 2);
    }
    return { kind: 'ok', rep };
  } finally {
    if (sampler) await sampler.stop(0).catch(() => {});
    await loadgens?.close();
    await fresh?.close();
  }
}
