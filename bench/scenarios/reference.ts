/**
 * Reference rows (section `reference`): established PostgreSQL job queues draining the same number
 * of no-op jobs with the same concurrency on the same PostgreSQL, in the same run as weft's rows, so
 * that weft's PostgreSQL figures can be read as ratios against them (bench/README.md "Reference
 * queues"). Each repetition gets a fresh database, enqueues the jobs in bulk before the clock
 * starts, and drains them in a child process (bench/reference-drain.ts), as the load generators
 * drive weft from children of their own.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createDatabase, PG_ADMIN_URL, type TempDatabase } from '../lib/pg.js';
import { databaseOf, pgCpuNote, PgCpuSampler, type PgCpuOutcome } from '../lib/pgcpu.js';
import { BENCH_DIR, REPO_DIR, trackChild } from '../lib/procs.js';
import type { RefConfig, RefFromChild, RefKind, RefResult, RefToChild } from '../lib/ref-protocol.js';
import { emptyRow, settleReps, type Row } from '../lib/report.js';
import type { Settings } from '../lib/settings.js';
import { errorMessage, median, now, round } from '../lib/util.js';

/** pg-boss fetches this many jobs per work() loop and fetch (its `batchSize`). */
export const PGBOSS_BATCH_SIZE = 200;

const REFERENCES: Array<{ kind: RefKind; name: (concurrency: number) => string }> = [
  { kind: 'graphile', name: (c) => `reference · graphile-worker (concurrency ${c}, defaults)` },
  { kind: 'graphile-batched', name: (c) => `reference · graphile-worker (concurrency ${c}, local queue 500, batched complete/fail)` },
  { kind: 'pgboss', name: (c) => `reference · pg-boss (${c} workers, batchSize ${PGBOSS_BATCH_SIZE})` },
];

export interface ReferenceRep {
  jobs_per_sec: number | null;
  completed: number;
  expected: number;
  executed: number;
  max_gap_ms: number | null;
  span_ms: number | null;
  seed_ms: number;
  timed_out: boolean;
  pg_cpu: PgCpuOutcome;
}

class Child {
  private readonly inbox: Array<(msg: RefFromChild) => void> = [];
  readonly stop: () => Promise<void>;

  constructor(private readonly child: ChildProcess) {
    this.stop = trackChild(child, 'reference queue');
    child.on('message', (msg: RefFromChild) => {
      for (const fn of [...this.inbox]) fn(msg);
    });
  }

  send(msg: RefToChild): void {
    if (this.child.connected) this.child.send(msg);
  }

  /** The next message of `type`; a fatal message, an exit or the timeout rejects. */
  await<T extends RefFromChild['type']>(type: T, timeoutMs: number): Promise<Extract<RefFromChild, { type: T }>> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.inbox.splice(this.inbox.indexOf(listener), 1);
        this.child.off('exit', onExit);
        clearTimeout(timer);
      };
      const listener = (msg: RefFromChild) => {
        if (msg.type === type) {
          done();
          resolve(msg as Extract<RefFromChild, { type: T }>);
        } else if (msg.type === 'fatal') {
          done();
          reject(new Error(msg.message.split('\n')[0]));
        }
      };
      const onExit = (code: number | null, signal: string | null) => {
        done();
        reject(new Error(`reference child exited (${signal ?? code}) while waiting for "${type}"`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`reference child: no "${type}" within ${timeoutMs} ms`));
      }, timeoutMs);
      this.inbox.push(listener);
      this.child.once('exit', onExit);
    });
  }

  /** Asks the child to shut its worker down and waits for it to exit (the cleanup kills it after a grace period). */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.send({ type: 'stop' });
      await Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, 15_000).unref())]);
    }
    await this.stop();
  }
}

/** One repetition: a fresh database, N jobs enqueued, drained by the reference with concurrency 16. */
export async function referenceRep(s: Settings, kind: RefKind): Promise<ReferenceRep> {
  let db: TempDatabase | null = null;
  let child: Child | null = null;
  let sampler: PgCpuSampler | null = null;
  try {
    db = await createDatabase();
    const config: RefConfig = {
      kind,
      url: db.url,
      jobs: s.jobs,
      concurrency: s.loadgenProcesses * s.loopsPerProcess,
      pgbossBatchSize: PGBOSS_BATCH_SIZE,
    };
    child = new Child(
      fork(path.join(BENCH_DIR, 'reference-drain.ts'), [], { cwd: REPO_DIR, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
    child.send({ type: 'start', config });
    const ready = await child.await('ready', 300_000);
    sampler = await PgCpuSampler.start(databaseOf(db.url));
    sampler.exclude(ready.pollBackendPid);
    const deadlineAt = now() + s.repSecs * 1000;
    child.send({ type: 'go', deadlineAt });
    const { result } = await child.await('result', s.repSecs * 1000 + 90_000);
    const pgCpu = await sampler.stop(result.completed);
    sampler = null;
    return repFrom(result, s.jobs, ready.seedMs, pgCpu);
  } finally {
    if (sampler) await sampler.stop(0).catch(() => {});
    await child?.close();
    await db?.drop();
  }
}

function repFrom(r: RefResult, expected: number, seedMs: number, pgCpu: PgCpuOutcome): ReferenceRep {
  const span = r.firstStartAt !== null && r.lastCompleteAt > r.firstStartAt ? r.lastCompleteAt - r.firstStartAt : null;
  return {
    jobs_per_sec: span === null ? null : round((r.completed * 1000) / span, 1),
    completed: r.completed,
    expected,
    executed: r.executed,
    max_gap_ms: round(r.maxGapMs),
    span_ms: round(span),
    seed_ms: Math.round(seedMs),
    timed_out: r.timedOut,
    pg_cpu: pgCpu,
  };
}

interface RefRowState {
  row: Row;
  kind: RefKind;
  reps: ReferenceRep[];
  failures: string[];
}

function finish(st: RefRowState, s: Settings): void {
  const { row, reps } = st;
  if (!settleReps(row, reps, st.failures)) return;
  row.summary = {
    reps: reps.length,
    completed: reps.map((r) => r.completed),
    expected: s.jobs,
    timed_out: reps.some((r) => r.timed_out),
    pg_cpu_ms_per_job: median(reps.map((r) => ('error' in r.pg_cpu ? null : r.pg_cpu.ms_per_job))),
  };
  const notes: string[] = [];
  if (reps.some((r) => r.completed < r.expected)) {
    notes.push(`${s.repSecs} s time budget reached: ${reps.map((r) => r.completed.toLocaleString('en')).join(', ')} of ${s.jobs.toLocaleString('en')} jobs done`);
  }
  const cpu = pgCpuNote(reps.map((r) => r.pg_cpu));
  if (cpu) notes.push(cpu);
  notes.push('jobs/s over first job start → all recorded complete');
  if (st.failures.length) notes.push(`${st.failures.length} repetition(s) failed: ${st.failures.join('; ')}`);
  row.note = notes.join('; ');
}

/**
 * The whole section: every reference's repetitions interleaved (as the throughput rows are), one
 * row per reference. Skipped rows say why when PostgreSQL is not reachable or not among the stores.
 */
export async function referenceSection(s: Settings, pgSkip: string | null, log: (msg: string) => void): Promise<Row[]> {
  const concurrency = s.loadgenProcesses * s.loopsPerProcess;
  const states: RefRowState[] = REFERENCES.map(({ kind, name }) => ({
    row: emptyRow(`reference.${kind}`, name(concurrency), 'reference', 'postgres'),
    kind,
    reps: [],
    failures: [],
  }));
  const skip = !s.stores.includes('postgres') ? 'PostgreSQL is not in BENCH_STORES' : pgSkip ? `PostgreSQL unreachable at ${PG_ADMIN_URL}: ${pgSkip}` : null;
  if (skip) {
    log(`reference rows skipped: ${skip}`);
    for (const st of states) {
      st.row.status = 'skipped';
      st.row.note = skip;
    }
    return states.map((st) => st.row);
  }
  for (let rep = 1; rep <= s.repetitions; rep++) {
    for (const st of states) {
      try {
        const r = await referenceRep(s, st.kind);
        st.reps.push(r);
        const cpu = 'error' in r.pg_cpu ? r.pg_cpu.error : `PG CPU ${r.pg_cpu.ms_per_job ?? '—'} ms/job`;
        log(`${st.row.name} rep ${rep}/${s.repetitions}: ${r.jobs_per_sec ?? '—'} jobs/s, ${r.completed}/${r.expected} jobs, ${cpu}, seeded in ${r.seed_ms} ms, longest pause between jobs ${r.max_gap_ms} ms`);
      } catch (err) {
        st.failures.push(errorMessage(err).split('\n')[0]!);
        log(`${st.row.name} rep ${rep}/${s.repetitions} failed: ${errorMessage(err)}`);
      }
    }
  }
  for (const st of states) finish(st, s);
  return states.map((st) => st.row);
}
