import { approvalOnly, approvalTimedOutError, rejectedError, type ApprovalDecision } from '../../domain/approval.js';
import { endedJob } from '../../domain/conditions.js';
import type { DecideApprovalOutcome, DecideApprovalRequest, JobChange, JobRecord, ReapOutcome } from '../store.js';
import { change } from '../changes.js';
import { toJob } from '../rows.js';
import { QUERIES } from './queries.js';
import { propagateEnd, settleRunsOf } from './settle.js';
import { statement, transaction, type Exec, type Sql } from './tx.js';

/**
 * Approval gates (README "Approvals"), named as in the SQLite store's approvals.ts: a person's decision
 * (decideApproval) and the reaper's timeout of waits (timeOutApprovals). Each decision is one
 * transaction that locks the job's row first, then what is below it in row order; the run is settled
 * after COMMIT (docs/architecture.md "Run settlement"). Of decisions racing on one job, the first to
 * lock it decides; the others read its result and change nothing.
 */

export async function decideApproval(sql: Sql, req: DecideApprovalRequest): Promise<DecideApprovalOutcome> {
  const outcome = await transaction(sql, async (q): Promise<DecideApprovalOutcome> => {
    const [row] = await q(QUERIES.lockJobToDecide, [req.workflow_id, req.run_number, req.job_id]);
    if (!row) return { kind: 'not_found' };
    const job = toJob(row);
    if (job.status !== 'awaiting_approval') return { kind: 'not_waiting', job };
    return { kind: 'decided', ...(await settleApproval(q, job, req.decision, req.decided_by, req.comment, req.now_ms)) };
  });
  return outcome.kind === 'decided' ? settleRunsOf(sql, req.now_ms, outcome) : outcome;
}

/** Each due wait in a transaction of its own, locked and checked again, as the reaper's other sweeps do. */
export async function timeOutApprovals(sql: Sql, nowMs: number, limit: number): Promise<ReapOutcome> {
  const out: ReapOutcome = { changes: [], ended: [] };
  for (const { row_id } of await statement(sql, QUERIES.dueApprovals, [nowMs, limit])) {
    const settled = await transaction(sql, async (q) => {
      const [row] = await q(QUERIES.lockDueApproval, [row_id, nowMs]);
      return row ? await settleApproval(q, toJob(row), 'timed_out', null, null, nowMs) : null;
    });
    if (!settled) continue;
    out.changes.push(...(await settleRunsOf(sql, nowMs, settled)).changes);
    out.ended.push(settled.job);
  }
  return out;
}

/**
 * Applies a decision to a job awaiting approval, its row locked by the caller: approved with a command,
 * queued; otherwise ended, and what is below it locked (lockBelow) and decided as after any end
 * (docs/architecture.md "Conditions").
 */
async function settleApproval(
  q: Exec,
  job: JobRecord,
  decision: ApprovalDecision,
  decidedBy: string | null,
  comment: string | null,
  nowMs: number,
): Promise<{ job: JobRecord; changes: JobChange[] }> {
  if (decision === 'approved' && !approvalOnly(job)) {
    const [row] = await q(QUERIES.approveJob, [job.row_id, nowMs, decidedBy, comment]);
    return { job: toJob(row!), changes: [change(job)] };
  }
  const status = decision === 'approved' ? 'success' : 'failed';
  const error = decision === 'approved' ? null : decision === 'rejected' ? rejectedError(decidedBy, comment) : approvalTimedOutError(job.approval?.timeout_secs ?? null);
  // Sent together: the job's row is held already, then what is below it in row order.
  const [[row], below] = await Promise.all([
    q(QUERIES.endApproval, [job.row_id, status, error, decision, decidedBy, comment, nowMs]),
    job.dependents.length === 0 ? Promise.resolve([]) : q(QUERIES.lockBelow, [job.workflow_id, job.run_number, job.dependents]),
  ]);
  const ended = toJob(row!);
  const changed = await propagateEnd(q, [endedJob(ended)], below, nowMs);
  return { job: ended, changes: [change(ended), ...changed.map(change)] };
}
