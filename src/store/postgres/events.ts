import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { statement, type Sql } from './tx.js';

/**
 * Events between servers on one database over LISTEN/NOTIFY (docs/architecture.md "Events between
 * servers"). One connection per server listens, apart from the pool, so a busy pool never delays a
 * wake-up. When that connection is lost (PostgreSQL restarted, the network broke), it is opened again
 * with backoff, and once it listens again `onResync` tells the engine that messages may have been
 * missed meanwhile.
 */

export const CHANNEL = 'weft_events';

/** NOTIFY through the store's pool: delivered to listeners when it commits (at once, on its own). */
export async function publish(sql: Sql, payload: string): Promise<void> {
  await statement(sql, 'SELECT pg_notify($1, $2)', [CHANNEL, payload]);
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;

export async function listen(
  url: string,
  onMessage: (payload: string) => void,
  onResync: () => void,
  onError: (err: Error) => void,
): Promise<() => Promise<void>> {
  let closed = false;
  let reconnecting: Promise<void> | null = null;
  // `onnotify` is the driver's own hook for NOTIFY on a plain connection (its typed `listen` helper
  // re-listens once after a drop and gives up silently if that fails; this one keeps trying).
  const options = {
    max: 1,
    // The connection must stay open to receive anything: never close it for being idle or old.
    idle_timeout: 0,
    max_lifetime: 0,
    fetch_types: false,
    onnotice: () => {},
    onnotify: (channel: string, payload: string) => {
      if (channel === CHANNEL) onMessage(payload);
    },
    onclose: () => {
      if (!closed) reconnecting ??= relisten().finally(() => (reconnecting = null));
    },
  };
  const sql = postgres(url, options as unknown as postgres.Options<Record<string, postgres.PostgresType>>);

  const listenNow = () => sql.unsafe(`LISTEN ${CHANNEL}`);

  async function relisten(): Promise<void> {
    for (let wait = RETRY_MIN_MS; !closed; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
      try {
        await listenNow();
        if (!closed) onResync();
        return;
      } catch (err) {
        if (closed) return;
        onError(err as Error);
        await sleep(wait);
      }
    }
  }

  try {
    await listenNow();
  } catch (err) {
    closed = true;
    await sql.end({ timeout: 1 }).catch(() => {});
    throw err;
  }
  return async () => {
    closed = true;
    await reconnecting?.catch(() => {});
    await sql.end({ timeout: 2 }).catch(() => {});
  };
}
