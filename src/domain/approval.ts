/**
 * Approval gates (README "Approvals"): a job with `approval:` waits, once its needs are met, in the
 * state `awaiting_approval` until a person approves or rejects it, or its `timeout_secs` runs out.
 * Pure rules; the stores call them with the rows they hold.
 */
import type { ApprovalSpec } from './model.js';

export type { ApprovalSpec };

/** How a wait ended. `timed_out`: the reaper found it past its deadline (decided by no one). */
export const APPROVAL_DECISIONS = ['approved', 'rejected', 'timed_out'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** What a person may answer (the routes `approve` and `reject`). */
export type PersonDecision = Exclude<ApprovalDecision, 'timed_out'>;

/** `approval.message` is shown in lists and terminals: a few paragraphs at most. */
export const MAX_APPROVAL_MESSAGE_CHARS = 2000;
/** `approval.timeout_secs`: at most 30 days, the longest wait GitHub Actions environments allow. */
export const MAX_APPROVAL_TIMEOUT_SECS = 30 * 24 * 3600;
/** The optional comment of a decision. */
export const MAX_APPROVAL_COMMENT_CHARS = 2000;

/** A job's approval as a run holds it: the gate as defined, the wait, and the decision once made. */
export interface JobApproval extends ApprovalSpec {
  /** When the job started waiting; null until its needs are met. */
  requested_at_ms: number | null;
  /** When the wait times out; null without `timeout_secs` (or before the wait). */
  deadline_ms: number | null;
  decision: ApprovalDecision | null;
  /** The name of the token that decided; null when tokens are off, and for a timeout. */
  decided_by: string | null;
  decided_at_ms: number | null;
  comment: string | null;
}

/** The approval of a job of a new run: nothing asked, nothing decided yet. */
export function newApproval(spec: ApprovalSpec): JobApproval {
  return { message: spec.message, timeout_secs: spec.timeout_secs, requested_at_ms: null, deadline_ms: null, decision: null, decided_by: null, decided_at_ms: null, comment: null };
}

/** The approval of a job that starts waiting at `nowMs`. */
export function beginWait(a: JobApproval, nowMs: number): JobApproval {
  return {
    ...a,
    requested_at_ms: nowMs,
    deadline_ms: a.timeout_secs === null ? null : nowMs + a.timeout_secs * 1000,
    decision: null,
    decided_by: null,
    decided_at_ms: null,
    comment: null,
  };
}

/**
 * Marks each job that a decision just made ready with an approval gate (status `awaiting_approval`,
 * wait not begun) as waiting from `nowMs`. Changes the jobs in place.
 */
export function beginWaits(jobs: Iterable<{ status: string; approval?: JobApproval | null }>, nowMs: number): void {
  for (const j of jobs) {
    if (j.status === 'awaiting_approval' && j.approval && j.approval.requested_at_ms === null) j.approval = beginWait(j.approval, nowMs);
  }
}

/** Where a job goes once its needs are met and its condition holds: a gated job waits first. */
export function readyState(j: { approval?: unknown }): 'queued' | 'awaiting_approval' {
  return j.approval ? 'awaiting_approval' : 'queued';
}

/** A job that is an approval alone (no `run`): approving it ends it `success` at once. */
export function approvalOnly(j: { command: string }): boolean {
  return j.command === '';
}

/** The job's error after a reject (it ends `failed`, not retried). */
export function rejectedError(decidedBy: string | null, comment: string | null): string {
  return `approval rejected${decidedBy !== null ? ` by ${decidedBy}` : ''}${comment ? `: ${comment}` : ''}`;
}

/** The job's error after the wait timed out (it ends `failed`, not retried). */
export function approvalTimedOutError(timeoutSecs: number | null): string {
  return `approval timed out after ${timeoutSecs ?? 0}s with no decision`;
}
