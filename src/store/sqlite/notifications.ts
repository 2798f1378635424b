import type { NewNotification, NotificationClaim, NotificationQuery, NotificationRecord, NotificationResult, StoreReads } from '../store.js';
import { settledColumns, toNotification } from '../notification-rows.js';
import type { Row } from '../rows.js';
import type { Conn } from './connection.js';

/**
 * Notifications (README "Notifications") as synchronous writes (see writes.ts) and reads. A claim is
 * exclusive because the single writer runs it whole: no other write reads the due rows between its
 * read and its marks.
 */

export function createNotifications(c: Conn, rows: readonly NewNotification[]): number {
  let created = 0;
  for (const r of rows) created += c.q('insertNotification').run(r).changes;
  return created;
}

export function claimNotifications(c: Conn, req: NotificationClaim): NotificationRecord[] {
  const due = c.q('dueNotifications').all(req.now_ms, req.limit) as Array<{ seq: number }>;
  const claimed: NotificationRecord[] = [];
  for (const { seq } of due) {
    const row = c.q('claimNotification').get({ seq, now_ms: req.now_ms, until_ms: req.now_ms + req.claim_ms, claim_id: req.claim_id }) as Row | undefined;
    if (row) claimed.push(toNotification(row));
  }
  return claimed;
}

export function settleNotification(c: Conn, id: string, claimId: string, result: NotificationResult, nowMs: number): boolean {
  return c.q('settleNotification').get({ id, claim_id: claimId, now_ms: nowMs, ...settledColumns(result, nowMs) }) !== undefined;
}

export function pruneNotifications(c: Conn, beforeMs: number, limit: number): number {
  return c.q('pruneNotifications').run(beforeMs, limit).changes;
}

/** The notification reads of makeReads (reads.ts). */
export function notificationReads(c: Conn): Pick<StoreReads, 'listNotifications' | 'nextNotificationDue' | 'failedJobsOfRun'> {
  return {
    listNotifications: async (q: NotificationQuery) => {
      const page = { limit: q.limit, offset: q.offset };
      const status = q.status ?? null;
      const rows =
        q.workflow_id !== undefined && q.run_number !== undefined
          ? c.q('listRunNotifications').all({ workflow_id: q.workflow_id, run_number: q.run_number, status, ...page })
          : q.workflow_id !== undefined
            ? c.q('listWorkflowNotifications').all({ workflow_id: q.workflow_id, status, ...page })
            : status !== null
              ? c.q('listNotificationsByStatus').all({ status, ...page })
              : c.q('listNotifications').all(page);
      return (rows as Row[]).map(toNotification);
    },
    nextNotificationDue: async () => {
      const row = c.q('nextNotificationDue').get() as { due: number | null } | undefined;
      return row?.due ?? null;
    },
    failedJobsOfRun: async (workflowId, runNumber, limit) =>
      (c.q('failedJobsOfRun').all(workflowId, runNumber, limit) as Row[]).map((r) => ({
        job_id: r.job_id as string,
        name: r.name as string,
        attempt: Number(r.attempt),
        error: (r.error as string | null) ?? null,
      })),
  };
}
