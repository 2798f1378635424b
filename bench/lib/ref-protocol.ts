/** Messages between bench/scenarios/reference.ts and its reference-queue children (bench/reference-drain.ts). */

/**
 * - `graphile`: graphile-worker with its defaults (batching off).
 * - `graphile-batched`: graphile-worker with the batching options its "Performance" page documents.
 * - `pgboss`: pg-boss with `concurrency` work() loops fetching `pgbossBatchSize` jobs each.
 */
export type RefKind = 'graphile' | 'graphile-batched' | 'pgboss';

export interface RefConfig {
  kind: RefKind;
  /** A fresh database of its own. */
  url: string;
  jobs: number;
  concurrency: number;
  pgbossBatchSize: number;
}

export interface RefResult {
  /** Jobs recorded complete in the database when the drain ended. */
  completed: number;
  /** Handler calls (a job may have run but not yet been recorded complete at a time-out). */
  executed: number;
  /** Longest pause between two handler calls: shows a drain that stalled on a polling interval. */
  maxGapMs: number;
  /** Wall-clock time (util.now()) the first job's handler ran. */
  firstStartAt: number | null;
  /** When the database first showed every job complete (polled every few ms once all had run). */
  lastCompleteAt: number;
  timedOut: boolean;
}

/** `go.deadlineAt`: wall-clock time after which the child stops waiting for the drain (the time budget). */
export type RefToChild = { type: 'start'; config: RefConfig } | { type: 'go'; deadlineAt: number } | { type: 'stop' };

export type RefFromChild =
  | { type: 'ready'; seedMs: number; pollBackendPid: number }
  | { type: 'result'; result: RefResult }
  | { type: 'fatal'; message: string };
