import type { WorkflowRecord } from '../store.js';
import { schedulesColumn } from '../rows.js';
import { triggerRows } from '../../domain/triggers.js';
import { QUERIES } from './queries.js';
import { writeStatement, type Sql } from './tx.js';

/** Workflows: each a single statement (QUERIES.createWorkflow, saveWorkflow). */

const workflowParams = (rec: WorkflowRecord) => [
  rec.id, rec.name, rec.trigger, JSON.stringify(rec.definition), rec.source, rec.hash,
  rec.created_at_ms, rec.updated_at_ms, rec.latest_run, schedulesColumn(rec.definition), rec.next_fire_at_ms ?? null,
  // The listener index (README "Triggers and notifications"), kept in step by the same statement.
  triggerRows(rec.definition),
];

export async function createWorkflow(sql: Sql, rec: WorkflowRecord): Promise<'created' | 'exists'> {
  return (await writeStatement(sql, QUERIES.createWorkflow, workflowParams(rec))).length > 0 ? 'created' : 'exists';
}

export async function saveWorkflow(sql: Sql, rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged'> {
  const [row] = await writeStatement(sql, QUERIES.saveWorkflow, workflowParams(rec));
  if (!row) return 'unchanged';
  return row.created ? 'created' : 'updated';
}
