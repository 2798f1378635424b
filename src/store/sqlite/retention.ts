import type { RunState } from '../../domain/model.js';
import type { DeleteLimits, DeleteWorkflowOutcome, PruneOutcome, PruneRequest, PrunedRun } from '../store.js';
import type { Row } from '../rows.js';
import { deleteRunArtifacts } from './artifacts.js';
import type { Conn } from './connection.js';

/**
 * Retention (README "Retention") as synchronous operations (see writes.ts). Each call deletes at
 * most a bounded number of runs and log chunks, so that it holds SQLite's one write lock, and the
 * batch it joins, for a short while only; callers call again while there is more.
 */

interface Candidate {
  workflow_id: string;
  run_number: number;
  status: RunState;
  finished_at_ms: number;
}

const key = (r: { workflow_id: string; run_number: number }) => `${r.run_number}\u0000${r.workflow_id}`;

/** Up to `limit` candidates by either rule, oldest finished first (ties by workflow and run number). */
function candidates(c: Conn, req: PruneRequest, limit: number): Candidate[] {
  const found = new Map<string, Candidate>();
  if (req.finished_before_ms !== null) {
    for (const r of c.q('pruneByAge').all(req.finished_before_ms, limit) as Candidate[]) found.set(key(r), r);
  }
  if (req.retain_runs !== null) {
    for (const r of c.q('pruneByCount').all(req.retain_runs, limit) as Candidate[]) found.set(key(r), r);
  }
  return [...found.values()].sort(
    (a, b) =>
      a.finished_at_ms - b.finished_at_ms ||
      (a.workflow_id < b.workflow_id ? -1 : a.workflow_id > b.workflow_id ? 1 : 0) ||
      a.run_number - b.run_number,
  );
}

const count = (c: Conn, name: 'countRunJobs' | 'countRunLogChunks', r: Candidate) =>
  (c.q(name).get(r.workflow_id, r.run_number) as { n: number }).n;

type Deleted = { done: true; jobs: number; log_chunks: number; unnamed_blobs: string[] } | { done: false; log_chunks: number };

/**
 * Deletes the run with its leases, jobs (their outputs and dependencies with them) and log chunks when
 * its chunks fit in `budget`; otherwise deletes `budget` of its chunks and leaves the rest for later.
 * Leases go before their jobs, and jobs before their run, for the foreign keys.
 */
function deleteRun(c: Conn, r: Candidate, budget: number): Deleted {
  const logs = count(c, 'countRunLogChunks', r);
  if (logs > budget) {
    const deleted = budget > 0 ? c.q('deleteSomeRunLogChunks').run({ workflow_id: r.workflow_id, run_number: r.run_number, limit: budget }).changes : 0;
    return { done: false, log_chunks: deleted };
  }
  c.q('deleteRunLogChunks').run(r.workflow_id, r.run_number);
  const unnamed = deleteRunArtifacts(c, r.workflow_id, r.run_number);
  c.q('deleteRunLeases').run(r.workflow_id, r.run_number);
  const jobs = c.q('deleteRunJobs').run(r.workflow_id, r.run_number).changes;
  c.q('deleteRun').run(r.workflow_id, r.run_number);
  return { done: true, jobs, log_chunks: logs, unnamed_blobs: unnamed };
}

const pruned = (r: Candidate, jobs: number, log_chunks: number): PrunedRun => ({
  workflow_id: r.workflow_id,
  run_number: r.run_number,
  status: r.status,
  finished_at_ms: r.finished_at_ms,
  jobs,
  log_chunks,
});

/** What retention would delete now, without changing anything (the store runs it as a read). */
export function previewPrune(c: Conn, req: PruneRequest): PruneOutcome {
  const found = candidates(c, req, req.max_runs + 1);
  const runs = found
    .slice(0, req.max_runs)
    .map((r) => pruned(r, count(c, 'countRunJobs', r), count(c, 'countRunLogChunks', r)));
  return { runs, partial: null, more: found.length > req.max_runs };
}

export function pruneRuns(c: Conn, req: PruneRequest): PruneOutcome {
  if (req.dry_run) return previewPrune(c, req);
  const found = candidates(c, req, req.max_runs + 1);
  const runs: PrunedRun[] = [];
  const unnamed: string[] = [];
  let budget = req.max_log_chunks;
  for (const r of found.slice(0, req.max_runs)) {
    const out = deleteRun(c, r, budget);
    if (!out.done) {
      const partial = out.log_chunks > 0 ? { workflow_id: r.workflow_id, run_number: r.run_number, log_chunks: out.log_chunks } : null;
      return { runs, partial, more: true, unnamed_blobs: unnamed };
    }
    budget -= out.log_chunks;
    runs.push(pruned(r, out.jobs, out.log_chunks));
    unnamed.push(...out.unnamed_blobs);
  }
  return { runs, partial: null, more: found.length > req.max_runs, unnamed_blobs: unnamed };
}

/**
 * Oldest runs first; the latest run goes only in the call that deletes the workflow row too, so a
 * workflow is never left without the run its status document names.
 */
export function deleteWorkflow(c: Conn, id: string, limits: DeleteLimits): DeleteWorkflowOutcome {
  const wf = c.q('getWorkflow').get(id) as Row | undefined;
  if (!wf) return 'not_found';
  if ((c.q('activeRuns').all(id, id) as Row[]).length > 0) return 'active';
  const runs = c.q('runsOfWorkflow').all(id, limits.max_runs + 1) as Candidate[];
  let budget = limits.max_log_chunks;
  for (const r of runs.slice(0, limits.max_runs)) {
    const out = deleteRun(c, r, budget);
    if (!out.done) return 'more';
    budget -= out.log_chunks;
  }
  if (runs.length > limits.max_runs) return 'more';
  c.q('deleteWorkflow').run(id);
  c.q('deleteRunDefinitions').run(id);
  // Its calls go with it (README "Workflows calling workflows"); calls to it stay, by id.
  c.q('deleteCallEdges').run(id);
  // Its id may be created again, and its runs numbered from 1 again (README "Notifications").
  c.q('deleteWorkflowNotifications').run(id);
  return 'deleted';
}
