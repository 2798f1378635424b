import type { JobState } from '../domain/model.js';
import { definitionDocument, type DefinitionDocument } from '../definitions/index.js';
import { WeftError } from '../protocol/errors.js';
import type { JobView, LogChunkView, RunSummary, StatusDocument, WorkerView, WorkflowSummary } from '../protocol/wire.js';
import type { ActiveJobCount, RunJobCount, Store, StoreReads, WorkflowRecord } from '../store/store.js';

/** A page of the workflow list (docs/api.md "GET /api/workflows"). */
export interface ListQuery {
  limit: number;
  offset: number;
  status?: JobState;
  search?: string;
}

/**
 * A status document as a list answer writes it: `doc` with its jobs, or, for a run whose jobs are
 * rows, `doc` with no jobs yet and `jobPages` yielding them in order.
 */
export interface DocumentParts {
  doc: StatusDocument;
  jobPages: AsyncIterable<JobView[]> | null;
}

/** Log chunks read at once, at most; fewer when they are large (about LOG_PAGE_BYTES a page). */
const LOG_PAGE_CHUNKS = 500;
const LOG_PAGE_BYTES = 1024 * 1024;

/** Job rows read and serialized at once when a list answer writes a large run: a few milliseconds' work. */
const JOB_PAGE = 200;
import { groupsWaitedOn, jobViews, logChunkView, runSummaries, statusDocument, workerViews, workflowSummary } from './views.js';
import type { LeaseVisibility } from './engine-options.js';

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
   * A page of workflows, each as its status document, one part at a time: the page is listed in one
   * read, then each workflow is read in reads of its own, its jobs JOB_PAGE rows at a time, so that a
   * page of workflows of thousands of jobs never holds the event loop (nor SQLite's read lock) for the
   * whole page, nor even for a whole large document. Each job entry is as it stood when its page was
   * read; a workflow deleted meanwhile is left out.
   */
  async workflowDocuments(q: ListQuery): Promise<AsyncGenerator<DocumentParts>> {
    // The page itself is read before anything is answered, so a store that is away is a 503, not a cut answer.
    const page = await this.store.read((r) => r.listWorkflows({ limit: q.limit, offset: q.offset, jobStatus: q.status, search: q.search }));
    const parts = (id: string) => this.documentParts(id);
    return (async function* documents() {
      for (const wf of page) {
        const item = await parts(wf.id);
        if (item) yield item;
      }
    })();
  }

  /**
   * The status document of the latest run, or of run `runNumber`, for an answer written as it is read
   * (docs/api.md "Status document"): a run of at most JOB_PAGE jobs is read whole in one snapshot, as
   * `status` and `runStatus` read it; a larger one comes with its jobs in pages, each read in a read
   * of its own, so that a run of 10,000 jobs holds neither the event loop nor SQLite's read lock for
   * the whole document (docs/performance.md "Large runs"). An unknown workflow or run is an error here,
   * before anything is answered.
   */
  async statusParts(id: string, runNumber?: number): Promise<DocumentParts> {
    return (await this.documentParts(id, runNumber ?? null, true))!;
  }

  /**
   * A status document whose jobs come in pages (null: the workflow is gone, unless `strict`). Each job
   * entry is as it stood when its page was read; the run's own fields as they stood at the first page.
   */
  private async documentParts(id: string, runNumber: number | null = null, strict = false): Promise<DocumentParts | null> {
    const first = await this.store.read(async (r) => {
      const wf = await r.getWorkflow(id);
      if (!wf) {
        if (strict) throw workflowNotFound(id);
        return null;
      }
      const n = runNumber ?? wf.latest_run;
      const run = n >= 1 && n <= wf.latest_run ? await r.getRun(id, n) : null;
      if (runNumber !== null && !run) throw new WeftError('run_not_found', `workflow "${id}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
      // A queued run's planned jobs and a never-run workflow's definition are in hand already.
      if (!run || run.plan) return { doc: statusDocument(wf, run, []), wf, run, jobs: null };
      const jobs = await r.getRunJobViews(id, run.run_number, { afterRowId: 0, limit: JOB_PAGE });
      const holders = await r.jobGroupHolders(groupsWaitedOn(jobs));
      // A run that fits in one page is answered from this one snapshot, whole.
      if (jobs.length < JOB_PAGE) return { doc: statusDocument(wf, run, jobs, holders), wf, run, jobs: null };
      return { doc: statusDocument(wf, run, []), wf, run, jobs: { rows: jobs, holders } };
    });
    if (!first) return null;
    const { doc, wf, run, jobs } = first;
    if (!jobs) return { doc, jobPages: null };
    const store = this.store;
    async function* pages(): AsyncGenerator<JobView[]> {
      let page = jobs!;
      while (page.rows.length > 0) {
        yield jobViews(wf, page.rows, page.holders);
        if (page.rows.length < JOB_PAGE) return;
        const after = page.rows[page.rows.length - 1]!.row_id;
        page = await store.read(async (r) => {
          const rows = await r.getRunJobViews(id, run!.run_number, { afterRowId: after, limit: JOB_PAGE });
          return { rows, holders: await r.jobGroupHolders(groupsWaitedOn(rows)) };
        });
      }
    }
    return { doc, jobPages: pages() };
  }

  /** The same page as an array (for callers in-process, which hold it whole anyway). */
  async listWorkflows(q: ListQuery): Promise<StatusDocument[]> {
    const docs: StatusDocument[] = [];
    for await (const { doc, jobPages } of await this.workflowDocuments(q)) {
      if (jobPages) for await (const page of jobPages) doc.jobs.push(...page);
      docs.push(doc);
    }
    return docs;
  }

  /**
   * A page of workflows as summaries (`GET /api/workflows?jobs=false`): their latest runs and job
   * counts come in one query each, whatever the page size, and no job row is read.
   */
  async listSummaries(q: ListQuery): Promise<WorkflowSummary[]> {
    return this.store.read(async (r) => {
      const workflows = await r.listWorkflows({ limit: q.limit, offset: q.offset, jobStatus: q.status, search: q.search });
      return this.summariesIn(r, workflows);
    });
  }

  /** One workflow's summary (the list stream's `workflow` events). */
  async summary(id: string): Promise<WorkflowSummary> {
    return this.store.read(async (r) => (await this.summariesIn(r, [await this.requireWorkflow(r, id)]))[0]!);
  }

  private async summariesIn(r: StoreReads, workflows: WorkflowRecord[]): Promise<WorkflowSummary[]> {
    const keys = workflows.filter((w) => w.latest_run > 0).map((w) => ({ workflow_id: w.id, run_number: w.latest_run }));
    if (keys.length === 0) return workflows.map((w) => workflowSummary(w, null, []));
    const runs = new Map((await r.getRuns(keys)).map((run) => [run.workflow_id, run]));
    const counts = new Map<string, RunJobCount[]>();
    for (const c of await r.jobCountsOfRuns(keys)) {
      const list = counts.get(c.workflow_id);
      if (list) list.push(c);
      else counts.set(c.workflow_id, [c]);
    }
    return workflows.map((w) => workflowSummary(w, runs.get(w.id) ?? null, counts.get(w.id) ?? []));
  }

  async status(id: string): Promise<StatusDocument> {
    return this.store.read((r) => this.statusIn(r, id));
  }

  /** The workflow's definition as a workflow file would hold it (docs/api.md). */
  async definition(id: string): Promise<DefinitionDocument> {
    const wf = await this.store.read((r) => this.requireWorkflow(r, id));
    return definitionDocument(wf.definition);
  }

  /** The definition run n was planned from (README "Dashboard"), as `definition` answers the current one. */
  async runDefinition(id: string, runNumber: number): Promise<DefinitionDocument> {
    const def = await this.store.read(async (r) => {
      const wf = await this.requireWorkflow(r, id);
      const run = runNumber >= 1 && runNumber <= wf.latest_run ? await r.getRun(id, runNumber) : null;
      if (!run) throw new WeftError('run_not_found', `workflow "${id}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
      const kept = run.definition_hash === null ? null : await r.getRunDefinition(id, run.definition_hash);
      if (!kept) {
        throw new WeftError('definition_not_recorded', `run #${runNumber} of workflow "${id}" started before weft kept each run's definition; GET /api/workflows/${id}/definition answers the current one`);
      }
      return kept;
    });
    return definitionDocument(def);
  }

  /** A page of the workflow's runs, newest first, each with its jobs counted by state (run history). */
  async runs(id: string, q: { limit: number; offset: number }): Promise<RunSummary[]> {
    return this.store.read(async (r) => {
      const runs = await r.listRuns(id, q.limit, q.offset);
      // Runs found say the workflow exists; reading its record would parse its whole definition, which
      // for a workflow of 10,000 jobs is most of this answer's cost (docs/performance.md "Large runs").
      if (runs.length === 0) await this.requireWorkflow(r, id);
      return runSummaries(runs, await r.jobCountsOfRuns(runs));
    });
  }

  /** The status document of one run, as it stands (the latest run's is `status`). */
  async runStatus(id: string, runNumber: number): Promise<StatusDocument> {
    return this.store.read(async (r) => {
      const wf = await this.requireWorkflow(r, id);
      const run = runNumber >= 1 && runNumber <= wf.latest_run ? await r.getRun(id, runNumber) : null;
      if (!run) throw new WeftError('run_not_found', `workflow "${id}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
      const jobs = await r.getRunJobViews(id, runNumber);
      return statusDocument(wf, run, jobs, await r.jobGroupHolders(groupsWaitedOn(jobs)));
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

  /**
   * Every worker (SPEC 4.3), or one page of them by worker id. `sees`: whose lease ids the list may
   * show (README "Access tokens"); absent: all of them.
   */
  async listWorkers(page?: { limit: number; offset: number }, sees?: LeaseVisibility): Promise<WorkerView[]> {
    const now = this.now();
    return this.store.read(async (r) => workerViews(await r.listWorkers(page), await r.activeLeases(), now, this.offlineAfterMs, sees));
  }

  /**
   * Historical chunks: latest run and latest attempt unless asked otherwise, after sequence `after`,
   * at most `limit` of them (docs/api.md "Logs"). They come in pages, each read in a read of its own
   * and sized to hold about LOG_PAGE_BYTES, so that an attempt of tens of megabytes is neither read
   * nor held at once; the first page is read with the target, so an unknown run or job is an error
   * before anything is answered.
   */
  async logPages(
    workflowId: string,
    jobId: string,
    q: { run?: number; attempt?: number; after?: number; limit?: number } = {},
  ): Promise<{ run_number: number | null; attempt: number | null; pages: AsyncGenerator<LogChunkView[]> }> {
    let want = q.limit ?? Infinity;
    let pageSize = Math.min(want, LOG_PAGE_CHUNKS);
    const first = await this.store.read(async (r) => {
      const target = await this.logTarget(r, workflowId, jobId, q.run);
      if (!target) return null;
      const attempt = q.attempt ?? target.attempt;
      const key = { workflow_id: workflowId, run_number: target.run_number, job_id: jobId, attempt };
      return { key, chunks: await r.getLogChunks({ ...key, afterSequence: q.after ?? -1, limit: pageSize }) };
    });
    if (!first) return { run_number: null, attempt: null, pages: (async function* () {})() };
    const { key } = first;
    const store = this.store;
    async function* pages(): AsyncGenerator<LogChunkView[]> {
      let chunks = first!.chunks;
      for (;;) {
        if (chunks.length > 0) yield chunks.map(logChunkView);
        want -= chunks.length;
        if (chunks.length < pageSize || want <= 0) return;
        // The next page holds about LOG_PAGE_BYTES, whatever the size of the chunks.
        let bytes = 0;
        for (const c of chunks) bytes += c.data.length;
        pageSize = Math.max(1, Math.min(want, LOG_PAGE_CHUNKS, Math.floor((chunks.length * LOG_PAGE_BYTES) / Math.max(1, bytes))));
        const after = chunks[chunks.length - 1]!.sequence;
        chunks = await store.read((r) => r.getLogChunks({ ...key, afterSequence: after, limit: pageSize }));
      }
    }
    return { run_number: key.run_number, attempt: key.attempt, pages: pages() };
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
    const jobs = await r.getRunJobViews(id, wf.latest_run);
    return statusDocument(wf, run, jobs, await r.jobGroupHolders(groupsWaitedOn(jobs)));
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
