import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { StoreUnavailableError } from '../store/index.js';
import type { Store, StoreReads } from '../store/store.js';

/**
 * How the engine's loops ride out a database that is away for a while (docs/deploy.md "When
 * PostgreSQL goes away"): they warn, sparingly, and try again.
 */

/** How long a log follower keeps looking while the database is away before its stream ends. */
const FOLLOW_OUTAGE_MS = 10_000;
/** At most one warning per loop this often while the database is away, not one per failed try. */
const OUTAGE_WARN_EVERY_MS = 5_000;

export class OutageWarnings {
  private readonly warnedAt = new Map<string, number>();

  constructor(private readonly log: Logger) {}

  warn(loop: string, err: StoreUnavailableError): void {
    const now = Date.now();
    if (now - (this.warnedAt.get(loop) ?? -Infinity) < OUTAGE_WARN_EVERY_MS) return;
    this.warnedAt.set(loop, now);
    this.log.warn({ loop, reason: err.message }, `${loop}: store unavailable, trying again`);
  }
}

/** A read that looks again with backoff while the store is unavailable, for up to FOLLOW_OUTAGE_MS. */
export async function readThroughOutage<T>(
  store: Store,
  fn: (r: StoreReads) => Promise<T>,
  onOutage: (err: StoreUnavailableError) => void,
): Promise<T> {
  const giveUpAt = Date.now() + FOLLOW_OUTAGE_MS;
  for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
    try {
      return await store.read(fn);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || Date.now() + wait > giveUpAt) throw err;
      onOutage(err);
      await sleep(wait);
    }
  }
}
