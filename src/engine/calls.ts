import type { Logger } from 'pino';
import { MAX_CALL_DEPTH } from '../domain/calls.js';
import { WeftError } from '../protocol/errors.js';
import type { JobChange, JobRecord, RunKey, StartRunOutcome, Store, StoreReads } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import type { RunEnd } from '../store/run-end-types.js';
import { childResult } from './call-ends.js';
import { resolveEnv } from './needs-values.js';
import { freshRun, type RunStart } from './run-start.js';
import { SingleFlight } from '../util/single-flight.js';

/** How many ready calls, and orphaned child runs, one read takes; a read that fills it is followed by another. */
const CALLS_PER_READ = 100;
/** How many workflows that call others a reaper pass learns of (for reacting to their changes at once). */
const CALLERS_PER_PASS = 10_000;
/** A definition saved between reading it and starting the child is rare; a few tries settle it. */
const START_TRIES = 5;

/** What the calls need of the engine: its store, clock and log, and what it does after a start or a change. */
export interface CallsContext {
  readonly store: Store;
  readonly now: () => number;
  readonly log: Logger;
  /** Checks that every secret the run's jobs name is set (Secrets.checkSet); throws a WeftError otherwise. */
  checkSecrets(workflowId: string, jobs: RunStart['jobs']): Promise<void>;
  /** A run started: its label sets, job groups and changes told, as after any start. */
  runStarted(workflowId: string, start: RunStart, outcome: StartRunOutcome & { kind: 'started' }): Promise<void>;
  /** A run was queued behind its workflow's slots or its group, as after any queued start. */
  runQueued(workflowId: string, start: RunStart, outcome: StartRunOutcome & { kind: 'queued' }): Promise<void>;
  /** Durable changes, told to listeners, waiting claims, other servers and queued runs. */
  changed(changes: readonly JobChange[]): Promise<void>;
  /** A run was cancelled here: its changes told, the slots it freed used. */
  cancelled(workflowId: string, runNumber: number): Promise<void>;
  /** The first workflow that calls others became known: other servers' changes matter here from now on. */
  watching?(): void;
}

/**
 * Workflows calling workflows (README "Workflows calling workflows"; docs/architecture.md "Workflows
 * calling workflows"). No worker claims a job that calls a workflow; this starts its child run once it
 * is queued (after the change that queued it, at once on this server; on every reaper pass whoever
 * queued it), hands the child's end back to it from the run-end outbox (consumer `call`), and cancels
 * child runs whose calling job no longer runs on them. The store makes each effect happen once, so
 * several servers doing the same at the same moment change nothing twice.
 */
export class Calls {
  /** Workflows known to call others: a change of one of their runs may have queued a call. */
  private readonly callers = new Set<string>();
  private readonly passes = new SingleFlight(() => this.startRound(), () => !this.stopped);
  /** The next time a call waiting out its retry's backoff becomes ready (one timer for the earliest). */
  private timer: { at: number; handle: NodeJS.Timeout } | null = null;
  private stopped = false;

  constructor(private readonly ctx: CallsContext) {}

  /** A definition just saved or run here: if it calls others, its changes are watched for calls to start. */
  noteDefinition(id: string, def: { jobs: ReadonlyArray<{ uses?: string }> }): void {
    if (def.jobs.some((j) => j.uses !== undefined)) this.addCaller(id);
  }

  /** Whether any workflow is known to call others (its changes, from any server, are looked at). */
  get watching(): boolean {
    return this.callers.size > 0;
  }

  private addCaller(id: string): void {
    if (this.callers.has(id)) return;
    this.callers.add(id);
    if (this.callers.size === 1) this.ctx.watching?.();
  }

  /** Durable changes (this server's or another's): starts the calls they may have queued, soon. */
  afterChanges(changes: readonly JobChange[]): void {
    if (this.callers.size === 0 || this.stopped) return;
    if (changes.some((c) => this.callers.has(c.workflow_id))) void this.startReady().catch(() => undefined);
  }

  /** The reaper's pass: every ready call whoever queued it, and every orphaned child run. */
  async pass(): Promise<void> {
    const callers = await this.ctx.store.read((r) => r.callingWorkflows(CALLERS_PER_PASS));
    for (const id of callers) this.addCaller(id);
    await this.startReady();
    await this.cancelOrphans();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer.handle);
    this.timer = null;
  }

  /**
   * Starts the child of every call ready now; resolves once those ready when it was called are
   * started (or failed). One pass runs at a time; a call meanwhile makes it run once more.
   */
  startReady(): Promise<void> {
    return this.passes.run();
  }

  private async startRound(): Promise<void> {
    for (;;) {
      const ready = await this.ctx.store.read((r) => r.queuedCalls(this.ctx.now(), CALLS_PER_READ));
      for (const job of ready) {
        try {
          await this.start(job);
        } catch (err) {
          // Left queued: the next change or reaper pass tries again.
          if (err instanceof StoreUnavailableError) throw err;
          this.ctx.log.error({ err, workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id }, 'starting a called workflow failed; retried on the next pass');
        }
      }
      if (ready.length < CALLS_PER_READ) break;
    }
  }

  /**
   * Starts the run `job` calls for its current attempt, exactly once across servers (the store moves
   * the job from queued to running in the start's own transaction). A call that cannot start (the
   * workflow is gone, its inputs do not fit, a chain too deep) fails the job for good; a workflow whose
   * every slot is taken with `when_full: reject` fails the attempt, retried by the job's retries.
   */
  private async start(job: JobRecord): Promise<void> {
    const call = job.call!;
    for (let tries = 0; tries < START_TRIES; tries++) {
      const now = this.ctx.now();
      const { wf, depth } = await this.ctx.store.read(async (r) => ({ wf: await r.getWorkflow(call.uses), depth: await depthOf(r, job) }));
      if (!wf) return this.fail(job, `called workflow "${call.uses}" does not exist`, false);
      if (depth > MAX_CALL_DEPTH) {
        return this.fail(job, `calling "${call.uses}" would nest calls ${depth} deep; at most ${MAX_CALL_DEPTH} nested calls are allowed`, false);
      }
      this.noteDefinition(wf.id, wf.definition);
      let start: RunStart;
      try {
        // `with:` values: inputs and matrix values were filled in when the caller's run was planned;
        // its needs' outputs and results are on its row now that it is queued.
        const inputs = resolveEnv({ ...job, env: call.with });
        start = { ...freshRun(wf, inputs, now), trigger: 'call' };
        await this.ctx.checkSecrets(wf.id, start.jobs.filter((j) => j.status !== 'success'));
      } catch (err) {
        if (!(err instanceof WeftError)) throw err;
        return this.fail(job, `cannot start called workflow "${call.uses}": ${err.message}`, false);
      }
      const outcome = await this.ctx.store.startChildRun({
        workflow_id: wf.id,
        expected_hash: wf.hash,
        jobs: start.jobs,
        label_sets: start.labelSets,
        now_ms: now,
        inputs: start.inputs,
        rerun_of: null,
        group: start.group,
        trigger: 'call',
        parent: { workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id, attempt: job.attempt },
      });
      const at = { workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id, calls: wf.id };
      switch (outcome.kind) {
        case 'moved':
          // Another server started it, or the job was cancelled meanwhile.
          return;
        case 'stale':
          continue;
        case 'not_found':
          return this.fail(job, `called workflow "${call.uses}" does not exist`, false);
        case 'active': {
          const runs = outcome.run_numbers.map((n) => `#${n}`).join(', ');
          return this.fail(job, `called workflow "${call.uses}" already has as many active runs as its concurrency allows (${runs}); its when_full is reject`, true);
        }
        case 'started':
          this.ctx.log.info({ ...at, child_run: outcome.run.run_number }, 'called workflow started');
          await this.ctx.runStarted(wf.id, start, outcome);
          return;
        case 'queued':
          this.ctx.log.info({ ...at, child_run: outcome.run.run_number }, 'called workflow queued behind its concurrency');
          await this.ctx.changed([{ workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id }]);
          await this.ctx.runQueued(wf.id, start, outcome);
          return;
      }
    }
    throw new Error(`workflow "${call.uses}" kept changing while a run of it was being started`);
  }

  /** Ends the queued attempt of `job` that could not start its child. */
  private async fail(job: JobRecord, error: string, retryable: boolean): Promise<void> {
    const outcome = await this.ctx.store.settleCall({
      workflow_id: job.workflow_id,
      run_number: job.run_number,
      job_id: job.job_id,
      expect: { attempt: job.attempt },
      result: { kind: 'failed', error, retryable },
      now_ms: this.ctx.now(),
    });
    if (outcome.kind !== 'settled') return;
    this.ctx.log.warn({ workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id, error, state: outcome.job.status }, 'a call could not start its workflow');
    await this.settled(outcome.job, outcome.changes);
  }

  /** After a calling job's attempt ended: its changes told, a retry's timer set, siblings fail_fast cancelled swept. */
  private async settled(job: JobRecord, changes: readonly JobChange[]): Promise<void> {
    await this.ctx.changed(changes);
    if (job.status === 'queued') this.wakeAt(job.ready_at_ms);
    if (job.status === 'failed') await this.sweep();
  }

  /**
   * cancelOrphans after a change this server made, which stands whatever happens here: a failure is
   * logged, and the reaper's next pass (any server's) sweeps again.
   */
  async sweep(): Promise<void> {
    try {
      await this.cancelOrphans();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) this.ctx.log.error({ err }, 'cancelling called runs whose caller moved on failed; the reaper tries again');
    }
  }

  private wakeAt(atMs: number): void {
    if (this.stopped) return;
    if (this.timer && this.timer.at <= atMs) return;
    if (this.timer) clearTimeout(this.timer.handle);
    const handle = setTimeout(() => {
      this.timer = null;
      void this.startReady().catch(() => undefined);
    }, Math.max(0, atMs - this.ctx.now()));
    handle.unref();
    this.timer = { at: atMs, handle };
  }

  /**
   * The run-end outbox's `call` consumer (docs/architecture.md "Run ends"): each ended run a call
   * started ends its calling job's attempt, guarded by the job still running on that very run, so a
   * second delivery changes nothing.
   */
  async ended(ends: readonly RunEnd[]): Promise<void> {
    const keys: RunKey[] = ends.map((e) => ({ workflow_id: e.workflow_id, run_number: e.run_number }));
    const children = (await this.ctx.store.read((r) => r.getRuns(keys))).filter((r) => r.parent);
    for (const child of children) {
      const end = ends.find((e) => e.workflow_id === child.workflow_id && e.run_number === child.run_number)!;
      const result = await this.ctx.store.read((r) => childResult(r, child, end.state));
      const parent = child.parent!;
      const outcome = await this.ctx.store.settleCall({ ...parent, expect: { child_run: child.run_number }, result, now_ms: this.ctx.now() });
      if (outcome.kind !== 'settled') continue;
      this.ctx.log.info(
        { workflow_id: parent.workflow_id, run_number: parent.run_number, job_id: parent.job_id, calls: child.workflow_id, child_run: child.run_number, state: outcome.job.status },
        'a called workflow ended; its calling job goes on',
      );
      await this.settled(outcome.job, outcome.changes);
    }
  }

  /**
   * Cancels every child run still active whose calling job no longer runs on it (a cancel of the
   * caller's run, fail_fast, a run deleted), then their own children in turn: each round finds the
   * runs the previous one orphaned, at most as many rounds as calls nest.
   */
  async cancelOrphans(): Promise<void> {
    for (let round = 0; round <= MAX_CALL_DEPTH + 1; round++) {
      const orphans = await this.ctx.store.read((r) => r.orphanedChildRuns(CALLS_PER_READ));
      if (orphans.length === 0) return;
      for (const run of orphans) {
        const outcome = await this.ctx.store.cancelRun(run.workflow_id, this.ctx.now(), run.run_number);
        if (outcome.kind !== 'cancelled') continue;
        this.ctx.log.info({ workflow_id: run.workflow_id, run_number: run.run_number, caller: run.parent }, 'called run cancelled: its calling job no longer runs on it');
        await this.ctx.changed(outcome.changes);
        await this.ctx.cancelled(run.workflow_id, run.run_number);
      }
    }
  }
}

/** How deeply the child of `job` would be nested: 1 + the calls above the job's own run. */
async function depthOf(r: StoreReads, job: JobRecord): Promise<number> {
  let depth = 1;
  let run = await r.getRun(job.workflow_id, job.run_number);
  while (run?.parent && depth <= MAX_CALL_DEPTH) {
    depth++;
    run = await r.getRun(run.parent.workflow_id, run.parent.run_number);
  }
  return depth;
}
