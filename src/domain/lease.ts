/** README "How a run works": a lease is expired the moment now > last renewal + ttl. */
export function leaseExpiresAt(renewedAtMs: number, ttlSecs: number): number {
  return renewedAtMs + ttlSecs * 1000;
}

export function isLeaseExpired(expiresAtMs: number, nowMs: number): boolean {
  return nowMs > expiresAtMs;
}

/**
 * Whether a lease call made with token `holder` may act on a lease claimed with token `tokenName`
 * (README "Access tokens": a lease is bound to the token that claimed it). A null `holder` is a call
 * on a server without tokens; a null `tokenName` is a lease claimed without one (tokens off then, or
 * granted before leases recorded their token): neither is bound.
 */
export function leaseUsableBy(tokenName: string | null, holder: string | null | undefined): boolean {
  return holder == null || tokenName === null || tokenName === holder;
}

export const DEFAULT_LEASE_TTL_SECS = 30;
export const MAX_LEASE_TTL_SECS = 86_400;



/**
 * A new lease id: a UUID in the version 7 layout (RFC 9562): the first 48 bits are the time in
 * milliseconds, the rest random (74 bits, so an id is as hard to guess as ever). Ids made in the same
 * millisecond sort together, so the index entries a claim adds land on the same few B-tree pages of
 * the stores' lease-id indexes instead of a random page each (docs/performance.md "SQLite: the lease in
 * the job row"). Workers treat it as an opaque string (SPEC: `lease_id` is a string).
 */
export function newLeaseId(nowMs: number, randomUuid: () => string): string {
  const v4 = randomUuid();
  const t = Math.max(0, Math.floor(nowMs)).toString(16).padStart(12, '0').slice(-12);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${v4.slice(15)}`;
}
