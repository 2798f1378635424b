import { JOB_STATES, type JobState } from '../domain/model.js';

/**
 * The job `status` vocabulary existing workflow-graph clients parse (docs/protocol.md):
 * a strict enum there, so weft's own states are folded into it and shown in full in `state`.
 */
export const COMPAT_JOB_STATUSES = ['queued', 'running', 'success', 'failure', 'skipped', 'cancelled'] as const;
export type CompatJobStatus = (typeof COMPAT_JOB_STATUSES)[number];

const TO_COMPAT: Record<JobState, CompatJobStatus> = {
  // Waiting for upstream jobs reads as "not started yet" to those clients.
  pending: 'queued',
  // Waiting for a person's approval is "not started yet" too (README "Approvals").
  awaiting_approval: 'queued',
  queued: 'queued',
  running: 'running',
  success: 'success',
  failed: 'failure',
  skipped: 'skipped',
  cancelled: 'cancelled',
};

export function compatJobStatus(state: JobState): CompatJobStatus {
  return TO_COMPAT[state];
}

/**
 * The workflow list's `status` filter takes weft's states and the spellings older clients send
 * (`active` for a leased job, `failure` for a failed one). `queued` means weft's queued: a job that is
 * claimable, not one still waiting for its upstream jobs (that is `pending`).
 */
export const STATUS_FILTER_ALIASES: Readonly<Record<string, JobState>> = { active: 'running', failure: 'failed' };
export const STATUS_FILTER_VALUES: readonly string[] = [...JOB_STATES, ...Object.keys(STATUS_FILTER_ALIASES)];
export type StatusFilter = JobState | 'active' | 'failure';

export function parseStatusFilter(value: string): JobState {
  return STATUS_FILTER_ALIASES[value] ?? (value as JobState);
}
