import type { Logger } from 'pino';
import type { PersonDecision } from '../domain/approval.js';
import { WeftError } from '../protocol/errors.js';
import type { ApprovalResponse } from '../protocol/wire.js';
import type { JobChange, Store } from '../store/store.js';
import type { QueuedRuns } from './queued-runs.js';
import { workflowNotFound } from './reads.js';
import { jobViews } from './views.js';

/** What deciding needs of the engine: its store, clock and log, and where changes are told. */
export interface ApprovalContext {
  readonly store: Store;
  readonly now: () => number;
  readonly log: Logger;
  readonly queued: QueuedRuns;
  /** Durable changes, told to listeners (live events), waiting claims and other servers. */
  announce(changes: readonly JobChange[]): void;
}

/** Who decides and what they say. */
export interface Decider {
  /** The name of the calling token; null when tokens are off. */
  by: string | null;
  comment: string | null;
}

/**
 * A person's approve or reject of a job awaiting approval (README "Approvals", docs/api.md
 * "Approvals"). The store decides exactly once; this turns its outcome into an answer or a clear
 * refusal and announces the change (the live events show the job's new state).
 */
export class Approvals {
  constructor(private readonly ctx: ApprovalContext) {}

  /** `runNumber` absent: the workflow's latest run. */
  async decide(workflowId: string, runNumber: number | undefined, jobId: string, decision: PersonDecision, who: Decider): Promise<ApprovalResponse> {
    const { store } = this.ctx;
    const { wf, run } = await store.read(async (r) => {
      const wf = await r.getWorkflow(workflowId);
      if (!wf) throw workflowNotFound(workflowId);
      const run = runNumber ?? wf.latest_run;
      if (run < 1 || run > wf.latest_run || !(await r.getRun(workflowId, run))) {
        throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${runNumber ?? 'latest'} (latest is ${wf.latest_run || 'none'})`);
      }
      return { wf, run };
    });
    const outcome = await store.decideApproval({
      workflow_id: workflowId,
      run_number: run,
      job_id: jobId,
      decision,
      decided_by: who.by,
      comment: who.comment,
      now_ms: this.ctx.now(),
    });
    if (outcome.kind === 'not_found') {
      throw new WeftError('job_not_found', `run #${run} of workflow "${workflowId}" has no job "${jobId}"`);
    }
    const view = jobViews(wf, [outcome.job])[0]!;
    if (outcome.kind === 'not_waiting') {
      const how = outcome.job.approval ? whyNotWaiting(outcome.job.status, outcome.job.approval.decision) : 'it has no approval gate';
      throw new WeftError('job_not_awaiting_approval', `job "${jobId}" of run #${run} is not awaiting approval: it is ${outcome.job.status}${how ? ` (${how})` : ''}`, {
        state: outcome.job.status,
        approval: view.approval ?? null,
      });
    }
    this.ctx.announce(outcome.changes);
    this.ctx.log.info({ workflow_id: workflowId, run_number: run, job_id: jobId, decision, decided_by: who.by }, `job ${decision}`);
    await this.ctx.queued.after(outcome.changes);
    return { workflow_id: workflowId, run_number: run, decision, job: view };
  }
}

function whyNotWaiting(state: string, decision: string | null): string {
  if (decision !== null) return `already ${decision.replace('_', ' ')}`;
  if (state === 'pending') return 'its needs have not all ended yet';
  return '';
}
