import type { CallChainRefusal, WorkflowRecord } from '../store.js';
import { callsOf } from '../../domain/calls.js';
import { schedulesColumn } from '../rows.js';
import { triggerRows } from '../../domain/triggers.js';
import { QUERIES } from './queries.js';
import { transaction, writeStatement, type Sql } from './tx.js';
import { checkCalls, saveCalls } from './calls.js';

/**
 * Workflows: each a single statement (QUERIES.createWorkflow, saveWorkflow), in a transaction with
 * the workflow's calls (README "Workflows calling workflows"): checked under the calls lock when the
 * definition calls anything, and recorded.
 */

const workflowParams = (rec: WorkflowRecord) => [
  rec.id, rec.name, rec.trigger, JSON.stringify(rec.definition), rec.source, rec.hash,
  rec.created_at_ms, rec.updated_at_ms, rec.latest_run, schedulesColumn(rec.definition), rec.next_fire_at_ms ?? null,
  // The listener index (README "Triggers and notifications"), kept in step by the same statement.
  triggerRows(rec.definition),
];

export async function createWorkflow(sql: Sql, rec: WorkflowRecord): Promise<'created' | 'exists' | CallChainRefusal> {
  if (callsOf(rec.definition).length === 0) {
    return (await writeStatement(sql, QUERIES.createWorkflow, workflowParams(rec))).length > 0 ? 'created' : 'exists';
  }
  return transaction(sql, async (q) => {
    // Taken ids first: a create of an existing id is `exists`, whatever it calls.
    if ((await q(QUERIES.workflowExists, [rec.id])).length > 0) return 'exists';
    const refused = await checkCalls(q, rec);
    if (refused) return refused;
    if ((await q(QUERIES.createWorkflow, workflowParams(rec))).length === 0) return 'exists';
    await saveCalls(q, rec);
    return 'created';
  });
}

export async function saveWorkflow(sql: Sql, rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged' | CallChainRefusal> {
  if (callsOf(rec.definition).length === 0) {
    const [row] = await writeStatement(sql, QUERIES.saveWorkflowCallingNothing, workflowParams(rec));
    if (!row) return 'unchanged';
    return row.created ? 'created' : 'updated';
  }
  return transaction(sql, async (q) => {
    const refused = await checkCalls(q, rec);
    if (refused) return refused;
    const [row] = await q(QUERIES.saveWorkflow, workflowParams(rec));
    if (!row) return 'unchanged';
    await saveCalls(q, rec);
    return row.created ? 'created' : 'updated';
  });
}
