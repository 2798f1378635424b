/**
 * PostgreSQL backend CPU of one measurement: the user + system CPU time of the server processes
 * connected to the measurement's database (pg_stat_activity.datname), read from /proc/<pid>/stat.
 * pg_stat_statements is not loaded on the bench machine, and its timings are wall-clock anyway; the
 * kernel's per-process counters are what the backends actually burned.
 *
 * Backends come and go during a drain (a pool opens one more connection, an autovacuum worker visits
 * the database), so the sampler polls every `intervalMs`: a backend seen at the first sample counts
 * from its value then, one that appears later counts from zero (it was born inside the window), and
 * one that has gone by the last sample counts up to its last sample; the CPU it used after that
 * sample and before it exited is lost (at most one interval's worth), and `exited_backends` says
 * how many did. The processes PostgreSQL shares between databases (checkpointer, WAL writer,
 * background writer) are not counted: they are not connected to any database.
 */
import fs from 'node:fs';
import postgres from 'postgres';
import { PG_ADMIN_URL } from './pg.js';
import { errorMessage, median, round } from './util.js';

/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel build. */
const TICKS_PER_SEC = 100;

export interface PgCpu {
  /** Backend CPU (user + system) in the window, all counted backends together. */
  cpu_ms: number;
  /** cpu_ms divided by the jobs the window completed; null when none completed. */
  ms_per_job: number | null;
  backends: number;
  /** Backends that disconnected inside the window (their last interval is not counted). */
  exited_backends: number;
  samples: number;
  interval_ms: number;
}

interface Seen {
  pid: number;
  base: number;
  last: number;
  gone: boolean;
}

/** utime + stime (ticks) and starttime of a process; null when it is gone or /proc is unreadable. */
function procTimes(pid: number): { ticks: number; start: string } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): utime is field 14, stime 15, starttime 22.
    return { ticks: Number(rest[11]) + Number(rest[12]), start: rest[19]! };
  } catch {
    return null;
  }
}

export class PgCpuSampler {
  private readonly seen = new Map<string, Seen>();
  private readonly excluded = new Set<number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private samples = 0;
  private failure: string | null = null;

  private constructor(
    private readonly sql: postgres.Sql,
    private readonly database: string,
    private readonly intervalMs: number,
  ) {}

  /** Takes the baseline sample, then samples every intervalMs until stop(). */
  static async start(database: string, intervalMs = 100): Promise<PgCpuSampler> {
    // The sampler's own connection is to the admin database, so it never counts itself.
    const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    const sampler = new PgCpuSampler(sql, database, intervalMs);
    await sampler.sample(true);
    sampler.timer = setInterval(() => {
      sampler.running = sampler.running.then(() => sampler.sample(false));
    }, intervalMs);
    return sampler;
  }

  /** Samples taken so far (the baseline included). */
  get sampleCount(): number {
    return this.samples;
  }

  /** A backend of the bench's own bookkeeping (say, a poll for the end of a drain): not counted. */
  exclude(pid: number): void {
    this.excluded.add(pid);
    for (const [key, s] of this.seen) if (s.pid === pid) this.seen.delete(key);
  }

  private async sample(baseline: boolean): Promise<void> {
    let pids: number[];
    try {
      const rows = await this.sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE datname = ${this.database}`;
      pids = rows.map((r) => r.pid);
    } catch (err) {
      this.failure ??= `pg_stat_activity: ${errorMessage(err)}`;
      return;
    }
    this.samples++;
    const present = new Set<string>();
    for (const pid of pids) {
      if (this.excluded.has(pid)) continue;
      const t = procTimes(pid);
      if (!t) continue;
      // Keyed by pid and start time, so that a pid reused by a new backend is a new entry.
      const key = `${pid}:${t.start}`;
      present.add(key);
      const prev = this.seen.get(key);
      // A backend born after the baseline spent all of its CPU inside the window.
      if (!prev) this.seen.set(key, { pid, base: baseline ? t.ticks : 0, last: t.ticks, gone: false });
      else prev.last = t.ticks;
    }
    if (baseline && pids.length > 0 && present.size === 0) {
      this.failure ??= `/proc/<pid>/stat of the PostgreSQL backends is not readable (another pid namespace or host?)`;
    }
    for (const [key, s] of this.seen) if (!present.has(key)) s.gone = true;
  }

  /** Takes the last sample and returns the CPU of the window, or why it could not be measured. */
  async stop(jobs: number): Promise<PgCpu | { error: string }> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.sample(false);
    await this.sql.end({ timeout: 1 }).catch(() => {});
    if (this.failure) return { error: this.failure };
    let ticks = 0;
    let exited = 0;
    for (const s of this.seen.values()) {
      ticks += s.last - s.base;
      if (s.gone) exited++;
    }
    const cpuMs = (ticks * 1000) / TICKS_PER_SEC;
    return {
      cpu_ms: cpuMs,
      ms_per_job: jobs > 0 ? round(cpuMs / jobs, 4) : null,
      backends: this.seen.size,
      exited_backends: exited,
      samples: this.samples,
      interval_ms: this.intervalMs,
    };
  }
}

/** The database name of a postgres:// URL. */
export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

export type PgCpuOutcome = PgCpu | { error: string };

/** "PG CPU x.xx ms/job" for a row's note, the median over its repetitions; null when none was measured. */
export function pgCpuNote(outcomes: ReadonlyArray<PgCpuOutcome | null | undefined>): string | null {
  const measured = outcomes.filter((o): o is PgCpu => !!o && !('error' in o));
  const mid = median(measured.map((o) => o.ms_per_job));
  if (mid !== null) {
    const exited = measured.reduce((a, o) => a + o.exited_backends, 0);
    return `PG CPU ${mid.toFixed(2)} ms/job${exited ? ` (${exited} backend(s) exited mid-run, last ≤${measured[0]!.interval_ms} ms of each not counted)` : ''}`;
  }
  const failed = outcomes.find((o): o is { error: string } => !!o && 'error' in o);
  return failed ? `PG CPU not measured: ${failed.error}` : null;
}
