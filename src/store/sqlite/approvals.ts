import { approvalOnly, approvalTimedOutError, rejectedError, type ApprovalDecision } from '../../domain/approval.js';
import { endedJob } from '../../domain/conditions.js';
import type { DecideApprovalOutcome, DecideApprovalRequest, JobChange, JobRecord, ReapOutcome } from '../store.js';
import { change } from '../changes.js';
import { toJob, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { finishJobs, propagateEnd } from './settle.js';

/**
 * Approval gates (README "Approvals"), named as in the PostgreSQL store's approvals.ts: a person's
 * decision (decideApproval) and the reaper's timeout of waits (timeOutApprovals). The single writer
 * makes the read and the guarded update one step.
 */

export function decideApproval(c: Conn, req: DecideApprovalRequest): DecideApprovalOutcome {
  const row = c.q('getJob').get(req.workflow_id, req.run_number, req.job_id) as Row | undefined;
  if (!row) return { kind: 'not_found' };
  const job = toJob(row);
  if (job.status !== 'awaiting_approval') return { kind: 'not_waiting', job };
  const changes: JobChange[] = [];
  const after = settleApproval(c, job, req.decision, req.decided_by, req.comment, req.now_ms, changes);
  return { kind: 'decided', job: after, changes };
}

export function timeOutApprovals(c: Conn, nowMs: number, limit: number): ReapOutcome {
  const out: ReapOutcome = { changes: [], ended: [] };
  for (const row of c.q('dueApprovals').all(nowMs, limit) as Row[]) {
    out.ended.push(settleApproval(c, toJob(row), 'timed_out', null, null, nowMs, out.changes));
  }
  return out;
}

/**
 * Applies a decision to a job awaiting approval (the caller read it so in this transaction): approved
 * with a command, queued; otherwise ended, and what is below it decided as after any end
 * (docs/architecture.md "Conditions"), with the run's counters kept and the run settled if over.
 */
function settleApproval(
  c: Conn,
  job: JobRecord,
  decision: ApprovalDecision,
  decidedBy: string | null,
  comment: string | null,
  nowMs: number,
  changes: JobChange[],
): JobRecord {
  changes.push(change(job));
  if (decision === 'approved' && !approvalOnly(job)) {
    return toJob(c.q('approveJob').get({ row_id: job.row_id, now_ms: nowMs, decided_by: decidedBy, comment }) as Row);
  }
  const status = decision === 'approved' ? 'success' : 'failed';
  const error = decision === 'approved' ? null : decision === 'rejected' ? rejectedError(decidedBy, comment) : approvalTimedOutError(job.approval?.timeout_secs ?? null);
  const ended = toJob(
    c.q('endApproval').get({ row_id: job.row_id, status, error, decision, decided_by: decidedBy, comment, now_ms: nowMs }) as Row,
  );
  const { skipped } = propagateEnd(c, ended, [endedJob(ended)], nowMs, changes);
  finishJobs(c, ended, { finished: 1 + skipped, failed: status === 'failed' ? 1 : 0, cancelled: 0 }, nowMs);
  return ended;
}
