import { triggerRows, type TriggerKind } from '../../domain/triggers.js';
import type { RunRecord, StartRunRequest, StoreReads, WorkflowRecord } from '../store.js';
import { toRun, type Row } from '../rows.js';
import type { Conn } from './connection.js';

/**
 * Runs started from outside (README "Triggers and notifications"), the steps runs.ts and workflows.ts
 * take under SQLite's single writer: a delivery seen before, what a run started with keeps beside it,
 * the listener rows of a saved definition; and their reads.
 */

/** The run `key` started for the workflow before, or null: checked first in the start's transaction. */
export function deliveredRun(c: Conn, workflowId: string, key: string): RunRecord | null {
  const row = c.q('deliveredRun').get(workflowId, key) as Row | undefined;
  return row ? toRun(row) : null;
}

/** The run's event payload and delivery key, in the transaction that inserted the run. */
export function recordRunStart(c: Conn, workflowId: string, runNumber: number, req: StartRunRequest): void {
  if (req.event) c.q('insertRunEvent').run(workflowId, runNumber, req.event.payload);
  if (req.delivery_key) c.q('insertDelivery').run(workflowId, req.delivery_key, runNumber, req.now_ms);
}

/** The definition's listener rows replace the workflow's, in the transaction that saved it. */
export function replaceTriggers(c: Conn, rec: WorkflowRecord): void {
  c.q('deleteWorkflowTriggers').run(rec.id);
  for (const t of triggerRows(rec.definition)) c.q('insertWorkflowTrigger').run(t.kind, t.key, rec.id);
}

export function triggerReads(c: Conn): Pick<StoreReads, 'getRunEvent' | 'listeners'> {
  return {
    getRunEvent: async (workflowId: string, runNumber: number) => {
      const row = c.q('getRunEvent').get(workflowId, runNumber) as { payload: string } | undefined;
      return row ? row.payload : null;
    },
    listeners: async (kind: TriggerKind, key: string) => (c.q('listeners').all(kind, key) as Array<{ workflow_id: string }>).map((r) => r.workflow_id),
  };
}
