import type { WorkflowDefinition } from '../../domain/model.js';
import type { ActiveJobCount, JobGroupHolder, RunJobCount, RunKey, StoreReads } from '../store.js';
import { toJob, toJobView, toLease, toLogChunk, toRun, toWorker, toWorkflow, type Row } from '../rows.js';
import { artifactReads } from './artifacts.js';
import { secretReads } from './secrets.js';
import { triggerReads } from './triggers.js';
import { callReads } from './calls.js';
import { notificationReads } from './notifications.js';
import type { Conn } from './connection.js';

/** A JSON list of [workflow_id, run_number], which the many-runs queries join through json_each. */
const runKeys = (keys: readonly RunKey[]) => JSON.stringify(keys.map((k) => [k.workflow_id, k.run_number]));

/**
 * The reads of the SQLite store. Each runs its statement at once; the store calls `fn` inside one
 * read transaction, so every read of one `read(fn)` sees the same snapshot.
 */
export function makeReads(c: Conn): StoreReads {
  return {
    ...artifactReads(c),
    ...secretReads(c),
    ...triggerReads(c),
    ...callReads(c),
    ...notificationReads(c),
    getWorkflow: async (id) => {
      const row = c.q('getWorkflow').get(id) as Row | undefined;
      return row ? toWorkflow(row) : null;
    },
    listWorkflows: async ({ limit, offset, jobStatus, search }) => {
      const needle = search ? search.toLowerCase() : null;
      const rows = jobStatus
        ? c.q('listWorkflowsByJobStatus').all({ status: jobStatus, search: needle, limit, offset })
        : c.q('listWorkflows').all({ search: needle, limit, offset });
      return (rows as Row[]).map(toWorkflow);
    },
    getRun: async (workflowId, runNumber) => {
      const row = c.q('getRun').get(workflowId, runNumber) as Row | undefined;
      return row ? toRun(row) : null;
    },
    getRunDefinition: async (workflowId, hash) => {
      const row = c.q('getRunDefinition').get(workflowId, hash) as Row | undefined;
      return row ? (JSON.parse(row.definition as string) as WorkflowDefinition) : null;
    },
    getRuns: async (keys) => (keys.length === 0 ? [] : (c.q('getRuns').all(runKeys(keys)) as Row[]).map(toRun)),
    getRunJobs: async (workflowId, runNumber) => (c.q('getRunJobs').all(workflowId, runNumber) as Row[]).map(toJob),
    getRunJobViews: async (workflowId, runNumber, page) =>
      (page
        ? c.rows('getRunJobViewsPage', workflowId, runNumber, page.afterRowId, page.limit)
        : c.rows('getRunJobViews', workflowId, runNumber)
      ).map(toJobView),
    getJobsOfRuns: async (keys) =>
      keys.length === 0 ? [] : (c.q('getJobsOfRuns').all(runKeys(keys)) as Row[]).map(toJob),
    listRuns: async (workflowId, limit, offset) => (c.q('listRuns').all(workflowId, limit, offset) as Row[]).map(toRun),
    jobCountsOfRuns: async (keys) =>
      keys.length === 0 ? [] : (c.q('jobCountsOfRuns').all(runKeys(keys)) as RunJobCount[]),
    getJob: async (workflowId, runNumber, jobId) => {
      const row = c.q('getJob').get(workflowId, runNumber, jobId) as Row | undefined;
      return row ? toJob(row) : null;
    },
    getLease: async (leaseId) => {
      const row = c.q('getLease').get({ lease_id: leaseId }) as Row | undefined;
      return row ? toLease(row) : null;
    },
    activeLeases: async () => (c.q('activeLeases').all() as Row[]).map(toLease),
    getLogChunks: async ({ workflow_id, run_number, job_id, attempt, afterSequence, limit }) =>
      (
        c.q('getLogChunks').all(workflow_id, run_number, job_id, attempt, afterSequence ?? -1, limit ?? -1) as Row[]
      ).map(toLogChunk),
    latestLogAttempt: async (workflowId, runNumber, jobId) =>
      (c.q('latestLogAttempt').get(workflowId, runNumber, jobId) as { attempt: number | null }).attempt,
    listWorkers: async (page) => (c.q('listWorkers').all(page?.limit ?? -1, page?.offset ?? 0) as Row[]).map(toWorker),
    getWorker: async (workerId) => {
      const row = c.q('getWorker').get(workerId) as Row | undefined;
      return row ? toWorker(row) : null;
    },
    labelSetsSince: async (afterSeq) =>
      (c.q('labelSetsSince').all(afterSeq) as Array<{ seq: number; key: string; labels: string }>).map((r) => ({
        seq: r.seq,
        key: r.key,
        labels: JSON.parse(r.labels) as string[],
      })),
    activeJobCounts: async () => c.q('activeJobCounts').all() as ActiveJobCount[],
    jobGroupHolders: async (groups) => (groups.length === 0 ? [] : (c.q('jobGroupHolders').all(JSON.stringify(groups)) as JobGroupHolder[])),
    dueSchedules: async (nowMs, limit) => (c.q('dueSchedules').all(nowMs, limit) as Row[]).map(toWorkflow),
    activeRuns: async (workflowId) => (c.q('activeRuns').all(workflowId, workflowId) as Row[]).map(toRun),
    queuedWorkflows: async (limit) => (c.q('queuedWorkflows').all(limit) as Array<{ workflow_id: string }>).map((r) => r.workflow_id),
  };
}
