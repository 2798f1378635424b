import type { WorkerRecord } from '../store.js';
import { toWorker, type Row } from '../rows.js';
import type { Conn } from './connection.js';

/** The workers table as synchronous writes (see writes.ts); a lease call records its worker as seen itself. */

export function registerWorker(c: Conn, workerId: string, labels: readonly string[], nowMs: number): WorkerRecord {
  return toWorker(c.q('upsertWorker').get(workerId, JSON.stringify(labels), nowMs, nowMs) as Row);
}

/** Workers gone quiet: see Store.pruneWorkers. */
export function pruneWorkers(c: Conn, seenBeforeMs: number, limit: number): number {
  return c.q('pruneWorkers').run(seenBeforeMs, limit).changes;
}
