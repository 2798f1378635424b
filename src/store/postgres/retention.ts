import type { RunState } from '../../domain/model.js';
import type { DeleteLimits, DeleteWorkflowOutcome, PruneOutcome, PruneRequest, PrunedRun, RunKey } from '../store.js';
import { QUERIES } from './queries.js';
import { transaction, type Exec, type Row, type Sql } from './tx.js';

/**
 * Retention (README "Retention"): each call is one transaction that deletes at most a bounded number
 * of runs and log chunks, so its row locks are few and short; callers call again while there is more.
 * Lock order: see retention-queries.ts.
 */

interface Candidate {
  workflow_id: string;
  run_number: number;
  status: RunState;
  finished_at_ms: number;
}

interface Counted extends Candidate {
  jobs: number;
  log_chunks: number;
}

const keys = (runs: readonly RunKey[]) => [runs.map((r) => r.workflow_id), runs.map((r) => r.run_number)];
const key = (r: RunKey) => `${r.run_number}\u0000${r.workflow_id}`;

function toCandidate(row: Record<string, unknown>): Candidate {
  return {
    workflow_id: row.workflow_id as string,
    run_number: row.run_number as number,
    status: row.status as RunState,
    finished_at_ms: row.finished_at_ms as number,
  };
}

/** Up to `limit` candidates by either rule, oldest finished first (ties by workflow and run number). */
async function candidates(q: Exec, req: PruneRequest, limit: number, lock: boolean): Promise<Candidate[]> {
  const [byAge, byCount] = await Promise.all([
    req.finished_before_ms === null ? [] : q(lock ? QUERIES.pruneByAge : QUERIES.previewByAge, [req.finished_before_ms, limit]),
    req.retain_runs === null ? [] : q(lock ? QUERIES.pruneByCount : QUERIES.previewByCount, [req.retain_runs, limit]),
  ]);
  const found = new Map<string, Candidate>();
  for (const row of [...byAge, ...byCount]) {
    const c = toCandidate(row);
    found.set(key(c), c);
  }
  return [...found.values()].sort(
    (a, b) =>
      a.finished_at_ms - b.finished_at_ms ||
      (a.workflow_id < b.workflow_id ? -1 : a.workflow_id > b.workflow_id ? 1 : 0) ||
      a.run_number - b.run_number,
  );
}

async function counted(q: Exec, runs: readonly Candidate[]): Promise<Counted[]> {
  if (runs.length === 0) return [];
  const rows = await q(QUERIES.runCounts, keys(runs));
  return runs.map((r, i) => ({ ...r, jobs: rows[i]!.jobs as number, log_chunks: rows[i]!.log_chunks as number }));
}

const pruned = (r: Counted): PrunedRun => ({
  workflow_id: r.workflow_id,
  run_number: r.run_number,
  status: r.status,
  finished_at_ms: r.finished_at_ms,
  jobs: r.jobs,
  log_chunks: r.log_chunks,
});

/**
 * Deletes whole runs in order while their log chunks fit in `budget`; of the first run that does not
 * fit, deletes `budget` chunks and stops there. Answers how many runs were deleted whole, and that
 * partial run. The statements go out together, each after the one before (leases before their jobs,
 * jobs before their runs, for the foreign keys; a blob's chunks before the rows that name it, so that
 * the first statement still sees which runs name it).
 */
async function deleteWithin(
  q: Exec,
  runs: readonly Counted[],
  budget: number,
): Promise<{ whole: number; partial: PruneOutcome['partial']; stopped: boolean; unnamed: string[] }> {
  let whole = 0;
  while (whole < runs.length && runs[whole]!.log_chunks <= budget) budget -= runs[whole++]!.log_chunks;
  const stmts: Array<Promise<unknown>> = [];
  let unnamed: Promise<Row[]> | null = null;
  if (whole > 0) {
    const k = keys(runs.slice(0, whole));
    unnamed = q(QUERIES.runsUnnamedBlobs, k);
    stmts.push(unnamed, q(QUERIES.deleteRunsLogChunks, k), q(QUERIES.deleteRunsBlobs, k), q(QUERIES.deleteRunsArtifacts, k), q(QUERIES.deleteRunsLeases, k), q(QUERIES.deleteRunsJobs, k), q(QUERIES.deleteRuns, k));
  }
  const next = runs[whole];
  const some = next && budget > 0 ? q(QUERIES.deleteSomeRunLogChunks, [next.workflow_id, next.run_number, budget]) : null;
  await Promise.all([...stmts, some]);
  // The driver's result carries the number of rows a DELETE removed.
  const deleted = some ? ((await some) as unknown as { count: number }).count : 0;
  const partial = next && deleted > 0 ? { workflow_id: next.workflow_id, run_number: next.run_number, log_chunks: deleted } : null;
  const blobs = unnamed ? (await unnamed).map((r) => r.blob_id as string) : [];
  return { whole, partial, stopped: next !== undefined, unnamed: blobs };
}

/** What retention would delete now, without changing anything (a read-only transaction, no row locks). */
export async function previewPrune(sql: Sql, req: PruneRequest): Promise<PruneOutcome> {
  return transaction(
    sql,
    async (q) => {
      const found = await candidates(q, req, req.max_runs + 1, false);
      const runs = await counted(q, found.slice(0, req.max_runs));
      return { runs: runs.map(pruned), partial: null, more: found.length > req.max_runs };
    },
    { mode: 'ISOLATION LEVEL REPEATABLE READ READ ONLY' },
  );
}

export async function pruneRuns(sql: Sql, req: PruneRequest): Promise<PruneOutcome> {
  if (req.dry_run) return previewPrune(sql, req);
  return transaction(sql, async (q) => {
    const found = await candidates(q, req, req.max_runs + 1, true);
    const runs = await counted(q, found.slice(0, req.max_runs));
    const { whole, partial, stopped, unnamed } = await deleteWithin(q, runs, req.max_log_chunks);
    return { runs: runs.slice(0, whole).map(pruned), partial, more: stopped || found.length > req.max_runs, unnamed_blobs: unnamed };
  });
}

/**
 * The workflow row is locked first, as a start locks it, so no run starts meanwhile; then its runs,
 * oldest first. The latest run goes only in the call that deletes the workflow row too.
 */
export async function deleteWorkflow(sql: Sql, id: string, limits: DeleteLimits): Promise<DeleteWorkflowOutcome> {
  return transaction(sql, async (q): Promise<DeleteWorkflowOutcome> => {
    // Sent together: the read runs once the lock is held (as in startRun).
    const [, [wf]] = await Promise.all([q(QUERIES.lockWorkflow, [id]), q(QUERIES.latestRunOf, [id])]);
    if (!wf) return 'not_found';
    if ((await q(QUERIES.activeRuns, [id])).length > 0) return 'active';
    const found = (await q(QUERIES.runsOfWorkflow, [id, limits.max_runs + 1])).map(toCandidate);
    const runs = await counted(q, found.slice(0, limits.max_runs));
    const { stopped } = await deleteWithin(q, runs, limits.max_log_chunks);
    if (stopped || found.length > limits.max_runs) return 'more';
    const [gone] = await q(QUERIES.deleteWorkflow, [id]);
    // Its calls go with it (README "Workflows calling workflows"); calls to it stay, by id.
    if (gone) await Promise.all([q(QUERIES.deleteRunDefinitions, [id]), q(QUERIES.deleteCallEdges, [id])]);
    // Its id may be created again, and its runs numbered from 1 again (README "Notifications").
    if (gone) await q(QUERIES.deleteWorkflowNotifications, [id]);
    return gone ? 'deleted' : 'more';
  });
}
