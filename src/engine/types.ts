import type { Logger } from 'pino';
import type { JobChange, Store } from '../store/store.js';

/** The engine's options, its events and what its callers pass it (src/engine/engine.ts). */

export interface EngineEvents {
  job: [JobChange];
  logs: [JobChange];
  /** Changes may have been missed (events from other servers were cut off): look again at everything. */
  resync: [];
  /** A workflow's definition was created or changed (its jobs' changes come as `job`). */
  workflow: [string];
}

export interface ClaimRequest {
  worker_id: string;
  labels: string[];
  lease_ttl_secs?: number;
}

export interface ClaimWait {
  /** How long a claim that finds nothing may wait for a job (0: answer at once). */
  waitMs?: number;
  /** Aborts the wait (the client went away). */
  signal?: AbortSignal;
}

export interface EngineOptions {
  store: Store;
  logger: Logger;
  now?: () => number;
  /** A worker unseen for longer than this is shown `offline`. */
  workerOfflineAfterMs?: number;
  /**
   * How often waiting claims look again on their own, for jobs queued by another process (which
   * raises no event here). Default 1000.
   */
  claimSweepMs?: number;
}
