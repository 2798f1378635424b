/**
 * One attempt of one notification (README "Notifications"): the body in its format, signed when a key
 * is given, POSTed with a time limit. What the attempt answers is worded for the notification list,
 * and never quotes the URL, which may hold a credential.
 */
import { createHmac } from 'node:crypto';
import { slackText, type NotificationPayload, type NotifyFormat } from '../domain/notify.js';

/** The headers of a delivery, as a receiver reads them. */
export const DELIVERY_HEADER = 'x-weft-delivery';
export const SIGNATURE_HEADER = 'x-weft-signature-256';
export const EVENT_HEADER = 'x-weft-event';

export interface Delivery {
  /** The delivery id: the same on every attempt. */
  id: string;
  url: string;
  format: NotifyFormat;
  /** The payload as stored: sent as it is in the JSON format, so every attempt sends the same bytes. */
  payload: string;
  /** The signing key; null: unsigned. */
  key: string | null;
}

export interface PostSettings {
  timeoutMs: number;
  userAgent: string;
  fetch: typeof fetch;
  /** Aborts the attempt (the server stops). */
  signal: AbortSignal;
}

export type Attempt = { ok: true; status: number } | { ok: false; error: string };

/** GitHub's form: `sha256=` and the hex HMAC-SHA256 of the raw body under the key. */
export function signature(key: string, body: string): string {
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
}

export function bodyOf(d: Pick<Delivery, 'format' | 'payload'>): string {
  if (d.format === 'json') return d.payload;
  return JSON.stringify({ text: slackText(JSON.parse(d.payload) as NotificationPayload) });
}

/** Most of a refusal's body kept in the error: enough to read a receiver's reason, not a page. */
const ERROR_BODY_CHARS = 200;

export async function post(d: Delivery, s: PostSettings): Promise<Attempt> {
  const body = bodyOf(d);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': s.userAgent,
    [EVENT_HEADER]: 'run_ended',
    [DELIVERY_HEADER]: d.id,
  };
  if (d.key !== null) headers[SIGNATURE_HEADER] = signature(d.key, body);
  const timeout = AbortSignal.timeout(s.timeoutMs);
  const signal = AbortSignal.any([timeout, s.signal]);
  try {
    // A redirect is not followed (as GitHub's webhooks): the body and its signature are for this URL.
    const res = await s.fetch(d.url, { method: 'POST', headers, body, redirect: 'manual', signal });
    const text = await readSome(res);
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    if (res.status >= 300 && res.status < 400) return { ok: false, error: `HTTP ${res.status}: the receiver redirects; redirects are not followed, give the final URL` };
    return { ok: false, error: `HTTP ${res.status}${text ? `: ${text}` : ''}` };
  } catch (err) {
    if (s.signal.aborted) return { ok: false, error: 'interrupted: the server stopped during the attempt' };
    if (timeout.aborted) return { ok: false, error: `no answer within ${s.timeoutMs / 1000} s` };
    return { ok: false, error: networkError(err).split(d.url).join('<the URL>') };
  }
}

/** The start of the answer's body, on one line, without control characters; the rest is discarded. */
async function readSome(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < ERROR_BODY_CHARS * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return flat.length > ERROR_BODY_CHARS ? `${flat.slice(0, ERROR_BODY_CHARS - 1)}…` : flat;
}

const NETWORK_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the receiver',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_BODY_TIMEOUT: 'no answer in time',
};

/** fetch's error, as its cause names it (fetch itself only says "fetch failed"). */
function networkError(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : null;
  if (code !== null) return `${NETWORK_WORDS[code] ?? 'request failed'} (${code})`;
  if (cause && typeof cause.message === 'string' && cause.message.includes('certificate')) return `TLS: ${cause.message}`;
  return `request failed: ${err instanceof Error ? err.message : String(err)}`;
}
