/**
 * Notifications (README "Notifications"): when a run ends, who is told, in what form, and when a
 * delivery that failed is tried again. Pure rules; the deliveries themselves are the engine's
 * (src/engine/notifications.ts).
 */
import { SECRET_NAME_PATTERN } from './expressions.js';

// The shapes of a `notify:` entry live with the definition's (model.ts), which names them.
export { NOTIFY_FORMATS, NOTIFY_ON, type NotifyFormat, type NotifyOn, type NotifyTarget } from './model.js';
import type { NotifyFormat, NotifyOn } from './model.js';

/** Without `on:` (and without NOTIFY_ON), only failures are told, as GitHub's notifications default. */
export const DEFAULT_NOTIFY_ON: readonly NotifyOn[] = ['failure'];

/** The run end a target hears of, from the run's final state; null for a state that is no end. */
export function notifyOnOf(state: string): NotifyOn | null {
  switch (state) {
    case 'failed':
      return 'failure';
    case 'success':
      return 'success';
    case 'cancelled':
      return 'cancelled';
    default:
      return null;
  }
}

/** The longest webhook URL accepted (as browsers and most servers keep to). */
export const MAX_WEBHOOK_CHARS = 2048;

const SECRET_REFERENCE = new RegExp(`^\\$\\{\\{\\s*secrets\\.(${SECRET_NAME_PATTERN})\\s*\\}\\}$`);

/** The secret a webhook written as `${{ secrets.NAME }}` names; null for a URL written out. */
export function webhookSecretName(webhook: string): string | null {
  return SECRET_REFERENCE.exec(webhook)?.[1] ?? null;
}

/**
 * Why `url` cannot be a webhook, or null when it can: an absolute http or https URL, no longer than
 * MAX_WEBHOOK_CHARS, without whitespace or control characters. Never quotes the URL (it may come from
 * a secret).
 */
export function webhookUrlProblem(url: string): string | null {
  if (url.length > MAX_WEBHOOK_CHARS) return `is ${url.length} characters long; at most ${MAX_WEBHOOK_CHARS} are allowed`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return 'must not contain spaces or control characters';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an absolute URL (write it as https://host/path)';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `must be an http or https URL, not ${parsed.protocol.replace(/:$/, '')}`;
  if (parsed.hostname === '') return 'has no host';
  return null;
}

/** Slack's incoming webhooks (https://hooks.slack.com/services/…) take `{"text": …}`. */
export function isSlackWebhook(url: string): boolean {
  try {
    return new URL(url).hostname.toLowerCase() === 'hooks.slack.com';
  } catch {
    return false;
  }
}

/** The body's shape for a target: its own `format`, else Slack's for a Slack URL, else JSON. */
export function formatFor(url: string, format: NotifyFormat | null | undefined): NotifyFormat {
  return format ?? (isSlackWebhook(url) ? 'slack' : 'json');
}

/** Path segments this long are taken for tokens (Slack, Discord and Teams put theirs in the path). */
const TOKEN_SEGMENT_CHARS = 16;

/**
 * A webhook URL as readers of the notification list see it (docs/api.md "Notifications"): user and
 * password, every query value and every path segment of 16 characters or more become `***`, since
 * webhook URLs often carry their credential there. A secret reference is shown as written.
 */
export function maskedWebhook(url: string): string {
  if (webhookSecretName(url) !== null) return url;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '***';
  }
  const userinfo = u.username !== '' || u.password !== '' ? '***@' : '';
  const path = u.pathname
    .split('/')
    .map((seg) => (seg.length >= TOKEN_SEGMENT_CHARS ? '***' : seg))
    .join('/');
  const query = [...u.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=***`).join('&');
  return `${u.protocol}//${userinfo}${u.host}${path}${query ? `?${query}` : ''}`;
}

/** Retries of one notification: the first after `baseMs`, then doubling up to `maxMs`. */
export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  /** A notification older than this when an attempt fails is `failed` for good (24 h by default). */
  giveUpMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseMs: 10_000, maxMs: 3_600_000, giveUpMs: 24 * 3_600_000 };

/**
 * When the attempt after failed attempt number `attempts` (1 for the first) is due, or null when the
 * notification gives up: exponential backoff with jitter (each delay drawn between half and all of
 * the doubled base, so that servers that failed together do not come back together).
 */
export function nextAttemptAt(
  policy: RetryPolicy,
  attempts: number,
  createdAtMs: number,
  nowMs: number,
  random: () => number = Math.random,
): number | null {
  const full = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 40));
  const at = nowMs + Math.round(full / 2 + (random() * full) / 2);
  return at - createdAtMs > policy.giveUpMs ? null : at;
}

/** A job that failed, as a notification tells it. */
export interface FailedJobFact {
  job_id: string;
  name: string;
  /** How many attempts it took (1: it failed on its first). */
  attempts: number;
  error: string | null;
}

/** What a notification says (the JSON body; the Slack text tells the same facts). */
export interface NotificationPayload {
  event: 'run_ended';
  workflow_id: string;
  workflow_name: string;
  run_number: number;
  /** success, failed or cancelled. */
  status: string;
  /** What started the run (manual, schedule, rerun); null for a run from before runs recorded it. */
  trigger: string | null;
  started_at: string;
  ended_at: string;
  started_at_ms: number;
  ended_at_ms: number;
  duration_ms: number;
  /** The jobs that failed, at most MAX_FAILED_JOBS of them, each error at most MAX_ERROR_CHARS. */
  failed_jobs: FailedJobFact[];
  /** How many jobs failed in all (more than `failed_jobs` holds when the list was cut). */
  failed_jobs_total: number;
  /** The run in the dashboard; null when the server knows no address of its own (PUBLIC_URL). */
  url: string | null;
}

export const MAX_FAILED_JOBS = 20;
export const MAX_ERROR_CHARS = 1000;

/** A job's error cut to MAX_ERROR_CHARS, so that one long error cannot swell every delivery. */
export function shortError(error: string | null): string | null {
  if (error === null) return null;
  return error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error;
}

/** The run's page in the dashboard under `base` (README "Dashboard"). */
export function runLink(base: string | null, workflowId: string, runNumber: number): string | null {
  if (base === null) return null;
  return `${base.replace(/\/+$/, '')}/#/workflows/${encodeURIComponent(workflowId)}/runs/${runNumber}`;
}

/** Slack's mrkdwn wants &, < and > escaped in text; a link is written <url|label>. */
function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const STATUS_WORD: Record<string, string> = { success: 'succeeded', failed: 'failed', cancelled: 'was cancelled' };
const STATUS_MARK: Record<string, string> = { success: ':white_check_mark:', failed: ':x:', cancelled: ':no_entry_sign:' };

function seconds(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** The Slack message for a payload: the same facts, the run's number linked to the dashboard. */
export function slackText(p: NotificationPayload): string {
  const run = p.url ? `<${p.url}|run ${p.run_number}>` : `run ${p.run_number}`;
  const mark = STATUS_MARK[p.status];
  const trigger = p.trigger ? ` (${p.trigger})` : '';
  const lines = [`${mark ? `${mark} ` : ''}*${slackEscape(p.workflow_name)}* ${run} ${STATUS_WORD[p.status] ?? p.status} after ${seconds(p.duration_ms)}${trigger}`];
  for (const j of p.failed_jobs) {
    const err = j.error ? `: ${slackEscape(j.error.split('\n')[0]!.slice(0, 300))}` : '';
    lines.push(`• \`${slackEscape(j.job_id)}\` failed${j.attempts > 1 ? ` after ${j.attempts} attempts` : ''}${err}`);
  }
  if (p.failed_jobs_total > p.failed_jobs.length) lines.push(`• … and ${p.failed_jobs_total - p.failed_jobs.length} more failed jobs`);
  return lines.join('\n').trim();
}
