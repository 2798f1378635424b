import type { CallChainRefusal, WorkflowRecord } from '../store.js';
import { checkCalls, saveCalls } from './calls.js';
import { schedulesColumn, toWorkflow, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { replaceTriggers } from './triggers.js';

/** Workflows as synchronous writes (see writes.ts). */

function workflowRow(rec: WorkflowRecord): Row {
  return { ...rec, definition: JSON.stringify(rec.definition), schedules: schedulesColumn(rec.definition), next_fire_at_ms: rec.next_fire_at_ms ?? null };
}

export function createWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'exists' | CallChainRefusal {
  if (c.q('getWorkflow').get(rec.id)) return 'exists';
  // README "Workflows calling workflows": checked and recorded under the single writer.
  const refused = checkCalls(c, rec);
  if (refused) return refused;
  c.q('insertWorkflow').run(workflowRow(rec));
  replaceTriggers(c, rec);
  saveCalls(c, rec);
  return 'created';
}

/** Creates, or replaces the definition in place (run history and latest_run stay) when it changed. */
export function saveWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'updated' | 'unchanged' | CallChainRefusal {
  const row = c.q('getWorkflow').get(rec.id) as Row | undefined;
  if (row) {
    const existing = toWorkflow(row);
    if (existing.hash === rec.hash && existing.source === rec.source) return 'unchanged';
  }
  const refused = checkCalls(c, rec);
  if (refused) return refused;
  saveCalls(c, rec);
  if (!row) {
    c.q('insertWorkflow').run(workflowRow(rec));
    replaceTriggers(c, rec);
    return 'created';
  }
  c.q('updateWorkflowDefinition').run({
    id: rec.id,
    name: rec.name,
    trigger: rec.trigger,
    definition: JSON.stringify(rec.definition),
    source: rec.source,
    hash: rec.hash,
    updated_at_ms: rec.updated_at_ms,
    schedules: schedulesColumn(rec.definition),
    next_fire_at_ms: rec.next_fire_at_ms ?? null,
  });
  replaceTriggers(c, rec);
  return 'updated';
}

