/**
 * `notify:` of a workflow (README "Notifications"): the webhooks told when one of its runs ends.
 * `[{ on: [failure, success, cancelled], webhook: URL, secret?: NAME, format?: json | slack }]`.
 */
import { SECRET_NAME_PATTERN } from '../domain/expressions.js';
import { DEFAULT_NOTIFY_ON, NOTIFY_FORMATS, NOTIFY_ON, type NotifyFormat, type NotifyOn, type NotifyTarget, webhookSecretName, webhookUrlProblem } from '../domain/notify.js';
import { checkKeys, child, describe, isAbsent, isPlainObject, type At } from './values.js';

const NOTIFY_KEYS = ['on', 'webhook', 'secret', 'format'] as const;
/** More would be a mailing list; a workflow that needs it can point one webhook at a relay. */
export const MAX_NOTIFY_TARGETS = 10;
const SECRET_NAME = new RegExp(`^${SECRET_NAME_PATTERN}$`);

/** Spellings of neighbouring systems, and what they are here. */
const ON_HINTS: Readonly<Record<string, string>> = {
  failed: "write 'failure' (a run that ended failed)",
  fail: "write 'failure'",
  error: "write 'failure'",
  succeeded: "write 'success'",
  passed: "write 'success'",
  canceled: "write 'cancelled'",
  completed: 'list the ends to hear of: [failure, success, cancelled]',
  always: 'list the ends to hear of: [failure, success, cancelled]',
};

/** Undefined when absent or empty, so that a definition without notifications keeps its shape and hash. */
export function readNotify(value: unknown, at: At): NotifyTarget[] | undefined {
  if (isAbsent(value)) return undefined;
  const items = isPlainObject(value) ? [value] : value;
  if (!Array.isArray(items)) {
    at.issues.add(at.job, at.field, `must be a list of {on, webhook, secret?, format?}, got ${describe(value)}`);
    return undefined;
  }
  if (items.length > MAX_NOTIFY_TARGETS) {
    at.issues.add(at.job, at.field, `has ${items.length} entries; at most ${MAX_NOTIFY_TARGETS} are allowed`);
    return undefined;
  }
  const out: NotifyTarget[] = [];
  items.forEach((item, i) => {
    const t = readTarget(item, isPlainObject(value) ? at : child(at, i));
    if (t) out.push(t);
  });
  return out.length > 0 ? out : undefined;
}

function readTarget(value: unknown, at: At): NotifyTarget | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping {on, webhook, secret?, format?}, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, NOTIFY_KEYS, (key, message) => at.issues.add(at.job, `${at.field}.${key}`, message), {
    url: 'webhook',
    webhook_url: 'webhook',
    endpoint: 'webhook',
    slack: 'webhook',
    if: 'on',
    when: 'on',
    events: 'on',
    types: 'on',
    signing_secret: 'secret',
    secret_name: 'secret',
    hmac: 'secret',
  });
  const webhook = readWebhook(value.webhook, child(at, 'webhook'));
  const on = readOn(value.on, child(at, 'on'));
  const secret = readSecretName(value.secret, child(at, 'secret'));
  const format = readFormat(value.format, child(at, 'format'));
  if (webhook === undefined || on === undefined || secret === null || format === null) return undefined;
  const t: NotifyTarget = { on, webhook };
  if (secret !== undefined) t.secret = secret;
  if (format !== undefined) t.format = format;
  return t;
}

function readWebhook(value: unknown, at: At): string | undefined {
  if (isAbsent(value)) {
    at.issues.add(at.job, at.field, 'is required: the http(s) URL to POST to, or ${{ secrets.NAME }} naming a secret that holds it');
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') {
    at.issues.add(at.job, at.field, `must be an http(s) URL, got ${describe(value)}`);
    return undefined;
  }
  if (webhookSecretName(value) !== null) return value;
  if (value.includes('${{')) {
    at.issues.add(at.job, at.field, 'may be a URL written out, or a whole ${{ secrets.NAME }} naming a secret that holds the URL; no other expression and no mix of both');
    return undefined;
  }
  const problem = webhookUrlProblem(value);
  if (problem !== null) {
    at.issues.add(at.job, at.field, problem);
    return undefined;
  }
  return value;
}

/** The ends to hear of, in NOTIFY_ON order; absent: DEFAULT_NOTIFY_ON. */
function readOn(value: unknown, at: At): NotifyOn[] | undefined {
  if (isAbsent(value)) return [...DEFAULT_NOTIFY_ON];
  const items = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(items) || items.length === 0) {
    at.issues.add(at.job, at.field, `must be a list of ${NOTIFY_ON.join(', ')}, got ${Array.isArray(items) ? 'an empty list' : describe(value)}`);
    return undefined;
  }
  const seen = new Set<NotifyOn>();
  let ok = true;
  items.forEach((item, i) => {
    if (typeof item === 'string' && (NOTIFY_ON as readonly string[]).includes(item)) {
      seen.add(item as NotifyOn);
      return;
    }
    ok = false;
    const hint = typeof item === 'string' ? ON_HINTS[item.toLowerCase()] : undefined;
    at.issues.add(at.job, typeof value === 'string' ? at.field : `${at.field}[${i}]`, `must be one of ${NOTIFY_ON.join(', ')}, got ${describe(item)}${hint ? `: ${hint}` : ''}`);
  });
  return ok ? NOTIFY_ON.filter((o) => seen.has(o)) : undefined;
}

/** Undefined: absent; null: refused (reported). */
function readSecretName(value: unknown, at: At): string | undefined | null {
  if (isAbsent(value)) return undefined;
  if (typeof value === 'string' && webhookSecretName(value) !== null) {
    at.issues.add(at.job, at.field, `names the secret itself: write ${webhookSecretName(value)}, not an expression`);
    return null;
  }
  if (typeof value !== 'string' || !SECRET_NAME.test(value)) {
    at.issues.add(at.job, at.field, `must name a secret (letters, digits and underscores, not starting with a digit; set it with \`weft secret set NAME\`), got ${describe(value)}`);
    return null;
  }
  return value;
}

function readFormat(value: unknown, at: At): NotifyFormat | undefined | null {
  if (isAbsent(value)) return undefined;
  if (typeof value !== 'string' || !(NOTIFY_FORMATS as readonly string[]).includes(value)) {
    at.issues.add(at.job, at.field, `must be one of ${NOTIFY_FORMATS.join(', ')} (absent: slack for a hooks.slack.com URL, else json), got ${describe(value)}`);
    return null;
  }
  return value as NotifyFormat;
}
