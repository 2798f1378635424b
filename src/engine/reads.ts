import type { JobState } from '../domain/types.js';
import { definitionDocument, type DefinitionDocument } from '../definitions/index.js';
import { WeftError } from '../protocol/errors.js';
import type { LogChunkView, RunSummary, StatusDocument, WorkerView } from '../protocol/types.js';
import type { ActiveJobCount, JobRecord, Store, StoreReads, WorkflowRecord } from '../store/store.js';
import { logChunkView, runSummaries, statusDocument, workerViews } from './views.js';

/**
 * The engine's read side (src/engine/engine.ts builds on it): status documents, lists, run history,
 * definitions, logs and workers, each read against one consistent snapshot of the store. Nothing here
 * changes anything.
 */
export class EngineReads {
  constructor(
    protected readonly store: Store,
    protected readonly now: () => number,
    /** A worker unseen for longer (holding no lease) is listed as offline. */
    protected readonly offlineAfterMs: number,
  ) {}

  /**
   * A page of workflows, each as its status document. The page's runs and jobs come in one query each,
   * whatever the page size, rather than one status read per item.
   */
  async listWorkflows(q: { limit: number; offset: number; status?: JobState; search?: string }): Promise<StatusDocument[]> {
    return this.store.read(async (r) => {
      const workflows = await r.listWorkflows({ limit: q.limit, offset: q.offset, jobStatus: q.status, search: q.search });
      const keys = workflows.filter((w) => w.latest_run > 0).map((w) => ({ workflow_id: w.id, run_number: w.latest_run }));
      if (keys.length === 0) return workflows.map((w) => statusDocument(w, null, null));
      const runs = new Map((await r.getRuns(keys)).map((run) => [run.workflow_id, run]));
      const jobs = new Map<string, JobRecord[]>();
      for (const j of await r.getJobsOfRuns(keys)) {
        const list = jobs.get(j.workflow_id);
        if (list) list.push(j);
        else jobs.set(j.workflow_id, [j]);
      }
      return workflows.map((w) => statusDocument(w, runs.get(w.id) ?? null, jobs.get(w.id) ?? []));
    });
  }

  async status(id: string): Promise<StatusDocument> {
    return this.store.read((r) => this.statusIn(r, id));
  }

  /** The workflow's definition as a workflow file would hold it (docs/api.md). */
  async definition(id: string): Promise<DefinitionDocument> {
    const wf = await this.store.read((r) => this.requireWorkflow(r, id));
    return definitionDocument(wf.definition);
  }

  /** A page of the workflow's runs, newest first, each with its jobs counted by state (run history). */
  async runs(id: string, q: { limit: number; offset: number }): Promise<RunSummary[]> {
    return this.store.read(async (r) => {
      await this.requireWorkflow(r, id);
      const runs = await r.listRuns(id, q.limit, q.offset);
      return runSummaries(runs, await r.jobCountsOfRuns(runs));
    });
  }

  /** The status document of one run, as it stands (the latest run's is `status`). */
  async runStatus(id: string, runNumber: number): Promise<StatusDocument> {
    return this.store.read(async (r) => {
      const wf = await this.requireWorkflow(r, id);
      const run = runNumber >= 1 && runNumber <= wf.latest_run ? await r.getRun(id, runNumber) : null;
      if (!run) throw new WeftError('run_not_found', `workflow "${id}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
      return statusDocument(wf, run, await r.getRunJobs(id, runNumber));
    });
  }

  /**
   * True when the job was cancelled in run `runNumber`; without it, in the newest run that is running,
   * or the latest run when none is (docs/api.md).
   */
  async isCancelled(workflowId: string, jobId: string, runNumber?: number): Promise<boolean> {
    return this.store.read(async (r) => {
      const wf = await this.requireWorkflow(r, workflowId);
      let target = runNumber;
      if (target === undefined) {
        const running = (await r.activeRuns(workflowId)).filter((run) => run.status === 'running');
        target = running.length > 0 ? running[running.length - 1]!.run_number : wf.latest_run;
      } else if (target < 1 || target > wf.latest_run || !(await r.getRun(workflowId, target))) {
        throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${target} (latest is ${wf.latest_run || 'none'})`);
      }
      const job = target === 0 ? null : await r.getJob(workflowId, target, jobId);
      if (!job && !wf.definition.jobs.some((j) => j.id === jobId)) throw unknownJob(wf, jobId);
      return job?.status === 'cancelled';
    });
  }

  /** Every worker (SPEC 4.3), or one page of them by worker id. */
  async listWorkers(page?: { limit: number; offset: number }): Promise<WorkerView[]> {
    const now = this.now();
    return this.store.read(async (r) => workerViews(await r.listWorkers(page), await r.activeLeases(), now, this.offlineAfterMs));
  }

  /** Historical chunks: latest run and latest attempt unless asked otherwise. */
  async logs(
    workflowId: string,
    jobId: string,
    q: { run?: number; attempt?: number } = {},
  ): Promise<{ run_number: number | null; attempt: number | null; chunks: LogChunkView[] }> {
    return this.store.read(async (r) => {
      const target = await this.logTarget(r, workflowId, jobId, q.run);
      if (!target) return { run_number: null, attempt: null, chunks: [] };
      const attempt = q.attempt ?? target.attempt;
      const chunks = await r.getLogChunks({ workflow_id: workflowId, run_number: target.run_number, job_id: jobId, attempt });
      return { run_number: target.run_number, attempt, chunks: chunks.map(logChunkView) };
    });
  }

  /**
   * Which run and attempt a log read means, and the job's state there. The default attempt is the
   * newest one that logged anything, so a job waiting for its retry still shows why it failed.
   */
  async logTarget(
    r: StoreReads,
    workflowId: string,
    jobId: string,
    run?: number,
  ): Promise<{ run_number: number; attempt: number; status: JobState; job_attempt: number } | null> {
    const wf = await this.requireWorkflow(r, workflowId);
    const runNumber = run ?? wf.latest_run;
    if (run !== undefined && (run < 1 || run > wf.latest_run)) {
      throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${run} (latest is ${wf.latest_run || 'none'})`);
    }
    if (run !== undefined && run !== wf.latest_run && !(await r.getRun(workflowId, run))) {
      throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${run} any more: retention deleted it (README "Retention")`);
    }
    if (runNumber === 0) {
      if (!wf.definition.jobs.some((j) => j.id === jobId)) throw unknownJob(wf, jobId);
      return null;
    }
    const job = await r.getJob(workflowId, runNumber, jobId);
    if (!job) {
      // A queued run has no job rows yet (README "How a run works"): nothing logged.
      const run = await r.getRun(workflowId, runNumber);
      if (run?.status === 'queued' && wf.definition.jobs.some((j) => j.id === jobId)) return null;
      throw unknownJob(wf, jobId);
    }
    const logged = await r.latestLogAttempt(workflowId, runNumber, jobId);
    return { run_number: runNumber, attempt: logged ?? job.attempt, status: job.status, job_attempt: job.attempt };
  }

  /** Queued and running jobs per label key, for GET /metrics (README "Metrics"). */
  activeJobCounts(): Promise<ActiveJobCount[]> {
    return this.store.read((r) => r.activeJobCounts());
  }

  /** Resolves when the store answers a read (GET /readyz); rejects with why it does not. */
  async ready(): Promise<void> {
    await this.store.read((r) => r.getWorkflow(''));
  }

  protected async statusIn(r: StoreReads, id: string): Promise<StatusDocument> {
    const wf = await this.requireWorkflow(r, id);
    if (wf.latest_run === 0) return statusDocument(wf, null, null);
    const run = await r.getRun(id, wf.latest_run);
    const jobs = await r.getRunJobs(id, wf.latest_run);
    return statusDocument(wf, run, jobs);
  }

  protected async requireWorkflow(r: StoreReads, id: string): Promise<WorkflowRecord> {
    const wf = await r.getWorkflow(id);
    if (!wf) throw workflowNotFound(id);
    return wf;
  }
}

export function workflowNotFound(id: string): WeftError {
  return new WeftError('workflow_not_found', `workflow "${id}" does not exist`);
}

function unknownJob(wf: WorkflowRecord, jobId: string): WeftError {
  const names = wf.definition.jobs.map((j) => j.id).join(', ');
  return new WeftError('job_not_found', `workflow "${wf.id}" has no job "${jobId}" (jobs: ${names})`);
}
