/**
 * A gated job's approval in its panel (README "Approvals"): the message, and while the job waits the
 * Approve and Reject buttons with an optional comment; afterwards who decided, when and what they said.
 * The buttons are shown to everyone: the server decides who may press them, and its refusal (a token
 * without the approver or admin role) is shown as it words it.
 */
import { useState } from 'preact/hooks';
import type { JobView } from '../../protocol/wire.js';
import { enc, post } from '../api';
import { duration, stamp, useNow } from '../format';
import { ErrorLine } from './common';

const DECIDED: Record<string, string> = { approved: 'Approved', rejected: 'Rejected', timed_out: 'Timed out' };

export function ApprovalBox({ wf, run, job }: { wf: string; run: number | null; job: JobView }) {
  const a = job.approval!;
  const waiting = job.state === 'awaiting_approval';
  const now = useNow(waiting && a.deadline_ms !== null);
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const decide = async (verb: 'approve' | 'reject') => {
    if (run === null) return;
    setBusy(true);
    try {
      await post(`/api/workflows/${enc(wf)}/runs/${run}/jobs/${enc(job.id)}/${verb}`, comment.trim() ? { comment: comment.trim() } : {});
      // The live events bring the job's new state; nothing to reload here.
      setError(null);
      setComment('');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class={`approval${waiting ? ' waiting' : ''}`} aria-label="Approval">
      <h3>{waiting ? 'Waiting for approval' : 'Approval'}</h3>
      {a.message ? <p class="approval-message">{a.message}</p> : <p class="muted">No message.</p>}
      {waiting && (
        <>
          <p class="muted small">
            Waiting since {stamp(a.requested_at_ms)}
            {a.deadline_ms !== null && <> · fails in {duration(Math.max(0, a.deadline_ms - now)) || '0s'} without a decision</>}
          </p>
          <div class="decide">
            <input type="text" placeholder="Comment (optional)" aria-label="Comment on the decision" maxLength={2000} value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
            <button type="button" class="approve" disabled={busy} onClick={() => void decide('approve')}>
              Approve
            </button>
            <button type="button" class="reject" disabled={busy} onClick={() => void decide('reject')}>
              Reject
            </button>
          </div>
        </>
      )}
      {a.decision !== null && (
        <p class="decision" data-decision={a.decision}>
          <strong>{DECIDED[a.decision] ?? a.decision}</strong>
          {a.decided_by !== null && <> by {a.decided_by}</>}
          {a.decided_at_ms !== null && <> at {stamp(a.decided_at_ms)}</>}
          {a.comment && <>: “{a.comment}”</>}
        </p>
      )}
      {!waiting && a.decision === null && a.requested_at_ms === null && job.state !== 'cancelled' && <p class="muted small">Asked once the jobs it needs have ended.</p>}
      <ErrorLine error={error} />
    </section>
  );
}
