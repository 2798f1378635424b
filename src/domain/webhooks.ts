/**
 * GitHub's webhook signature (README "Webhooks"): `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256
 * of the exact bytes of the body under the hook's secret. Compared in constant time on equal-length
 * buffers, so how long a refusal takes says nothing about how much of a forged signature was right.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';
const DIGEST_BYTES = 32;

/** The header value GitHub sends for `body` signed with `secret`. */
export function hubSignature(secret: string | Uint8Array, body: Uint8Array): string {
  return PREFIX + createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Whether `header` is the signature of `body` under `secret`. The digest is computed whatever the
 * header holds (a missing or malformed one is compared as zeros), so a refusal costs the same time.
 */
export function signatureMatches(header: string | undefined, secret: string | Uint8Array, body: Uint8Array): boolean {
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = parseSignature(header);
  const same = timingSafeEqual(expected, given ?? Buffer.alloc(DIGEST_BYTES));
  return given !== null && same;
}

function parseSignature(header: string | undefined): Buffer | null {
  if (header === undefined || !header.startsWith(PREFIX)) return null;
  const hex = header.slice(PREFIX.length);
  return /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : null;
}
