/**
 * Conditional jobs (README "Workflow definitions", `if:`): when a job whose needs have all ended runs,
 * and what happens to the jobs below one that ended. Pure rules; the stores call them with the rows
 * they locked (docs/architecture.md "Conditions").
 */
import { JOB_CONDITIONS, type JobCondition, type JobState } from './model.js';
import { readyState } from './approval.js';

export { JOB_CONDITIONS, type JobCondition };

/** How a need ended, as a job sees it in `WEFT_NEEDS_<JOB>_RESULT` (GitHub Actions' `needs.<job>.result`). */
export type NeedResult = 'success' | 'failure' | 'skipped' | 'cancelled';

/** Needs that did not succeed, by job id; a need left out succeeded (so a plain run records nothing). */
export type NeedsResults = Record<string, NeedResult>;

/** Conditions a cancel leaves to run (README "How a run works"). */
export function runsAfterCancel(c: JobCondition): boolean {
  return c === 'always' || c === 'cancelled';
}

export function needResultOf(state: JobState): NeedResult {
  return state === 'failed' ? 'failure' : state === 'success' ? 'success' : state === 'cancelled' ? 'cancelled' : 'skipped';
}

/** `WEFT_NEEDS_<JOB>_RESULT`, with the job id cleaned as in `UPSTREAM_<JOB>_<KEY>` (README "The worker"). */
export function needsResultEnvName(jobId: string): string {
  return `WEFT_NEEDS_${envNamePart(jobId)}_RESULT`;
}

/** Upper-cased, every character outside [A-Za-z0-9] becomes `_`. */
export function envNamePart(s: string): string {
  return s.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
}

/** The part of a job row the rules read and change. */
export interface WaitingJob {
  job_id: string;
  status: JobState;
  condition: JobCondition;
  pending_needs: number;
  needs_results: NeedsResults;
  /** A need failed, or ended with a failure somewhere above it (GitHub's "any ancestor failed"). */
  failed_upstream: boolean;
  /** The run was cancelled while this job waited: `cancelled()` holds, and a second cancel stops it. */
  run_cancelled: boolean;
  dependents: readonly string[];
  error: string | null;
  /** An approval gate (README "Approvals"): once ready, the job waits for a decision instead of being queued. */
  approval?: unknown;
}

/** A job that just ended, whose dependents learn of it. */
export interface EndedJob {
  job_id: string;
  result: NeedResult;
  failed_upstream: boolean;
  dependents: readonly string[];
  /** What a `success()` dependent skipped because of it says (the failure it descends from). */
  skip_reason: string;
}

function failedReason(jobId: string): string {
  return `upstream job "${jobId}" failed`;
}

/** Why a `success()` job is skipped below `job`, which ended `result`. */
function reasonBelow(job: { job_id: string; error: string | null }, result: NeedResult, failedUpstream: boolean): string {
  if (result === 'failure') return failedReason(job.job_id);
  if (result === 'skipped' && job.error) return job.error;
  if (result === 'cancelled') return `upstream job "${job.job_id}" was cancelled`;
  return failedUpstream ? `a job above upstream job "${job.job_id}" failed` : `upstream job "${job.job_id}" was skipped`;
}

export function endedJob(job: { job_id: string; status: JobState; failed_upstream: boolean; dependents: readonly string[]; error: string | null }): EndedJob {
  const result = needResultOf(job.status);
  const failedUpstream = result === 'failure' || job.failed_upstream;
  return { job_id: job.job_id, result, failed_upstream: failedUpstream, dependents: job.dependents, skip_reason: reasonBelow(job, result, failedUpstream) };
}

/** Whether a job whose needs have all ended runs (README "Workflow definitions", `if:`). */
export function conditionHolds(j: Pick<WaitingJob, 'condition' | 'needs_results' | 'failed_upstream' | 'run_cancelled'>): boolean {
  switch (j.condition) {
    case 'success':
      return !j.run_cancelled && !j.failed_upstream && Object.keys(j.needs_results).length === 0;
    case 'failure':
      return !j.run_cancelled && j.failed_upstream;
    case 'always':
      return true;
    case 'cancelled':
      return j.run_cancelled;
  }
}

function falseReason(c: JobCondition): string {
  switch (c) {
    case 'failure':
      return 'if: failure() is false: no upstream job failed';
    case 'cancelled':
      return 'if: cancelled() is false: the run was not cancelled';
    default:
      return `if: ${c}() is false`;
  }
}

/**
 * Tells the pending jobs below `ended` that those jobs ended, and so on down for each job that ends in
 * turn (skipped). `lookup` answers a job's row (the caller has it locked); only `pending` ones move.
 * A `success()` job is skipped as soon as a need ends other than `success` (it could never run); any
 * other job counts the need as ended, records its result, and once none is left is queued (or, with an approval gate, left awaiting approval) when its
 * condition holds and skipped otherwise. Answers the jobs changed, in the order they were reached;
 * each is the same object `lookup` gave, updated in place.
 */
export function propagate(ended: readonly EndedJob[], lookup: (jobId: string) => WaitingJob | undefined): WaitingJob[] {
  const changed = new Set<WaitingJob>();
  const todo = [...ended];
  for (let e = todo.shift(); e !== undefined; e = todo.shift()) {
    for (const id of e.dependents) {
      const d = lookup(id);
      if (!d || d.status !== 'pending') continue;
      changed.add(d);
      if (e.result !== 'success') d.needs_results = { ...d.needs_results, [e.job_id]: e.result };
      d.failed_upstream ||= e.failed_upstream;
      if (d.condition === 'success' && (e.result !== 'success' || e.failed_upstream)) {
        d.status = 'skipped';
        d.error = e.skip_reason;
      } else {
        d.pending_needs -= 1;
        if (d.pending_needs > 0) continue;
        if (conditionHolds(d)) {
          d.status = readyState(d);
          continue;
        }
        d.status = 'skipped';
        d.error = falseReason(d.condition);
      }
      todo.push(endedJob(d));
    }
  }
  return [...changed];
}

/**
 * What a cancel does to a run's unfinished jobs (README "How a run works"): `always()` and
 * `cancelled()` jobs are spared, once (a second cancel stops them too), and marked `run_cancelled`;
 * the rest are cancelled. `ended`: the cancelled jobs, to tell the spared jobs below them (propagate).
 */
export function planCancel<J extends WaitingJob>(unfinished: readonly J[]): { cancelled: J[]; spared: J[]; ended: EndedJob[] } {
  const cancelled: J[] = [];
  const spared: J[] = [];
  for (const j of unfinished) {
    // A wait for approval ends with the cancel whatever the condition (README "Approvals").
    if (runsAfterCancel(j.condition) && !j.run_cancelled && j.status !== 'awaiting_approval') {
      j.run_cancelled = true;
      spared.push(j);
    } else {
      cancelled.push(j);
    }
  }
  const ended = cancelled.map((j) => ({ ...endedJob({ ...j, status: 'cancelled' as const }) }));
  return { cancelled, spared, ended };
}
