/**
 * The notification statements of the SQLite store (README "Notifications"), part of QUERIES
 * (queries.ts), as in the PostgreSQL store. The single writer makes a claim exclusive: notifications.ts
 * reads the due rows and marks them in one write.
 */
export const NOTIFICATION_QUERIES = {
  /** Nothing when the run already has a notification for the target (notifications_target). */
  insertNotification: `INSERT INTO notifications
      (id, workflow_id, run_number, run_status, target, url, secret_name, format, payload, status, attempts, due_at_ms, created_at_ms, updated_at_ms)
    VALUES (@id, @workflow_id, @run_number, @run_status, @target, @url, @secret_name, @format, @payload, 'pending', 0, @created_at_ms, @created_at_ms, @created_at_ms)
    ON CONFLICT (workflow_id, run_number, target) DO NOTHING`,
  /**
   * Pending rows whose attempt is due and delivering rows whose claim ran out, oldest due first. Named
   * INDEXED BY: without statistics the planner would take notifications_status and sort. ? now, ? limit
   */
  dueNotifications: `SELECT seq FROM notifications INDEXED BY notifications_due
    WHERE status IN ('pending', 'delivering') AND due_at_ms <= ?
    ORDER BY due_at_ms, seq LIMIT +?`,
  /** @seq, @now_ms, @until_ms, @claim_id */
  claimNotification: `UPDATE notifications
    SET status = 'delivering', attempts = attempts + 1, due_at_ms = @until_ms, claim_id = @claim_id, updated_at_ms = @now_ms
    WHERE seq = @seq AND status IN ('pending', 'delivering') AND due_at_ms <= @now_ms
    RETURNING *`,
  /** A delivered attempt keeps the error of the attempt before it, if any. @id, @claim_id, @status, @due_at_ms, @last_error, @delivered_at_ms, @now_ms */
  settleNotification: `UPDATE notifications
    SET status = @status, due_at_ms = @due_at_ms, last_error = COALESCE(@last_error, last_error),
      delivered_at_ms = @delivered_at_ms, claim_id = NULL, updated_at_ms = @now_ms
    WHERE id = @id AND claim_id = @claim_id AND status = 'delivering'
    RETURNING 1`,
  /** ? before, ? limit */
  pruneNotifications: `DELETE FROM notifications WHERE seq IN (
      SELECT seq FROM notifications INDEXED BY notifications_settled
      WHERE status IN ('delivered', 'failed') AND updated_at_ms < ? ORDER BY updated_at_ms LIMIT +?)`,
  /** ? workflow_id */
  deleteWorkflowNotifications: `DELETE FROM notifications WHERE workflow_id = ?`,
  nextNotificationDue: `SELECT MIN(due_at_ms) AS due FROM notifications INDEXED BY notifications_due WHERE status IN ('pending', 'delivering')`,
  // The list, newest first, one statement per filter so that each reads an index in order.
  /** @limit, @offset */
  listNotifications: `SELECT * FROM notifications ORDER BY seq DESC LIMIT +@limit OFFSET @offset`,
  /** @status, @limit, @offset */
  listNotificationsByStatus: `SELECT * FROM notifications WHERE status = @status ORDER BY seq DESC LIMIT +@limit OFFSET @offset`,
  /** @workflow_id, @status (NULL: any), @limit, @offset */
  listWorkflowNotifications: `SELECT * FROM notifications WHERE workflow_id = @workflow_id AND (@status IS NULL OR status = @status)
    ORDER BY seq DESC LIMIT +@limit OFFSET @offset`,
  /** @workflow_id, @run_number, @status (NULL: any), @limit, @offset */
  listRunNotifications: `SELECT * FROM notifications WHERE workflow_id = @workflow_id AND run_number = @run_number AND (@status IS NULL OR status = @status)
    ORDER BY seq DESC LIMIT +@limit OFFSET @offset`,
  /** ? workflow_id, ? run_number, ? limit */
  failedJobsOfRun: `SELECT job_id, name, attempt, error FROM jobs
    WHERE workflow_id = ? AND run_number = ? AND status = 'failed' ORDER BY row_id LIMIT +?`,
} as const;
