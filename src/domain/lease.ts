/** README "How a run works": a lease is expired the moment now > last renewal + ttl. */
export function leaseExpiresAt(renewedAtMs: number, ttlSecs: number): number {
  return renewedAtMs + ttlSecs * 1000;
}

export function isLeaseExpired(expiresAtMs: number, nowMs: number): boolean {
  return nowMs > expiresAtMs;
}

export const DEFAULT_LEASE_TTL_SECS = 30;
export const MAX_LEASE_TTL_SECS = 86_400;


