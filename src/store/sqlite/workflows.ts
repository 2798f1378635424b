import type { WorkflowRecord } from '../store.js';
import { schedulesColumn, toWorkflow, type Row } from '../rows.js';
import type { Conn } from './connection.js';
import { replaceTriggers } from './triggers.js';

/** Workflows as synchronous writes (see writes.ts). */

function workflowRow(rec: WorkflowRecord): Row {
  return { ...rec, definition: JSON.stringify(rec.definition), schedules: schedulesColumn(rec.definition), next_fire_at_ms: rec.next_fire_at_ms ?? null };
}

export function createWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'exists' {
  if (c.q('insertWorkflow').run(workflowRow(rec)).changes !== 1) return 'exists';
  replaceTriggers(c, rec);
  return 'created';
}

/** Creates, or replaces the definition in place (run history and latest_run stay) when it changed. */
export function saveWorkflow(c: Conn, rec: WorkflowRecord): 'created' | 'updated' | 'unchanged' {
  const row = c.q('getWorkflow').get(rec.id) as Row | undefined;
  if (!row) {
    c.q('insertWorkflow').run(workflowRow(rec));
    replaceTriggers(c, rec);
    return 'created';
  }
  const existing = toWorkflow(row);
  if (existing.hash === rec.hash && existing.source === rec.source) return 'unchanged';
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

