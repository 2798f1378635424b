/**
 * Runs started from outside (README "Triggers and notifications", triggers.ts): the event a run keeps,
 * the delivery keys that make a start happen once, and the listener index. Part of QUERIES
 * (queries.ts); the parameters of each statement are listed above it.
 */
export const TRIGGER_QUERIES = {
  /** ? workflow_id, ? run_number, ? payload (JSON text) */
  insertRunEvent: `INSERT INTO run_events (workflow_id, run_number, payload) VALUES (?, ?, ?)`,
  /** ? workflow_id, ? run_number */
  getRunEvent: `SELECT payload FROM run_events WHERE workflow_id = ? AND run_number = ?`,
  /** ? workflow_id, ? delivery_key, ? run_number, ? created_at_ms */
  insertDelivery: `INSERT INTO run_deliveries (workflow_id, delivery_key, run_number, created_at_ms) VALUES (?, ?, ?, ?)`,
  /** The run a delivery key started, through the primary key. ? workflow_id, ? delivery_key */
  deliveredRun: `SELECT r.* FROM run_deliveries d CROSS JOIN runs r ON r.workflow_id = d.workflow_id AND r.run_number = d.run_number
    WHERE d.workflow_id = ? AND d.delivery_key = ?`,
  /** Who listens: a primary-key range. ? kind, ? key */
  listeners: `SELECT workflow_id FROM workflow_triggers WHERE kind = ? AND key = ? ORDER BY workflow_id`,
  /** ? workflow_id */
  deleteWorkflowTriggers: `DELETE FROM workflow_triggers WHERE workflow_id = ?`,
  /** ? kind, ? key, ? workflow_id */
  insertWorkflowTrigger: `INSERT INTO workflow_triggers (kind, key, workflow_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
} as const;
