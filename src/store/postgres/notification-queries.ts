/**
 * The notification statements of the PostgreSQL store (README "Notifications"), part of QUERIES
 * (queries.ts), as in the SQLite store. A claim is one statement: its subquery locks the due rows
 * `FOR UPDATE SKIP LOCKED`, so claimers racing on any number of servers each get other rows, and a row
 * another claimer just committed is re-read after the lock and left when it is no longer due.
 */
export const NOTIFICATION_QUERIES = {
  /**
   * Every notification of a run's end in one statement; nothing for a run and target that already has
   * one (notifications_target). Answers the rows inserted. $1 the rows (json)
   */
  insertNotifications: `INSERT INTO notifications
      (id, workflow_id, run_number, run_status, target, url, secret_name, format, payload, status, attempts, due_at_ms, created_at_ms, updated_at_ms)
    SELECT n.id, n.workflow_id, n.run_number, n.run_status, n.target, n.url, n.secret_name, n.format, n.payload, 'pending', 0,
      n.created_at_ms, n.created_at_ms, n.created_at_ms
    FROM json_to_recordset($1::json) AS n(id text, workflow_id text, run_number int, run_status text, target text, url text,
      secret_name text, format text, payload text, created_at_ms bigint)
    ON CONFLICT (workflow_id, run_number, target) DO NOTHING
    RETURNING 1`,
  /**
   * The due rows are picked once (MATERIALIZED: a subquery in the UPDATE's WHERE may be run again for
   * each row it tests, picking more rows than the limit). $1 now, $2 claimed until, $3 claim_id, $4 limit
   */
  claimNotifications: `WITH due AS MATERIALIZED (
      SELECT seq FROM notifications
      WHERE status IN ('pending', 'delivering') AND due_at_ms <= $1
      ORDER BY due_at_ms, seq LIMIT $4
      FOR UPDATE SKIP LOCKED)
    UPDATE notifications n
    SET status = 'delivering', attempts = n.attempts + 1, due_at_ms = $2, claim_id = $3, updated_at_ms = $1
    FROM due WHERE n.seq = due.seq AND n.status IN ('pending', 'delivering') AND n.due_at_ms <= $1
    RETURNING n.*`,
  /** A delivered attempt keeps the error of the attempt before it, if any. $1 id, $2 claim_id, $3 status, $4 due_at_ms, $5 last_error, $6 delivered_at_ms, $7 now */
  settleNotification: `UPDATE notifications
    SET status = $3, due_at_ms = $4, last_error = COALESCE($5, last_error), delivered_at_ms = $6, claim_id = NULL, updated_at_ms = $7
    WHERE id = $1 AND claim_id = $2 AND status = 'delivering'
    RETURNING 1`,
  /** $1 before, $2 limit */
  pruneNotifications: `DELETE FROM notifications WHERE seq IN (
      SELECT seq FROM notifications WHERE status IN ('delivered', 'failed') AND updated_at_ms < $1 ORDER BY updated_at_ms LIMIT $2)`,
  /** $1 workflow_id */
  deleteWorkflowNotifications: `DELETE FROM notifications WHERE workflow_id = $1`,
  nextNotificationDue: `SELECT MIN(due_at_ms) AS due FROM notifications WHERE status IN ('pending', 'delivering')`,
  // The list, newest first, one statement per filter so that each reads an index in order.
  /** $1 limit, $2 offset */
  listNotifications: `SELECT * FROM notifications ORDER BY seq DESC LIMIT $1 OFFSET $2`,
  /** $1 limit, $2 offset, $3 status */
  listNotificationsByStatus: `SELECT * FROM notifications WHERE status = $3 ORDER BY seq DESC LIMIT $1 OFFSET $2`,
  /** $1 limit, $2 offset, $3 workflow_id, $4 status (NULL: any) */
  listWorkflowNotifications: `SELECT * FROM notifications WHERE workflow_id = $3 AND ($4::text IS NULL OR status = $4)
    ORDER BY seq DESC LIMIT $1 OFFSET $2`,
  /** $1 limit, $2 offset, $3 workflow_id, $4 status (NULL: any), $5 run_number */
  listRunNotifications: `SELECT * FROM notifications WHERE workflow_id = $3 AND run_number = $5 AND ($4::text IS NULL OR status = $4)
    ORDER BY seq DESC LIMIT $1 OFFSET $2`,
  /** $1 workflow_id, $2 run_number, $3 limit */
  failedJobsOfRun: `SELECT job_id, name, attempt, error FROM jobs
    WHERE workflow_id = $1 AND run_number = $2 AND status = 'failed' ORDER BY row_id LIMIT $3`,
} as const;
