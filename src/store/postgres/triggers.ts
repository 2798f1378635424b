import type { TriggerKind } from '../../domain/triggers.js';
import type { RunRecord, StartRunRequest, StoreReads } from '../store.js';
import { toRun } from '../rows.js';
import { QUERIES } from './queries.js';
import type { Exec } from './tx.js';

/**
 * Runs started from outside (README "Triggers and notifications"), the steps runs.ts takes in the
 * transaction that starts a run, under the workflow row's lock: a delivery seen before, and what a run
 * started with keeps beside it; and their reads. The listener rows of a saved definition are CTEs of
 * the statements that save it (trigger-queries.ts keepTriggers).
 */

/**
 * The run `key` started for the workflow before, or null. Sent right behind lockWorkflow, so that it
 * runs once the lock is held: of several servers starting the same delivery, each after the first
 * reads the first's key (run numbers are gapless by the same reasoning, see latestRunOf).
 */
export async function deliveredRun(q: Exec, workflowId: string, key: string): Promise<RunRecord | null> {
  const [row] = await q(QUERIES.deliveredRun, [workflowId, key]);
  return row ? toRun(row) : null;
}

/** The run's event payload and delivery key, in the transaction that inserted it; nothing to send without either. */
export function recordRunStart(q: Exec, runNumber: number, req: StartRunRequest): Promise<unknown> | null {
  if (!req.event && !req.delivery_key) return null;
  return q(QUERIES.recordRunStart, [req.workflow_id, runNumber, req.event?.payload ?? null, req.delivery_key ?? null, req.now_ms]);
}

export function triggerReads(q: Exec): Pick<StoreReads, 'getRunEvent' | 'listeners'> {
  return {
    getRunEvent: async (workflowId: string, runNumber: number) => {
      const [row] = await q(QUERIES.getRunEvent, [workflowId, runNumber]);
      return row ? (row.payload as string) : null;
    },
    listeners: async (kind: TriggerKind, key: string) => (await q(QUERIES.listeners, [kind, key])).map((r) => r.workflow_id as string),
  };
}
