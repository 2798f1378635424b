import type { WorkflowDefinition } from '../../domain/model.js';
import type { JobState } from '../../domain/model.js';
import type { ActiveJobCount, JobGroupHolder, ListWorkflowsQuery, LogQuery, RunKey, StoreReads } from '../store.js';
import { toJob, toJobView, toLease, toLogChunk, toRun, toWorker, toWorkflow } from '../rows.js';
import { artifactReads } from './artifacts.js';
import { secretReads } from './secrets.js';
import { triggerReads } from './triggers.js';
import { callReads } from './calls.js';
import { notificationReads } from './notifications.js';
import { QUERIES } from './queries.js';
import type { Exec } from './tx.js';

/** The read side, over the statements of one REPEATABLE READ READ ONLY transaction. */
export function makeReads(q: Exec): StoreReads {
  const runKeys = (keys: readonly RunKey[]) => [keys.map((k) => k.workflow_id), keys.map((k) => k.run_number)];
  return {
    ...artifactReads(q),
    ...secretReads(q),
    ...triggerReads(q),
    ...callReads(q),
    ...notificationReads(q),
    getWorkflow: async (id) => {
      const [row] = await q(QUERIES.getWorkflow, [id]);
      return row ? toWorkflow(row) : null;
    },
    listWorkflows: async ({ limit, offset, jobStatus, search }: ListWorkflowsQuery) => {
      const needle = search ? search.toLowerCase() : null;
      return (
        jobStatus
          ? await q(QUERIES.listWorkflowsWithJobStatus, [limit, offset, jobStatus, needle])
          : await q(QUERIES.listWorkflows, [limit, offset, needle])
      ).map(toWorkflow);
    },
    dueSchedules: async (nowMs, limit) => (await q(QUERIES.dueSchedules, [nowMs, limit])).map(toWorkflow),
    activeRuns: async (workflowId) => (await q(QUERIES.activeRuns, [workflowId])).map(toRun),
    queuedWorkflows: async (limit) => (await q(QUERIES.queuedWorkflows, [limit])).map((r) => r.workflow_id as string),
    getRun: async (workflowId, runNumber) => {
      const [row] = await q(QUERIES.getRun, [workflowId, runNumber]);
      return row ? toRun(row) : null;
    },
    getRunDefinition: async (workflowId, hash) => {
      const row = (await q(QUERIES.getRunDefinition, [workflowId, hash]))[0];
      return row ? (JSON.parse(row.definition as string) as WorkflowDefinition) : null;
    },
    getRuns: async (keys) => (keys.length === 0 ? [] : (await q(QUERIES.getRuns, runKeys(keys))).map(toRun)),
    getRunJobs: async (workflowId, runNumber) => (await q(QUERIES.getRunJobs, [workflowId, runNumber])).map(toJob),
    getRunJobViews: async (workflowId, runNumber, page) =>
      (page
        ? await q(QUERIES.getRunJobViewsPage, [workflowId, runNumber, page.afterRowId, page.limit])
        : await q(QUERIES.getRunJobViews, [workflowId, runNumber])
      ).map(toJobView),
    getJobsOfRuns: async (keys) => (keys.length === 0 ? [] : (await q(QUERIES.getJobsOfRuns, runKeys(keys))).map(toJob)),
    listRuns: async (workflowId, limit, offset) => (await q(QUERIES.listRuns, [workflowId, limit, offset])).map(toRun),
    jobCountsOfRuns: async (keys) =>
      keys.length === 0
        ? []
        : (await q(QUERIES.jobCountsOfRuns, runKeys(keys))).map((r) => ({
            workflow_id: r.workflow_id as string,
            run_number: r.run_number as number,
            status: r.status as JobState,
            count: r.count as number,
          })),
    getJob: async (workflowId, runNumber, jobId) => {
      const [row] = await q(QUERIES.getJob, [workflowId, runNumber, jobId]);
      return row ? toJob(row) : null;
    },
    getLease: async (leaseId) => {
      const [row] = await q(QUERIES.getLease, [leaseId]);
      return row ? toLease(row) : null;
    },
    activeLeases: async () => (await q(QUERIES.activeLeases)).map(toLease),
    getLogChunks: async ({ workflow_id, run_number, job_id, attempt, afterSequence, limit }: LogQuery) =>
      (
        await q(QUERIES.getLogChunks, [
          workflow_id,
          run_number,
          job_id,
          attempt,
          afterSequence ?? -1,
          limit === undefined || limit < 0 ? null : limit,
        ])
      ).map(toLogChunk),
    latestLogAttempt: async (workflowId, runNumber, jobId) => {
      const [row] = await q(QUERIES.latestLogAttempt, [workflowId, runNumber, jobId]);
      return (row?.attempt as number | null | undefined) ?? null;
    },
    listWorkers: async (page) => (await q(QUERIES.listWorkers, [page?.limit ?? null, page?.offset ?? 0])).map(toWorker),
    getWorker: async (workerId) => {
      const [row] = await q(QUERIES.getWorker, [workerId]);
      return row ? toWorker(row) : null;
    },
    labelSetsSince: async (afterSeq) =>
      (await q(QUERIES.labelSetsSince, [afterSeq])).map((r) => ({
        seq: r.seq as number,
        key: r.key as string,
        labels: JSON.parse(r.labels as string) as string[],
      })),
    activeJobCounts: async () =>
      (await q(QUERIES.activeJobCounts)).map((r): ActiveJobCount => ({
        status: r.status as ActiveJobCount['status'],
        label_key: r.label_key as string,
        count: r.count as number,
      })),
    jobGroupHolders: async (groups) =>
      groups.length === 0
        ? []
        : (await q(QUERIES.jobGroupHolders, [groups])).map((r): JobGroupHolder => ({
            concurrency_group: r.concurrency_group as string,
            workflow_id: r.workflow_id as string,
            run_number: r.run_number as number,
            job_id: r.job_id as string,
          })),
  };
}
