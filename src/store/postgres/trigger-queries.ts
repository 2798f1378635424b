/**
 * Runs started from outside (README "Triggers and notifications", triggers.ts): the event a run keeps,
 * the delivery keys that make a start happen once, and the listener index. Part of QUERIES
 * (queries.ts); parameters are listed above each statement.
 */
export const TRIGGER_QUERIES = {
  /**
   * The run a delivery key started, through the primary key; sent after lockWorkflow, so that a start
   * that waited for another's commit reads the key that one recorded. $1 workflow id, $2 delivery key.
   */
  deliveredRun: `SELECT r.* FROM run_deliveries d JOIN runs r ON r.workflow_id = d.workflow_id AND r.run_number = d.run_number
    WHERE d.workflow_id = $1 AND d.delivery_key = $2`,
  /**
   * What a run started from outside keeps beside it, in the transaction that inserted it: its event's
   * payload and its delivery key (each only when given). $1 workflow id, $2 run number, $3 payload (JSON
   * text or NULL), $4 delivery key (or NULL), $5 now.
   */
  recordRunStart: `WITH ev AS (
      INSERT INTO run_events (workflow_id, run_number, payload) SELECT $1, $2::int, $3::text WHERE $3::text IS NOT NULL
    )
    INSERT INTO run_deliveries (workflow_id, delivery_key, run_number, created_at_ms)
    SELECT $1, $4::text, $2::int, $5::bigint WHERE $4::text IS NOT NULL`,
  /** $1 workflow id, $2 run number. */
  getRunEvent: `SELECT payload FROM run_events WHERE workflow_id = $1 AND run_number = $2::int`,
  /** Who listens: a primary-key range. $1 kind, $2 key. */
  listeners: `SELECT workflow_id FROM workflow_triggers WHERE kind = $1 AND key = $2 ORDER BY workflow_id`,
} as const;

/**
 * The listener rows of a saved definition, as CTEs of the statement that saves it (createWorkflow,
 * saveWorkflow): `from` names the CTE holding the saved workflow's id (no row: nothing saved, nothing
 * changes); the wanted rows come as a JSON array of {kind, key} in `param`. Rows no longer wanted are
 * deleted and new ones inserted; rows kept are left alone, so the two never touch one key.
 */
export const keepTriggers = (from: string, param: string) => `
    wanted AS (SELECT t.kind, t.key FROM json_to_recordset(${param}::json) AS t(kind text, key text)
    ), dropped AS (
      DELETE FROM workflow_triggers w USING ${from}
      WHERE w.workflow_id = ${from}.id AND (w.kind, w.key) NOT IN (SELECT kind, key FROM wanted)
    ), listening AS (
      INSERT INTO workflow_triggers (kind, key, workflow_id) SELECT wanted.kind, wanted.key, ${from}.id FROM ${from}, wanted
      ON CONFLICT DO NOTHING
    )`;
