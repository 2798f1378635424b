import type { NewNotification, NotificationClaim, NotificationRecord, NotificationResult, StoreReads } from '../store.js';
import { settledColumns, toNotification } from '../notification-rows.js';
import { QUERIES } from './queries.js';
import { writeStatement, type Exec, type Sql } from './tx.js';

/**
 * Notifications (README "Notifications"): each write is one statement, so it holds no lock across a
 * round trip; the claim's is exclusive by FOR UPDATE SKIP LOCKED (notification-queries.ts).
 */

export async function createNotifications(sql: Sql, rows: readonly NewNotification[]): Promise<number> {
  if (rows.length === 0) return 0;
  return (await writeStatement(sql, QUERIES.insertNotifications, [rows])).length;
}

export async function claimNotifications(sql: Sql, req: NotificationClaim): Promise<NotificationRecord[]> {
  if (req.limit <= 0) return [];
  const rows = await writeStatement(sql, QUERIES.claimNotifications, [req.now_ms, req.now_ms + req.claim_ms, req.claim_id, req.limit]);
  return rows.map(toNotification).sort((a, b) => (a.due_at_ms ?? 0) - (b.due_at_ms ?? 0) || a.seq - b.seq);
}

export async function settleNotification(sql: Sql, id: string, claimId: string, result: NotificationResult, nowMs: number): Promise<boolean> {
  const s = settledColumns(result, nowMs);
  return (await writeStatement(sql, QUERIES.settleNotification, [id, claimId, s.status, s.due_at_ms, s.last_error, s.delivered_at_ms, nowMs])).length > 0;
}

export async function pruneNotifications(sql: Sql, beforeMs: number, limit: number): Promise<number> {
  // The driver's result carries the number of rows a DELETE removed.
  return ((await writeStatement(sql, QUERIES.pruneNotifications, [beforeMs, limit])) as unknown as { count: number }).count;
}

/** The notification reads of makeReads (reads.ts). */
export function notificationReads(q: Exec): Pick<StoreReads, 'listNotifications' | 'nextNotificationDue' | 'failedJobsOfRun'> {
  return {
    listNotifications: async (f) => {
      const page = [f.limit, f.offset];
      const status = f.status ?? null;
      const rows =
        f.workflow_id !== undefined && f.run_number !== undefined
          ? await q(QUERIES.listRunNotifications, [...page, f.workflow_id, status, f.run_number])
          : f.workflow_id !== undefined
            ? await q(QUERIES.listWorkflowNotifications, [...page, f.workflow_id, status])
            : status !== null
              ? await q(QUERIES.listNotificationsByStatus, [...page, status])
              : await q(QUERIES.listNotifications, page);
      return rows.map(toNotification);
    },
    nextNotificationDue: async () => {
      const [row] = await q(QUERIES.nextNotificationDue);
      return row?.due === null || row?.due === undefined ? null : Number(row.due);
    },
    failedJobsOfRun: async (workflowId, runNumber, limit) =>
      (await q(QUERIES.failedJobsOfRun, [workflowId, runNumber, limit])).map((r) => ({
        job_id: r.job_id as string,
        name: r.name as string,
        attempt: Number(r.attempt),
        error: (r.error as string | null) ?? null,
      })),
  };
}
