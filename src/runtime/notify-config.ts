/**
 * The notification settings (README "Notifications", "Configuration"): NOTIFY_WEBHOOK, NOTIFY_ON,
 * NOTIFY_SECRET, NOTIFY_TIMEOUT_SECS, NOTIFY_RETRY_SECS, and PUBLIC_URL, the address the dashboard
 * links of notifications point to.
 */
import { SECRET_NAME_PATTERN } from '../domain/expressions.js';
import { DEFAULT_NOTIFY_ON, DEFAULT_RETRY_POLICY, NOTIFY_ON, webhookUrlProblem, type NotifyOn } from '../domain/notify.js';
import { claimMsFor, NOTIFY_DEFAULTS, type NotifySettings } from '../engine/notifications.js';
import { VERSION } from '../version.js';
import { ConfigError, envNumber, type Env } from './env.js';

export interface NotifyConfig {
  /** NOTIFY_WEBHOOK: told of every workflow's run ends that NOTIFY_ON names; null: none. */
  webhook: string | null;
  on: NotifyOn[];
  /** NOTIFY_SECRET: the name of the secret (`weft secret set NAME`) that signs what NOTIFY_WEBHOOK gets. */
  secret: string | null;
  timeoutMs: number;
  /** The first retry's delay; each next one doubles, up to an hour. */
  retryBaseMs: number;
}

export function loadNotifyConfig(env: Env): NotifyConfig {
  const webhook = env.NOTIFY_WEBHOOK?.trim() || null;
  if (webhook !== null) {
    const problem = webhookUrlProblem(webhook);
    if (problem !== null) throw new ConfigError(`NOTIFY_WEBHOOK ${problem}`);
  }
  const secret = env.NOTIFY_SECRET?.trim() || null;
  if (secret !== null && !new RegExp(`^${SECRET_NAME_PATTERN}$`).test(secret)) {
    throw new ConfigError(`NOTIFY_SECRET="${secret}" is not valid: name a secret (letters, digits and _, not starting with a digit) set with \`weft secret set NAME\``);
  }
  return {
    webhook,
    on: notifyOn(env),
    secret,
    timeoutMs: Math.round(envNumber(env, 'NOTIFY_TIMEOUT_SECS', 10, { min: 0.1, max: 600 }) * 1000),
    retryBaseMs: Math.round(envNumber(env, 'NOTIFY_RETRY_SECS', 10, { min: 0.01, max: 3600 }) * 1000),
  };
}

function notifyOn(env: Env): NotifyOn[] {
  const raw = env.NOTIFY_ON?.trim();
  if (!raw) return [...DEFAULT_NOTIFY_ON];
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = items.filter((s) => !(NOTIFY_ON as readonly string[]).includes(s));
  if (bad.length > 0 || items.length === 0) {
    throw new ConfigError(`NOTIFY_ON="${raw}" is not valid: list some of ${NOTIFY_ON.join(', ')}, separated by commas`);
  }
  return NOTIFY_ON.filter((o) => items.includes(o));
}

/** PUBLIC_URL: an http(s) address without query or fragment, kept without a trailing slash; null when unset. */
export function loadPublicUrl(env: Env): string | null {
  const raw = env.PUBLIC_URL?.trim();
  if (!raw) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_URL="${raw}" is not valid: give the address people open the dashboard at, as https://weft.example.com`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
    throw new ConfigError(`PUBLIC_URL="${raw}" is not valid: an http or https address without credentials, query or fragment`);
  }
  return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
}

/** The engine's notification settings from the server's (src/engine/notifications.ts). */
export function notifySettings(notify: NotifyConfig, publicUrl: string | null, retainDays: number | null): Partial<NotifySettings> {
  return {
    webhook: notify.webhook,
    on: notify.on,
    secret: notify.secret,
    publicUrl,
    timeoutMs: notify.timeoutMs,
    claimMs: claimMsFor(notify.timeoutMs),
    retry: { ...DEFAULT_RETRY_POLICY, baseMs: notify.retryBaseMs, maxMs: Math.max(DEFAULT_RETRY_POLICY.maxMs, notify.retryBaseMs) },
    // Kept 30 days, or as long as runs are when RETAIN_DAYS is shorter.
    retainMs: Math.min(NOTIFY_DEFAULTS.retainMs, retainDays === null ? Infinity : retainDays * 86_400_000),
    userAgent: `weft/${VERSION}`,
  };
}
