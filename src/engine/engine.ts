import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { normalizeLabels } from '../domain/labels.js';
import { DEFAULT_SCHEDULE_GRACE_MS } from '../domain/schedule.js';
import type { WorkflowDefinition } from '../domain/model.js';
import type {
  ClaimedJob,
  ClaimResult,
  IncomingLogChunk,
  LeaseView,
  StatusDocument,
  WorkerView,
} from '../protocol/wire.js';
import type { JobChange, StoreReads, WorkflowRecord } from '../store/store.js';
import { OutageWarnings, readThroughOutage } from './outage.js';
import { Peers } from './peers.js';
import type { ClaimWait, EngineEvents, EngineOptions, LeaseVisibility, WorkerClaim } from './engine-options.js';
import { DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT } from '../domain/log-budget.js';
import { Claims } from './claims.js';
import type { ClaimTry } from './claim-waiters.js';
import { LabelSetCache } from './label-cache.js';
import { LeaseCalls } from './lease-calls.js';
import type { RerunScope } from './run-plan.js';
import type { Begun, StartedFrom } from './run-start.js';
import { DEFAULT_WORKER_RETAIN_MS } from './retention.js';
import { Housekeeping } from './housekeeping.js';
import { Artifacts } from './artifacts.js';
import { workerViews } from './views.js';
import { EngineReads, workflowNotFound } from './reads.js';
import { QueuedRuns } from './queued-runs.js';
import { Secrets } from './secrets.js';
import { Approvals } from './approvals.js';
import { JobGroups } from './job-groups.js';
import { Triggers, type StartFrom } from './triggers.js';
import { followRuns } from './follow.js';
import { Notifications } from './notifications.js';
import { RunEnds } from './run-ends.js';
import { Calls } from './calls.js';
import { Tracing } from './tracing.js';
import { RunStarts } from './run-starts.js';
import { ClaimAnswers } from './claim-answers.js';
import { WorkflowSaves } from './workflow-saves.js';

export type { Begun, ClaimedJob, ClaimResult, IncomingLogChunk, JobChange, LeaseView };

export type { AttemptEvent, ClaimWait, EngineEvents, EngineOptions, LeaseVisibility, WorkerClaim } from './engine-options.js';

/**
 * Orchestration: runs, claims, leases, retries, cancellation and the reaper. Each state change is one
 * store operation (docs/architecture.md); the engine turns outcomes into answers and events, and
 * never sees SQL or a transaction.
 */
export class Engine extends EngineReads {
  readonly events = new EventEmitter<EngineEvents>();
  private readonly log: Logger;
  private readonly labelSets: LabelSetCache;
  private readonly claims: Claims;
  private readonly peers: Peers;
  private readonly outage: OutageWarnings;
  private readonly queued: QueuedRuns;
  /** Live streams on this server that follow changes as they happen (followChanges). */
  private followers = 0;

  /** The calls a worker makes on a lease it holds: heartbeat, complete, fail, logs. */
  readonly leases: LeaseCalls;
  /** Artifacts (README "Artifacts"): uploads, listings, downloads. */
  readonly artifacts: Artifacts;
  /** The reaper's passes (src/runtime/reaper.ts): lost leases, schedules, retention, workers, files. */
  readonly housekeeping: Housekeeping;
  /** Secrets (README "Secrets"): set, listed, removed; opened for claims, hidden in what comes back. */
  readonly secrets: Secrets;
  /** Approve and reject of jobs awaiting approval (README "Approvals"). */
  readonly approvals: Approvals;
  /** Arrivals in concurrency groups of jobs, settled (README "Concurrency groups"). */
  readonly jobGroups: JobGroups;
  /** Runs started from outside: webhooks, named events (README "Triggers and notifications"). */
  readonly triggers: Triggers;
  /** Webhook notifications of run ends, from the store's outbox (README "Notifications"). */
  readonly notifications: Notifications;
  /** What acts on ended runs, from the run-end outbox (docs/architecture.md "Run ends"). */
  readonly runEnds: RunEnds;
  /** Workflows calling workflows (README "Workflows calling workflows"): child runs started, ended, cancelled. */
  readonly calls: Calls;
  /** Spans of runs and attempts (README "Traces (OpenTelemetry)"); null unless a span sink was given. */
  readonly tracing: Tracing | null;
  /** Starting runs: by hand, re-runs, from outside, a called workflow's (README "How a run works"). */
  private readonly starts: RunStarts;
  private readonly answers: ClaimAnswers;
  private readonly saves: WorkflowSaves;

  constructor(opts: EngineOptions) {
    super(opts.store, opts.now ?? Date.now, opts.workerOfflineAfterMs ?? 60_000);
    this.log = opts.logger;
    this.outage = new OutageWarnings(opts.logger);
    this.queued = new QueuedRuns(opts.store, this.now, (changes) => this.announce(changes), (id) => this.events.emit('workflow', id), opts.logger);
    this.labelSets = new LabelSetCache(opts.store);
    this.jobGroups = new JobGroups(opts.store, this.now, (changes) => this.announce(changes), opts.logger, () => this.peers.wanted());
    this.runEnds = new RunEnds(opts.store, opts.logger);
    this.calls = new Calls({
      store: opts.store,
      now: this.now,
      log: opts.logger,
      checkSecrets: (id, jobs) => this.secrets.checkSet(id, jobs.map((j) => ({ id: j.job_id, env: j.env }))),
      runStarted: (id, start, outcome) => this.starts.started(id, start, outcome),
      runQueued: (id, start, outcome) => this.starts.queued(id, start, outcome),
      changed: async (changes) => {
        this.announce(changes);
        await this.queued.after(changes);
      },
      cancelled: async (id) => {
        this.events.emit('workflow', id);
      },
      watching: () => this.peers.wanted(),
    });
    // A called workflow's run that ended hands its end to its calling job (docs/architecture.md "Run ends").
    this.runEnds.handle('call', (ends) => this.calls.ended(ends));
    this.secrets = new Secrets(opts.store, this.now, opts.secretKey ?? null, opts.logger);
    this.starts = new RunStarts({
      store: opts.store,
      now: this.now,
      log: opts.logger,
      requireWorkflow: (r, id) => this.requireWorkflow(r, id),
      checkSecrets: (id, jobs) => this.secrets.checkSet(id, jobs.map((j) => ({ id: j.job_id, env: j.env }))),
      noteDefinition: (id, def) => this.calls.noteDefinition(id, def),
      labelSetsAdded: (sets) => {
        this.labelSets.add(sets);
        this.peers.sendLabelSets();
      },
      workflowChanged: (id) => this.events.emit('workflow', id),
      wake: () => this.claims.wake(),
      announce: (changes) => this.announce(changes),
      queued: this.queued,
      jobGroups: this.jobGroups,
    });
    const startFrom: StartFrom = (id, from, check) => this.startFrom(id, from, check);
    this.triggers = new Triggers({ store: opts.store, secrets: this.secrets, log: opts.logger, start: startFrom });
    // README "Runs that follow runs": what a followed run's end starts, once per end, from any server.
    this.runEnds.handle('follow', followRuns({ store: opts.store, log: opts.logger, start: startFrom }));
    this.notifications = new Notifications(opts.store, this.secrets, this.now, opts.logger, opts.notify, this.outage);
    // A run's end becomes its notifications, once however often it is handed over (README "Notifications").
    this.runEnds.handle('notify', async (ends) => {
      await this.notifications.record(ends);
    });
    this.approvals = new Approvals({ store: opts.store, now: this.now, log: opts.logger, queued: this.queued, announce: (changes) => this.announce(changes) });
    this.leases = new LeaseCalls({
      secrets: this.secrets,
      store: opts.store,
      now: this.now,
      log: opts.logger,
      queued: this.queued,
      maxLogBytesPerAttempt: opts.maxLogBytesPerAttempt ?? DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT,
      announce: (changes) => this.announce(changes),
      attempt: (event) => this.events.emit('attempt', event),
      logsStored: (job) => {
        this.events.emit('logs', job);
        this.peers.sendLogs(job);
      },
      retryAt: (atMs) => {
        this.claims.wakeAt(atMs);
        this.peers.sendWakeAt(atMs);
      },
    });
    this.artifacts = new Artifacts(opts.store, this.now, (id, outcome, holder) => this.leases.refused(id, outcome, holder), opts.maxArtifactBytes, opts.blobs);
    this.answers = new ClaimAnswers({
      secrets: this.secrets,
      tracing: () => this.tracing,
      leases: this.leases,
      artifacts: this.artifacts,
      triggers: this.triggers,
      release: (results) => this.release(results),
    });
    this.housekeeping = new Housekeeping({
      store: opts.store,
      now: this.now,
      log: opts.logger,
      outage: this.outage,
      blobs: this.artifacts.blobs,
      queued: this.queued,
      scheduleGraceMs: opts.scheduleGraceMs ?? DEFAULT_SCHEDULE_GRACE_MS,
      workerRetainMs: opts.workerRetainMs ?? DEFAULT_WORKER_RETAIN_MS,
      announce: (changes) => this.announce(changes),
      jobGroups: this.jobGroups,
      runEnds: this.runEnds,
      calls: this.calls,
      attemptEnded: (event) => this.events.emit('attempt', event),
      scheduledRunStarted: (outcome, labelSets) => {
        this.labelSets.add(labelSets);
        this.peers.sendLabelSets();
        this.announce(outcome.changes);
        // Its jobs in concurrency groups arrive now (README "Concurrency groups"); schedules are rare.
        void this.jobGroups.settle().catch(() => undefined);
      },
      scheduledRunQueued: (id, group) => {
        this.events.emit('workflow', id);
        void this.queued.afterQueued(id, group.replaced !== undefined, group);
      },
    });
    this.claims = new Claims({
      store: opts.store,
      now: this.now,
      log: opts.logger,
      outage: this.outage,
      labelSets: this.labelSets,
      answers: () => this.answers,
      claimed: (claimed) => {
        this.emitJobs(claimed.map((c) => c.job));
        for (const c of claimed) this.events.emit('attempt', { kind: 'claimed', job: c.job });
      },
      announce: (changes) => this.announce(changes),
      waiting: () => this.peers.wanted(),
      claimSweepMs: opts.claimSweepMs,
    });
    this.saves = new WorkflowSaves({
      store: opts.store,
      now: this.now,
      log: opts.logger,
      calls: this.calls,
      changed: (id) => this.events.emit('workflow', id),
      status: (id) => this.status(id),
      collectBlobs: () => this.housekeeping.collectBlobs(true),
    });
    // Every SSE follower listens here; the default cap of 10 would warn under normal use.
    this.events.setMaxListeners(0);
    this.tracing = opts.traceSink ? new Tracing({ store: opts.store, events: this.events, sink: opts.traceSink, log: opts.logger, now: this.now }) : null;
    this.peers = new Peers(opts.store, {
      jobs: (changes) => {
        this.emitJobs(changes);
        this.jobGroups.afterChanges(changes);
        this.runEnds.afterChanges();
        this.calls.afterChanges(changes);
        this.claims.wake();
      },
      logs: (c) => this.events.emit('logs', c),
      wakeAt: (atMs) => this.claims.wakeAt(atMs),
      labelSets: () => this.labelSets.invalidate(),
      resync: () => {
        this.labelSets.invalidate();
        this.claims.wake();
        this.events.emit('resync');
      },
      // What other servers' job and log changes feed here (the handlers above); without any of it
      // they need not send them.
      interested: () => this.claims.waiting > 0 || this.followers > 0 || this.jobGroups.watching || this.calls.watching,
    }, opts.logger);
  }

  /**
   * Starts hearing what other servers on the same database change (docs/architecture.md "Events
   * between servers"); a no-op on a store that has no such channel.
   */
  connectPeers(): Promise<void> {
    return this.peers.start();
  }

  // ---------------------------------------------------------------- workflows

  /** Creates a workflow; 409 when the id is taken. */
  createWorkflow(def: WorkflowDefinition, hash: string): Promise<StatusDocument> {
    return this.saves.create(def, hash);
  }

  /** See WorkflowSaves.save. */
  saveWorkflow(def: WorkflowDefinition, hash: string, source: 'file' | 'api'): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; status: StatusDocument }> {
    return this.saves.save(def, hash, source);
  }

  /** See WorkflowSaves.delete. */
  deleteWorkflow(id: string): Promise<void> {
    return this.saves.delete(id);
  }

  // ---------------------------------------------------------------- runs

  /**
   * Starts the next run: numbered from 1, one active run per workflow (409 otherwise). `inputs` are
   * checked against the definition's declared inputs (400 naming the unknown and missing ones).
   */
  async run(id: string, opts: { inputs?: Readonly<Record<string, string>>; priority?: number } = {}): Promise<StatusDocument> {
    await this.start(id, opts);
    return this.status(id);
  }

  /** As `run`, answering the run begun instead of its status document (the API reads that with statusParts). */
  start(id: string, opts: { inputs?: Readonly<Record<string, string>>; priority?: number } = {}): Promise<Begun> {
    return this.starts.fresh(id, opts);
  }

  /**
   * Starts the next run as a re-run of run `runNumber` (README "Re-running a run"): the jobs `scope`
   * keeps start as `success` with that run's outputs, the others run again.
   */
  async rerun(id: string, runNumber: number, scope: RerunScope, opts: { priority?: number } = {}): Promise<StatusDocument> {
    await this.starts.rerun(id, runNumber, scope, opts);
    return this.status(id);
  }

  /** Starts a run of `id` from outside (README "Triggers and notifications"); see RunStarts.from. */
  startFrom(id: string, from: StartedFrom, check?: (wf: WorkflowRecord) => void): Promise<Begun> {
    return this.starts.from(id, from, check);
  }

  /**
   * Cancels run `runNumber`, or every active run (running and queued): their pending, queued and running
   * jobs. A run that is not active is left as it is (still 202 at the API, per docs/api.md); a run the
   * workflow does not have is a 404. Queued runs a cancel frees a slot for start.
   */
  async cancel(id: string, runNumber?: number): Promise<{ cancelled: string[]; cancelled_runs: number[]; status: StatusDocument }> {
    if (runNumber !== undefined) await this.runStatus(id, runNumber);
    const outcome = await this.store.cancelRun(id, this.now(), runNumber);
    if (outcome.kind === 'not_found') throw workflowNotFound(id);
    const cancelled = outcome.kind === 'cancelled' ? outcome.jobs : [];
    const runs = outcome.kind === 'cancelled' ? outcome.runs : [];
    if (outcome.kind === 'cancelled') {
      this.announce(outcome.changes);
      this.events.emit('workflow', id);
      this.log.info({ workflow_id: id, runs, jobs: cancelled }, runs.length > 1 ? 'runs cancelled' : 'run cancelled');
      await this.queued.after(outcome.changes);
      // Its calls' runs, and theirs in turn (README "Workflows calling workflows").
      await this.calls.sweep();
    }
    return { cancelled, cancelled_runs: runs, status: await this.status(id) };
  }

  // ---------------------------------------------------------------- workers

  /** `sees`: whose lease ids the answer may show (another token may have used this worker id). */
  async registerWorker(workerId: string, labels: string[], sees?: LeaseVisibility): Promise<WorkerView> {
    const now = this.now();
    const worker = await this.store.registerWorker(workerId, normalizeLabels(labels), now);
    const leases = await this.store.read((r) => r.activeLeases());
    return workerViews([worker], leases.filter((l) => l.worker_id === workerId), now, this.offlineAfterMs, sees)[0]!;
  }

  // ---------------------------------------------------------------- worker protocol

  /**
   * Atomically hands the first claimable job that fits the worker's labels to it (highest priority,
   * oldest within it: README "Priorities"), or null.
   */
  async claim(req: WorkerClaim, wait: ClaimWait = {}): Promise<ClaimResult | null> {
    return (await this.claimMany(req, 1, wait))[0] ?? null;
  }

  /** See Claims.claimMany. */
  claimMany(req: WorkerClaim, max: number, wait: ClaimWait = {}): Promise<ClaimResult[]> {
    return this.claims.claimMany(req, max, wait);
  }

  /** See Claims.firstPick. */
  claimFirstPick(): (tried?: ClaimTry | null) => void {
    return this.claims.firstPick();
  }

  /** See Claims.release. */
  release(claims: readonly ClaimResult[]): Promise<void> {
    return this.claims.release(claims);
  }

  /**
   * Whether a report-batch's claim goes to the store together with its reports (one commit holds
   * them all) or after them (so that it sees the jobs they enqueue): Store.writesShareCommits.
   */
  get claimsWithReports(): boolean {
    return this.store.writesShareCommits;
  }

  /** How many claims are waiting for a job right now. */
  get waitingClaims(): number {
    return this.claims.waiting;
  }

  /** Ends every waiting claim with nothing (graceful shutdown). */
  close(): void {
    this.claims.close();
    this.runEnds.stop();
    this.calls.stop();
  }

  /** Sends what is still gathered for other servers and stops listening to them. */
  disconnectPeers(): Promise<void> {
    return this.peers.close();
  }

  /**
   * A live stream (log follower, dashboard events) starts following changes as they happen: other
   * servers are asked to send theirs (peers.ts) until every such stream has called the function
   * this returns.
   */
  followChanges(): () => void {
    this.followers++;
    this.peers.wanted();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.followers--;
    };
  }

  // ---------------------------------------------------------------- logs

  /**
   * Read access for log followers, which poll between events. A follower rides out a short database
   * outage (a restart) here, looking again with backoff, rather than ending its stream at the first
   * failed look; a longer outage ends the stream (outage.ts), and clients reconnect.
   */
  readStore<T>(fn: (r: StoreReads) => Promise<T>): Promise<T> {
    return readThroughOutage(this.store, fn, (err) => this.outage.warn('log stream', err));
  }

  /** Hears how long each of the store's durable writes took (README "Metrics"). */
  onStoreCommit(observer: (seconds: number) => void): void {
    this.store.onCommit(observer);
  }

  // ---------------------------------------------------------------- internals

  /** Tells listeners about durable changes, and waiting claims that something may be claimable now. */
  private announce(changes: readonly JobChange[]): void {
    if (changes.length === 0) return;
    this.events.emit('changed', changes);
    this.emitJobs(changes);
    this.claims.wake();
    this.peers.sendJobs(changes);
    this.jobGroups.afterChanges(changes);
    this.runEnds.afterChanges();
    this.calls.afterChanges(changes);
  }

  private emitJobs(changes: readonly JobChange[]): void {
    for (const c of changes) this.events.emit('job', { workflow_id: c.workflow_id, run_number: c.run_number, job_id: c.job_id });
  }
}
