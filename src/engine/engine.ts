import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { backoffToWire, retryDelayMs } from '../domain/backoff.js';
import { dependentsOf, newlyReady, type DagNode } from '../domain/dag.js';
import { settledLeaseCode, WeftError, type ErrorCode } from '../protocol/errors.js';
import { isSubset, labelKey, normalizeLabels } from '../domain/labels.js';
import { DEFAULT_LEASE_TTL_SECS, isLeaseExpired, leaseExpiresAt } from '../domain/lease.js';
import { deriveRunState } from '../domain/run-state.js';
import type { JobState, Outputs, WorkflowDefinition } from '../domain/types.js';
import { isTerminal } from '../domain/types.js';
import type { JobRecord, LeaseRecord, LogChunkRecord, NewJob, Store, StoreOps, WorkflowRecord } from '../store/store.js';
import type {
  ClaimedJob,
  ClaimResult,
  CompleteResponse,
  FailResponse,
  HeartbeatResponse,
  IncomingLogChunk,
  LeaseView,
  LogChunkView,
  StatusDocument,
  WorkerView,
} from '../protocol/types.js';
import { logChunkView, statusDocument, workerViews } from './views.js';

export type { ClaimedJob, ClaimResult, IncomingLogChunk, LeaseView };

/** What changed, announced after the transaction that changed it has committed. */
export interface JobChange {
  workflow_id: string;
  run_number: number;
  job_id: string;
}

export interface EngineEvents {
  job: [JobChange];
  logs: [JobChange];
}

export interface EngineOptions {
  store: Store;
  logger: Logger;
  now?: () => number;
  /** A worker unseen for longer than this is shown `offline`. */
  workerOfflineAfterMs?: number;
}

type LeaseCheck =
  | { kind: 'live'; lease: LeaseRecord; job: JobRecord }
  | { kind: 'cancelled'; lease: LeaseRecord; job: JobRecord }
  /** The lease or the job's timeout ran out just now; the failure has been applied. */
  | { kind: 'lost'; code: ErrorCode; reason: string };

/** Collects the jobs a transaction touched, to announce once it commits. */
class Changes {
  readonly jobs: JobChange[] = [];
  readonly logs: JobChange[] = [];
  job(j: { workflow_id: string; run_number: number; job_id: string }): void {
    this.jobs.push({ workflow_id: j.workflow_id, run_number: j.run_number, job_id: j.job_id });
  }
}

const REAP_BATCH = 500;

/**
 * Orchestration: runs, claims, leases, retries, cancellation and the reaper. Every state change is
 * one store transaction; rules that need no I/O live in src/domain.
 */
export class Engine {
  readonly events = new EventEmitter<EngineEvents>();
  private readonly store: Store;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly offlineAfterMs: number;

  constructor(opts: EngineOptions) {
    this.store = opts.store;
    this.log = opts.logger;
    this.now = opts.now ?? Date.now;
    this.offlineAfterMs = opts.workerOfflineAfterMs ?? 60_000;
    // Every SSE follower listens here; the default cap of 10 would warn under normal use.
    this.events.setMaxListeners(0);
  }

  // ---------------------------------------------------------------- workflows

  /** Creates a workflow; 409 when the id is taken. */
  async createWorkflow(def: WorkflowDefinition, hash: string): Promise<StatusDocument> {
    return this.store.tx(async (ops) => {
      if (await ops.getWorkflow(def.id)) {
        throw new WeftError('workflow_exists', `workflow "${def.id}" already exists; use PUT /api/workflows/${def.id} to update it`);
      }
      const rec = this.newWorkflowRecord(def, hash, 'api');
      await ops.insertWorkflow(rec);
      return statusDocument(rec, null, null);
    });
  }

  /**
   * Creates or updates a workflow in place (run history stays). Returns what happened so a file
   * loader can log it and PUT can answer 201 or 200.
   */
  async saveWorkflow(
    def: WorkflowDefinition,
    hash: string,
    source: 'file' | 'api',
  ): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; status: StatusDocument }> {
    return this.store.tx(async (ops) => {
      const existing = await ops.getWorkflow(def.id);
      if (!existing) {
        const rec = this.newWorkflowRecord(def, hash, source);
        await ops.insertWorkflow(rec);
        return { outcome: 'created' as const, status: statusDocument(rec, null, null) };
      }
      let outcome: 'updated' | 'unchanged' = 'unchanged';
      if (existing.hash !== hash || existing.source !== source) {
        await ops.updateWorkflowDefinition(def.id, def, hash, source, this.now());
        outcome = 'updated';
      }
      return { outcome, status: await this.statusIn(ops, def.id) };
    });
  }

  /**
   * A page of workflows, each as its status document. The page's runs and jobs come in one query each,
   * whatever the page size, rather than one status read per item.
   */
  async listWorkflows(q: { limit: number; offset: number; status?: JobState }): Promise<StatusDocument[]> {
    return this.store.read(async (ops) => {
      const workflows = await ops.listWorkflows({ limit: q.limit, offset: q.offset, jobStatus: q.status });
      const keys = workflows.filter((w) => w.latest_run > 0).map((w) => ({ workflow_id: w.id, run_number: w.latest_run }));
      if (keys.length === 0) return workflows.map((w) => statusDocument(w, null, null));
      const runs = new Map((await ops.getRuns(keys)).map((r) => [r.workflow_id, r]));
      const jobs = new Map<string, JobRecord[]>();
      for (const j of await ops.getJobsOfRuns(keys)) {
        const list = jobs.get(j.workflow_id);
        if (list) list.push(j);
        else jobs.set(j.workflow_id, [j]);
      }
      return workflows.map((w) => statusDocument(w, runs.get(w.id) ?? null, jobs.get(w.id) ?? []));
    });
  }

  async status(id: string): Promise<StatusDocument> {
    return this.store.read((ops) => this.statusIn(ops, id));
  }

  /** Starts a new run and enqueues its root jobs; 409 while the previous run is still active. */
  async run(id: string): Promise<StatusDocument> {
    const changes = new Changes();
    const doc = await this.store.tx(async (ops) => {
      const wf = await this.requireWorkflow(ops, id);
      if (wf.latest_run > 0) {
        const last = await ops.getRun(id, wf.latest_run);
        if (last && last.status === 'running') {
          throw new WeftError('run_active',
            `workflow "${id}" already has an active run (#${last.run_number}); cancel it or wait for it to finish`,
            { run_number: last.run_number },
          );
        }
      }
      const now = this.now();
      const runNumber = wf.latest_run + 1;
      await ops.insertRun({ workflow_id: id, run_number: runNumber, status: 'running', created_at_ms: now, finished_at_ms: null });
      const def = wf.definition;
      const jobs: NewJob[] = [];
      const dependents = dependentsOf(def.jobs.map((s) => ({ job_id: s.id, needs: s.needs })));
      const seenKeys = new Set<string>();
      for (const spec of def.jobs) {
        const labels = normalizeLabels(spec.labels);
        const key = labelKey(labels);
        if (!seenKeys.has(key)) {
          seenKeys.add(key);
          await ops.ensureLabelSet({ key, labels });
        }
        const root = spec.needs.length === 0;
        jobs.push({
          workflow_id: id,
          run_number: runNumber,
          job_id: spec.id,
          name: spec.name,
          command: spec.command,
          env: { ...def.env, ...spec.env },
          labels,
          label_key: key,
          needs: spec.needs,
          dependents: dependents.get(spec.id) ?? [],
          max_retries: spec.max_retries,
          backoff: spec.backoff,
          timeout_secs: spec.timeout_secs,
          status: root ? 'queued' : 'pending',
          attempt: 0,
          enqueued_at_ms: root ? now : 0,
          delayed_until_ms: 0,
          ready_at_ms: root ? now : 0,
          started_at_ms: null,
          finished_at_ms: null,
          deadline_ms: null,
          error: null,
          outputs: null,
          upstream_outputs: {},
          worker_id: null,
          lease_id: null,
        });
        changes.job({ workflow_id: id, run_number: runNumber, job_id: spec.id });
      }
      await ops.insertJobs(jobs);
      await ops.setLatestRun(id, runNumber);
      return this.statusIn(ops, id);
    });
    this.announce(changes);
    this.log.info({ workflow_id: id, run_number: doc.run_number }, 'run started');
    return doc;
  }

  /**
   * Cancels every pending, queued and running job of the latest run. A workflow with no active run is
   * left as it is (still 202 at the API, per docs/api.md).
   */
  async cancel(id: string): Promise<{ cancelled: string[]; status: StatusDocument }> {
    const changes = new Changes();
    const result = await this.store.tx(async (ops) => {
      const wf = await this.requireWorkflow(ops, id);
      const cancelled: string[] = [];
      if (wf.latest_run > 0) {
        const run = await ops.getRun(id, wf.latest_run);
        if (run && run.status === 'running') {
          const now = this.now();
          for (const job of await ops.getRunJobs(id, run.run_number)) {
            if (isTerminal(job.status)) continue;
            if (job.lease_id) await ops.updateLease(job.lease_id, { state: 'cancelled' });
            await ops.updateJob(job.row_id, { status: 'cancelled', finished_at_ms: now, deadline_ms: null });
            cancelled.push(job.job_id);
            changes.job(job);
          }
          await ops.updateRun(id, run.run_number, 'cancelled', now);
        }
      }
      return { cancelled, status: await this.statusIn(ops, id) };
    });
    this.announce(changes);
    if (result.cancelled.length > 0) this.log.info({ workflow_id: id, jobs: result.cancelled }, 'run cancelled');
    return result;
  }

  /** docs/api.md: true when the job (of the latest run) was cancelled. */
  async isCancelled(workflowId: string, jobId: string): Promise<boolean> {
    return this.store.read(async (ops) => {
      const { job } = await this.requireJob(ops, workflowId, jobId);
      return job?.status === 'cancelled';
    });
  }

  // ---------------------------------------------------------------- workers

  async registerWorker(workerId: string, labels: string[]): Promise<WorkerView> {
    const now = this.now();
    return this.store.tx(async (ops) => {
      await ops.touchWorker(workerId, now, normalizeLabels(labels));
      const workers = (await ops.listWorkers()).filter((w) => w.worker_id === workerId);
      const leases = (await ops.activeLeases()).filter((l) => l.worker_id === workerId);
      return workerViews(workers, leases, now, this.offlineAfterMs)[0]!;
    });
  }

  async listWorkers(): Promise<WorkerView[]> {
    const now = this.now();
    return this.store.read(async (ops) =>
      workerViews(await ops.listWorkers(), await ops.activeLeases(), now, this.offlineAfterMs),
    );
  }

  // ---------------------------------------------------------------- worker protocol

  /** Atomically hands the oldest claimable job that fits the worker's labels to it, or null. */
  async claim(req: { worker_id: string; labels: string[]; lease_ttl_secs?: number }): Promise<ClaimResult | null> {
    const ttl = req.lease_ttl_secs ?? DEFAULT_LEASE_TTL_SECS;
    const offered = new Set(req.labels);
    const changes = new Changes();
    const result = await this.store.tx(async (ops) => {
      const now = this.now();
      await ops.touchWorker(req.worker_id, now, normalizeLabels(req.labels));
      const keys = (await ops.listLabelSets()).filter((s) => isSubset(s.labels, offered)).map((s) => s.key);
      if (keys.length === 0) return null;
      const job = await ops.nextClaimable(keys, now);
      if (!job) return null;
      const lease: LeaseRecord = {
        lease_id: randomUUID(),
        job_row_id: job.row_id,
        workflow_id: job.workflow_id,
        run_number: job.run_number,
        job_id: job.job_id,
        attempt: job.attempt,
        worker_id: req.worker_id,
        ttl_secs: ttl,
        granted_at_ms: now,
        renewed_at_ms: now,
        expires_at_ms: leaseExpiresAt(now, ttl),
        state: 'active',
      };
      await ops.insertLease(lease);
      await ops.updateJob(job.row_id, {
        status: 'running',
        started_at_ms: now,
        finished_at_ms: null,
        deadline_ms: job.timeout_secs === null ? null : now + job.timeout_secs * 1000,
        worker_id: req.worker_id,
        lease_id: lease.lease_id,
      });
      changes.job(job);
      return { job: claimedJob(job), lease: leaseView(lease) };
    });
    this.announce(changes);
    return result;
  }

  /** Renews the lease by its own ttl from now; 409 once it has expired, been settled or cancelled. */
  async heartbeat(leaseId: string): Promise<HeartbeatResponse> {
    const changes = new Changes();
    const outcome = await this.store.tx(async (ops) => {
      const now = this.now();
      const check = await this.checkLease(ops, leaseId, now, changes);
      if (check.kind !== 'live') return check;
      const expires = leaseExpiresAt(now, check.lease.ttl_secs);
      await ops.updateLease(leaseId, { renewed_at_ms: now, expires_at_ms: expires });
      return { kind: 'renewed' as const, lease: { ...check.lease, renewed_at_ms: now, expires_at_ms: expires } };
    });
    this.announce(changes);
    if (outcome.kind === 'cancelled') {
      throw new WeftError('job_cancelled', `the job of lease ${leaseId} was cancelled; stop working on it`);
    }
    if (outcome.kind === 'lost') throw new WeftError(outcome.code, outcome.reason);
    return { ...leaseView(outcome.lease), cancelled: false };
  }

  /** Marks the job a success, stores its outputs and enqueues what it unblocks, all in one step. */
  async complete(leaseId: string, outputs: Outputs): Promise<Omit<CompleteResponse, 'ok'>> {
    const changes = new Changes();
    const outcome = await this.store.tx(async (ops) => {
      const now = this.now();
      const check = await this.checkLease(ops, leaseId, now, changes);
      if (check.kind === 'lost') return check;
      if (check.kind === 'cancelled') return { kind: 'ignored' as const, status: check.job.status, enqueued: [] };
      const { job } = check;
      await ops.updateLease(leaseId, { state: 'completed' });
      await ops.updateJob(job.row_id, { status: 'success', outputs, finished_at_ms: now, deadline_ms: null, error: null });
      changes.job(job);
      // Only direct dependents can have become ready; read them and their other needs, nothing more.
      const below = await ops.getJobs(job.workflow_id, job.run_number, job.dependents);
      const needIds = new Set(below.filter((d) => d.status === 'pending').flatMap((d) => d.needs));
      needIds.delete(job.job_id);
      const nodes = new Map<string, DagNode>();
      for (const n of await ops.getJobs(job.workflow_id, job.run_number, [...needIds])) nodes.set(n.job_id, n);
      nodes.set(job.job_id, { ...job, status: 'success', outputs });
      for (const d of below) if (!nodes.has(d.job_id)) nodes.set(d.job_id, d);
      const enqueued: string[] = [];
      for (const ready of newlyReady([...nodes.values()], job.job_id)) {
        const next = below.find((j) => j.job_id === ready.job_id)!;
        await ops.updateJob(next.row_id, {
          status: 'queued',
          enqueued_at_ms: now,
          ready_at_ms: now,
          delayed_until_ms: 0,
          upstream_outputs: ready.upstream_outputs,
        });
        enqueued.push(next.job_id);
        changes.job(next);
      }
      await this.settleRun(ops, job.workflow_id, job.run_number, now);
      return { kind: 'done' as const, status: 'success' as JobState, enqueued };
    });
    this.announce(changes);
    if (outcome.kind === 'lost') throw new WeftError(outcome.code, outcome.reason);
    return { status: outcome.status, enqueued: outcome.enqueued };
  }

  /** Records a failure: re-queued with backoff while the retry budget allows, otherwise failed. */
  async fail(
    leaseId: string,
    error: string,
    retryable: boolean,
  ): Promise<Omit<FailResponse, 'ok'>> {
    const changes = new Changes();
    const outcome = await this.store.tx(async (ops) => {
      const now = this.now();
      const check = await this.checkLease(ops, leaseId, now, changes);
      if (check.kind === 'lost') return check;
      if (check.kind === 'cancelled') {
        return { kind: 'ignored' as const, status: check.job.status, attempt: check.job.attempt, delayed_until_ms: 0 };
      }
      await ops.updateLease(leaseId, { state: 'failed' });
      const r = await this.applyFailure(ops, check.job, storableText(error), retryable, now, changes);
      return { kind: 'done' as const, ...r };
    });
    this.announce(changes);
    if (outcome.kind === 'lost') throw new WeftError(outcome.code, outcome.reason);
    return { status: outcome.status, attempt: outcome.attempt, delayed_until_ms: outcome.delayed_until_ms };
  }

  /** Stores log chunks of the lease's attempt; a re-sent sequence is kept once. */
  async pushLogs(leaseId: string, chunks: IncomingLogChunk[]): Promise<{ accepted: number }> {
    const changes = new Changes();
    const outcome = await this.store.tx(async (ops) => {
      const now = this.now();
      const check = await this.checkLease(ops, leaseId, now, changes);
      if (check.kind === 'lost') return check;
      // A cancelled job's last words are still worth keeping.
      const { lease } = check;
      const records: LogChunkRecord[] = chunks.map((c, i) => {
        if (c.workflow_id !== undefined && c.workflow_id !== lease.workflow_id) {
          throw new WeftError('chunk_mismatch',
            `chunks[${i}].workflow_id is "${c.workflow_id}" but lease ${leaseId} belongs to workflow "${lease.workflow_id}"`,
          );
        }
        if (c.job_id !== undefined && c.job_id !== lease.job_id) {
          throw new WeftError('chunk_mismatch', `chunks[${i}].job_id is "${c.job_id}" but lease ${leaseId} belongs to job "${lease.job_id}"`);
        }
        return {
          workflow_id: lease.workflow_id,
          run_number: lease.run_number,
          job_id: lease.job_id,
          attempt: lease.attempt,
          sequence: c.sequence,
          stream: c.stream ?? 'stdout',
          data: storableText(c.data),
          timestamp_ms: c.timestamp_ms ?? now,
        };
      });
      await ops.insertLogChunks(records);
      changes.logs.push({ workflow_id: lease.workflow_id, run_number: lease.run_number, job_id: lease.job_id });
      return { kind: 'stored' as const, accepted: records.length };
    });
    this.announce(changes);
    if (outcome.kind === 'lost') throw new WeftError(outcome.code, outcome.reason);
    return { accepted: outcome.accepted };
  }

  // ---------------------------------------------------------------- logs

  /** Historical chunks: latest run and latest attempt unless asked otherwise. */
  async logs(
    workflowId: string,
    jobId: string,
    q: { run?: number; attempt?: number } = {},
  ): Promise<{ run_number: number | null; attempt: number | null; chunks: LogChunkView[] }> {
    return this.store.read(async (ops) => {
      const target = await this.logTarget(ops, workflowId, jobId, q.run);
      if (!target) return { run_number: null, attempt: null, chunks: [] };
      const attempt = q.attempt ?? target.attempt;
      const chunks = await ops.getLogChunks({ workflow_id: workflowId, run_number: target.run_number, job_id: jobId, attempt });
      return { run_number: target.run_number, attempt, chunks: chunks.map(logChunkView) };
    });
  }

  /**
   * Which run and attempt a log read means, and the job's state there. The default attempt is the
   * newest one that logged anything, so a job waiting for its retry still shows why it failed.
   */
  async logTarget(
    ops: StoreOps,
    workflowId: string,
    jobId: string,
    run?: number,
  ): Promise<{ run_number: number; attempt: number; status: JobState; job_attempt: number } | null> {
    const wf = await this.requireWorkflow(ops, workflowId);
    const runNumber = run ?? wf.latest_run;
    if (run !== undefined && (run < 1 || run > wf.latest_run)) {
      throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${run} (latest is ${wf.latest_run || 'none'})`);
    }
    if (runNumber === 0) {
      if (!wf.definition.jobs.some((j) => j.id === jobId)) throw this.unknownJob(wf, jobId);
      return null;
    }
    const job = await ops.getJob(workflowId, runNumber, jobId);
    if (!job) throw this.unknownJob(wf, jobId);
    const logged = await ops.latestLogAttempt(workflowId, runNumber, jobId);
    return { run_number: runNumber, attempt: logged ?? job.attempt, status: job.status, job_attempt: job.attempt };
  }

  /** Read access for log followers, which poll between events. */
  readStore<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    return this.store.read(fn);
  }

  // ---------------------------------------------------------------- reaper

  /**
   * Re-queues (or fails, when the budget is spent) every job whose lease expired or whose attempt
   * outlived timeout_secs. Safe to run from several processes at once: each item is settled in a
   * write transaction that re-checks it.
   */
  async reap(): Promise<{ expired: number; timedOut: number }> {
    const changes = new Changes();
    const counts = await this.store.tx(async (ops) => {
      const now = this.now();
      let expired = 0;
      let timedOut = 0;
      for (const lease of await ops.expiredLeases(now, REAP_BATCH)) {
        await this.expireLease(ops, lease, now, changes);
        expired++;
      }
      for (const job of await ops.timedOutJobs(now, REAP_BATCH)) {
        if (job.lease_id) await ops.updateLease(job.lease_id, { state: 'timed_out' });
        await this.applyFailure(ops, job, `timed out after ${job.timeout_secs}s`, true, now, changes);
        timedOut++;
      }
      return { expired, timedOut };
    });
    this.announce(changes);
    if (counts.expired + counts.timedOut > 0) this.log.info(counts, 'reaper settled lost jobs');
    return counts;
  }

  // ---------------------------------------------------------------- internals

  private newWorkflowRecord(def: WorkflowDefinition, hash: string, source: 'file' | 'api'): WorkflowRecord {
    const now = this.now();
    return {
      id: def.id,
      name: def.name,
      trigger: def.trigger,
      definition: def,
      source,
      hash,
      created_at_ms: now,
      updated_at_ms: now,
      latest_run: 0,
    };
  }

  private async statusIn(ops: StoreOps, id: string): Promise<StatusDocument> {
    const wf = await this.requireWorkflow(ops, id);
    if (wf.latest_run === 0) return statusDocument(wf, null, null);
    const run = await ops.getRun(id, wf.latest_run);
    const jobs = await ops.getRunJobs(id, wf.latest_run);
    return statusDocument(wf, run, jobs);
  }

  private async requireWorkflow(ops: StoreOps, id: string): Promise<WorkflowRecord> {
    const wf = await ops.getWorkflow(id);
    if (!wf) throw new WeftError('workflow_not_found', `workflow "${id}" does not exist`);
    return wf;
  }

  /** The job of the latest run; null (but no error) when the workflow never ran and the job exists. */
  private async requireJob(ops: StoreOps, workflowId: string, jobId: string): Promise<{ job: JobRecord | null }> {
    const wf = await this.requireWorkflow(ops, workflowId);
    if (wf.latest_run === 0) {
      if (!wf.definition.jobs.some((j) => j.id === jobId)) throw this.unknownJob(wf, jobId);
      return { job: null };
    }
    const job = await ops.getJob(workflowId, wf.latest_run, jobId);
    if (!job) throw this.unknownJob(wf, jobId);
    return { job };
  }

  private unknownJob(wf: WorkflowRecord, jobId: string) {
    const names = wf.definition.jobs.map((j) => j.id).join(', ');
    return new WeftError('job_not_found', `workflow "${wf.id}" has no job "${jobId}" (jobs: ${names})`);
  }

  /**
   * Validates a lease for a worker call. Expiry is settled right here (not only by the reaper), so the
   * caller gets its 409 at once and the job is already back in the queue.
   */
  private async checkLease(ops: StoreOps, leaseId: string, now: number, changes: Changes): Promise<LeaseCheck> {
    const lease = await ops.getLease(leaseId);
    if (!lease) throw new WeftError('lease_not_found', `lease ${leaseId} does not exist (it may never have been granted)`);
    await ops.touchWorker(lease.worker_id, now);
    if (lease.state === 'cancelled') {
      const job = (await ops.getJobByRowId(lease.job_row_id))!;
      return { kind: 'cancelled', lease, job };
    }
    if (lease.state !== 'active') {
      throw new WeftError(settledLeaseCode(lease.state), `lease ${leaseId} is no longer valid: it was already ${lease.state.replace('_', ' ')}`);
    }
    if (isLeaseExpired(lease.expires_at_ms, now)) {
      await this.expireLease(ops, lease, now, changes);
      return { kind: 'lost', code: 'lease_expired', reason: `lease ${leaseId} expired at ${new Date(lease.expires_at_ms).toISOString()}; the job was re-queued` };
    }
    const job = (await ops.getJobByRowId(lease.job_row_id))!;
    if (job.deadline_ms !== null && now > job.deadline_ms) {
      await ops.updateLease(leaseId, { state: 'timed_out' });
      await this.applyFailure(ops, job, `timed out after ${job.timeout_secs}s`, true, now, changes);
      return { kind: 'lost', code: 'lease_timed_out', reason: `job "${job.job_id}" exceeded its timeout of ${job.timeout_secs}s; lease ${leaseId} is void` };
    }
    return { kind: 'live', lease, job };
  }

  /** README "How a run works": an expired lease is a retryable failure with error `lease expired`. */
  private async expireLease(ops: StoreOps, lease: LeaseRecord, now: number, changes: Changes): Promise<void> {
    await ops.updateLease(lease.lease_id, { state: 'expired' });
    const job = await ops.getJobByRowId(lease.job_row_id);
    // Only the lease the job is currently running under may move the job.
    if (job && job.status === 'running' && job.lease_id === lease.lease_id) {
      await this.applyFailure(ops, job, 'lease expired', true, now, changes);
    }
  }

  private async applyFailure(
    ops: StoreOps,
    job: JobRecord,
    error: string,
    retryable: boolean,
    now: number,
    changes: Changes,
  ): Promise<{ status: JobState; attempt: number; delayed_until_ms: number }> {
    changes.job(job);
    if (retryable && job.attempt < job.max_retries) {
      const attempt = job.attempt + 1;
      const delay = retryDelayMs(job.backoff, attempt);
      const delayedUntil = delay > 0 ? now + delay : 0;
      await ops.updateJob(job.row_id, {
        status: 'queued',
        attempt,
        enqueued_at_ms: now,
        delayed_until_ms: delayedUntil,
        ready_at_ms: Math.max(now, delayedUntil),
        error,
        started_at_ms: null,
        finished_at_ms: null,
        deadline_ms: null,
        worker_id: null,
        lease_id: null,
      });
      this.log.info({ workflow_id: job.workflow_id, job_id: job.job_id, attempt, delayed_until_ms: delayedUntil, error }, 'job re-queued');
      return { status: 'queued', attempt, delayed_until_ms: delayedUntil };
    }
    await ops.updateJob(job.row_id, { status: 'failed', error, finished_at_ms: now, deadline_ms: null });
    // Everything downstream is still pending (it needed this job); walk the dependents level by level.
    let frontier = job.dependents;
    const seen = new Set<string>();
    while (frontier.length > 0) {
      const next: string[] = [];
      for (const j of await ops.getJobs(job.workflow_id, job.run_number, frontier.filter((id) => !seen.has(id)))) {
        seen.add(j.job_id);
        if (j.status !== 'pending') continue;
        await ops.updateJob(j.row_id, { status: 'skipped', finished_at_ms: now, error: `upstream job "${job.job_id}" failed` });
        changes.job(j);
        next.push(...j.dependents);
      }
      frontier = next;
    }
    await this.settleRun(ops, job.workflow_id, job.run_number, now);
    this.log.info({ workflow_id: job.workflow_id, job_id: job.job_id, attempt: job.attempt, error }, 'job failed');
    return { status: 'failed', attempt: job.attempt, delayed_until_ms: 0 };
  }

  /** Records the run's end once none of its jobs can move any more. */
  private async settleRun(ops: StoreOps, workflowId: string, runNumber: number, now: number) {
    const state = deriveRunState(await ops.presentStates(workflowId, runNumber));
    if (state !== 'running') await ops.updateRun(workflowId, runNumber, state, now);
  }

  private announce(changes: Changes): void {
    for (const c of changes.jobs) this.events.emit('job', c);
    for (const c of changes.logs) this.events.emit('logs', c);
  }
}

/**
 * Job output is arbitrary bytes decoded as text and may hold NUL, which PostgreSQL text columns
 * refuse; every store keeps the same U+FFFD in its place so logs read back alike everywhere.
 */
function storableText(s: string): string {
  return s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
}

function claimedJob(job: JobRecord): ClaimedJob {
  return {
    job_id: job.job_id,
    workflow_id: job.workflow_id,
    command: job.command,
    required_labels: job.labels,
    retry_policy: { max_retries: job.max_retries, backoff: backoffToWire(job.backoff) },
    attempt: job.attempt,
    upstream_outputs: job.upstream_outputs,
    enqueued_at_ms: job.enqueued_at_ms,
    delayed_until_ms: job.delayed_until_ms,
    run_number: job.run_number,
    name: job.name,
    env: job.env,
    timeout_secs: job.timeout_secs,
  };
}

function leaseView(l: LeaseRecord): LeaseView {
  return {
    lease_id: l.lease_id,
    job_id: l.job_id,
    workflow_id: l.workflow_id,
    worker_id: l.worker_id,
    ttl_secs: l.ttl_secs,
    granted_at_ms: l.granted_at_ms,
    expires_at_ms: l.expires_at_ms,
  };
}
