import type { WorkerRecord } from '../store.js';
import { toWorker } from '../rows.js';
import { QUERIES } from './queries.js';
import { writeStatement, type Sql } from './tx.js';

/** The workers table; a lease call records its worker as seen itself (QUERIES.touchLeaseWorker). */

export async function registerWorker(sql: Sql, workerId: string, labels: readonly string[], nowMs: number): Promise<WorkerRecord> {
  const [row] = await writeStatement(sql, QUERIES.registerWorker, [workerId, JSON.stringify(labels), nowMs]);
  return toWorker(row!);
}

/** Workers gone quiet: see Store.pruneWorkers. One statement, so it holds its row locks only while it runs. */
export async function pruneWorkers(sql: Sql, seenBeforeMs: number, limit: number): Promise<number> {
  return (await writeStatement(sql, QUERIES.pruneWorkers, [seenBeforeMs, limit])).length;
}
