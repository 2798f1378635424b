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


