import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { SpanRecord, SpanSink } from '../domain/trace-context.js';
import type { JobChange, JobRecord, RunKey, RunRecord, Store, StoreReads } from '../store/store.js';
import type { AttemptEvent, EngineEvents } from './engine-options.js';
import { attemptSpans, attemptTraceparent, runSpan, type EndedAttempt, type RunIdentity } from './trace-spans.js';

/**
 * Traces of runs and job attempts (README "Traces (OpenTelemetry)"), exported only when the process
 * was given a span sink (an OTLP endpoint is configured); otherwise nothing here exists. It listens to
 * what the engine announces anyway, as live-events.ts and the metrics do, and so costs the engine
 * nothing but the TRACEPARENT of each claim:
 *
 * - `attempt` events: an attempt ended by an operation of this process (complete, fail, a lease found
 *   expired or timed out) is exported here, with the times of the store's records (trace-spans.ts).
 *   Each such end is one store operation, in one process, so each attempt is exported once.
 * - `changed`: the durable changes this process made. A run they touch that has ended, and whose end
 *   was this process's operation, is exported here, with the attempts its cancel or a sibling's
 *   fail_fast stopped while they ran: those ends are written by the cancel, whoever made it, and read
 *   back once, with the run. The operation that ends a run's last job records both ends with its own
 *   clock, taken before it ran; so the run ended here when a job this process changed ended at the
 *   very time the run did, no later than this process announced that change (a job this process only
 *   queued, and another server ended, ended after that).
 *
 * What is heard is gathered for FLUSH_MS and read in one snapshot, so a burst of completions costs one
 * read. A store outage loses those spans (logged), never a claim or a report.
 */

const FLUSH_MS = 200;
/** Creation times of runs, by run: immutable, so a claim of a run's jobs reads it once. */
const MAX_KNOWN_RUNS = 10_000;
const MAX_EXPORTED_RUNS = 10_000;

export interface TracingContext {
  readonly store: Store;
  readonly events: EventEmitter<EngineEvents>;
  readonly sink: SpanSink;
  readonly log: Logger;
  readonly now: () => number;
}

const runKey = (r: RunKey): string => `${r.run_number}:${r.workflow_id}`;

interface Changed {
  run: RunKey;
  /** Job id → this process's clock when it announced its last change of the job. */
  jobs: Map<string, number>;
}

export class Tracing {
  private readonly created = new Map<string, number>();
  private readonly exportedRuns = new Set<string>();
  private attempts: EndedAttempt[] = [];
  /** Runs changed by this process since the last flush, with the jobs it changed and when it said so. */
  private changed = new Map<string, Changed>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly onAttempt = (e: AttemptEvent) => this.attemptEvent(e);
  private readonly onChanged = (changes: readonly JobChange[]) => this.changes(changes);

  constructor(private readonly ctx: TracingContext) {
    ctx.events.on('attempt', this.onAttempt);
    ctx.events.on('changed', this.onChanged);
  }

  /**
   * The TRACEPARENT of each claimed job (W3C, naming its attempt's span), in the order given; null
   * for a job whose run cannot be read (the claim goes out without one rather than not at all).
   */
  async traceparents(jobs: readonly JobRecord[]): Promise<Array<string | null>> {
    const missing = new Map<string, RunKey>();
    for (const j of jobs) if (!this.created.has(runKey(j))) missing.set(runKey(j), { workflow_id: j.workflow_id, run_number: j.run_number });
    if (missing.size > 0) {
      try {
        this.remember(await this.ctx.store.read((r) => r.getRuns([...missing.values()])));
      } catch (err) {
        this.ctx.log.warn({ err }, 'could not read the runs of claimed jobs; they go out without TRACEPARENT');
      }
    }
    return jobs.map((j) => {
      const created = this.created.get(runKey(j));
      return created === undefined ? null : attemptTraceparent({ workflow_id: j.workflow_id, run_number: j.run_number, created_at_ms: created }, j.job_id, j.attempt);
    });
  }

  /** Stops listening and exports what was heard so far. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ctx.events.off('attempt', this.onAttempt);
    this.ctx.events.off('changed', this.onChanged);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }

  private attemptEvent(e: AttemptEvent): void {
    const job = e.job;
    switch (e.kind) {
      case 'claimed':
        return;
      case 'completed':
        this.attempts.push({ ran: job, endedAtMs: job.finished_at_ms ?? this.ctx.now(), result: 'success', retried: false, error: null });
        break;
      case 'failed':
        this.attempts.push({ ran: e.ran, endedAtMs: e.at_ms, result: 'failure', retried: job.status === 'queued', error: job.error });
        break;
      case 'expired':
      case 'timed_out': {
        const retried = job.status === 'queued';
        const endedAtMs = (retried ? job.enqueued_at_ms : job.finished_at_ms) ?? this.ctx.now();
        this.attempts.push({ ran: e.ran, endedAtMs, result: e.kind, retried, error: job.error });
        break;
      }
    }
    this.schedule();
  }

  private changes(changes: readonly JobChange[]): void {
    const now = this.ctx.now();
    for (const c of changes) {
      const key = runKey(c);
      let entry = this.changed.get(key);
      if (!entry) this.changed.set(key, (entry = { run: { workflow_id: c.workflow_id, run_number: c.run_number }, jobs: new Map() }));
      entry.jobs.set(c.job_id, now);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, FLUSH_MS);
    this.timer.unref();
  }

  /** One flush at a time, in order, so close() waits for the one under way. */
  private flush(): Promise<void> {
    const attempts = this.attempts;
    const changed = this.changed;
    this.attempts = [];
    this.changed = new Map();
    if (attempts.length === 0 && changed.size === 0) return this.flushing;
    this.flushing = this.flushing.then(() =>
      this.export(attempts, changed).catch((err: unknown) => {
        this.ctx.log.warn({ err, attempts: attempts.length, runs: changed.size }, 'could not read what trace spans need; those spans are lost');
      }),
    );
    return this.flushing;
  }

  private async export(attempts: EndedAttempt[], changed: Map<string, Changed>): Promise<void> {
    const keys = new Map<string, RunKey>();
    for (const a of attempts) keys.set(runKey(a.ran), { workflow_id: a.ran.workflow_id, run_number: a.ran.run_number });
    for (const [key, c] of changed) if (!this.exportedRuns.has(key)) keys.set(key, c.run);
    const spans = await this.ctx.store.read(async (r) => {
      const runs = keys.size === 0 ? [] : await r.getRuns([...keys.values()]);
      this.remember(runs);
      const out: SpanRecord[] = [];
      for (const a of attempts) {
        const created = this.created.get(runKey(a.ran));
        if (created !== undefined) out.push(...attemptSpans({ workflow_id: a.ran.workflow_id, run_number: a.ran.run_number, created_at_ms: created }, a));
      }
      for (const run of runs) {
        const mine = changed.get(runKey(run));
        if (mine && (await this.endedHere(r, run, mine.jobs))) out.push(...(await this.runEnd(r, run)));
      }
      return out;
    });
    if (spans.length > 0) this.ctx.sink.export(spans);
  }

  /**
   * Whether the run ended by an operation of this process: a job this process changed ended at the
   * run's end time, and no later than this process announced its change. A run another server ended
   * is that server's to export.
   */
  private async endedHere(r: StoreReads, run: RunRecord, jobs: ReadonlyMap<string, number>): Promise<boolean> {
    const end = run.finished_at_ms;
    if (end === null || run.status === 'running' || run.status === 'queued' || this.exportedRuns.has(runKey(run))) return false;
    for (const [id, announcedAt] of jobs) {
      if (end > announcedAt) continue;
      const job = await r.getJob(run.workflow_id, run.run_number, id);
      if (job && job.finished_at_ms === end) return true;
    }
    return false;
  }

  /** The run's span and those of its attempts stopped by a cancel while they ran. */
  private async runEnd(r: StoreReads, run: RunRecord): Promise<SpanRecord[]> {
    const span = runSpan(run);
    if (!span) return [];
    this.exportedRuns.add(runKey(run));
    if (this.exportedRuns.size > MAX_EXPORTED_RUNS) this.exportedRuns.delete(this.exportedRuns.values().next().value!);
    const identity: RunIdentity = run;
    const stopped = (await r.getRunJobs(run.workflow_id, run.run_number)).filter((j) => j.status === 'cancelled' && j.started_at_ms !== null);
    return [
      span,
      ...stopped.flatMap((j) =>
        attemptSpans(identity, { ran: j, endedAtMs: j.finished_at_ms ?? run.finished_at_ms!, result: 'cancelled', retried: false, error: j.error }),
      ),
    ];
  }

  private remember(runs: readonly RunRecord[]): void {
    for (const run of runs) {
      if (this.created.has(runKey(run))) continue;
      this.created.set(runKey(run), run.created_at_ms);
      if (this.created.size > MAX_KNOWN_RUNS) this.created.delete(this.created.keys().next().value!);
    }
  }
}
