/**
 * The notification part of the storage seam (README "Notifications", docs/architecture.md
 * "Notifications"): a durable outbox of webhook deliveries. A run's end creates one row per target
 * (unique per run and target, so a handler that runs twice creates none twice); deliverers on any
 * server claim due rows for a limited time, one claimer at a time, and settle them.
 */

/**
 * `pending`: waiting for its next attempt (due_at_ms); `delivering`: claimed by a deliverer until
 * due_at_ms, after which any deliverer may claim it again; `delivered` and `failed` are final.
 */
export const NOTIFICATION_STATES = ['pending', 'delivering', 'delivered', 'failed'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

/** A notification as a run's end creates it. */
export interface NewNotification {
  /** The delivery id (X-Weft-Delivery): made once, sent on every attempt. */
  id: string;
  workflow_id: string;
  run_number: number;
  /** How the run ended: success, failed or cancelled. */
  run_status: string;
  /** Which target of the run's definition: `notify[i]`, or `server` for NOTIFY_WEBHOOK. Unique per run. */
  target: string;
  /** As the target gives it: an http(s) URL, or `${{ secrets.NAME }}` opened at each attempt. */
  url: string;
  /** The secret that signs the body; null: unsigned. */
  secret_name: string | null;
  /** `json` or `slack`; null: decided by the URL at each attempt. */
  format: string | null;
  /** The facts told (domain/notify.ts NotificationPayload), as JSON: the same on every attempt. */
  payload: string;
  created_at_ms: number;
}

export interface NotificationRecord extends NewNotification {
  /** Insertion order: the list's order (newest first). */
  seq: number;
  status: NotificationState;
  /** Attempts started so far (a claim starts one). */
  attempts: number;
  /** pending: when its next attempt is due; delivering: when the claim runs out; null once final. */
  due_at_ms: number | null;
  /** The claim that holds it while delivering; settling is guarded by it. */
  claim_id: string | null;
  last_error: string | null;
  delivered_at_ms: number | null;
  updated_at_ms: number;
}

export interface NotificationQuery {
  workflow_id?: string;
  run_number?: number;
  status?: NotificationState;
  limit: number;
  offset: number;
}

/** Claims up to `limit` due notifications until `now_ms + claim_ms`, each marked with `claim_id`. */
export interface NotificationClaim {
  now_ms: number;
  limit: number;
  claim_ms: number;
  claim_id: string;
}

/** How an attempt ended. */
export type NotificationResult =
  | { kind: 'delivered' }
  /** Failed; the next attempt is due at `at_ms`. */
  | { kind: 'retry'; at_ms: number; error: string }
  /** Failed for good. */
  | { kind: 'failed'; error: string };

export interface NotificationReads {
  /** A page of notifications, newest first, filtered by workflow (and run) and status. */
  listNotifications(q: NotificationQuery): Promise<NotificationRecord[]>;
  /** The earliest due_at_ms of a pending or delivering notification, through notifications_due; null: none. */
  nextNotificationDue(): Promise<number | null>;
  /** Up to `limit` failed jobs of a run, in row order (what a notification tells), through jobs_run_status. */
  failedJobsOfRun(workflowId: string, runNumber: number, limit: number): Promise<Array<{ job_id: string; name: string; attempt: number; error: string | null }>>;
}

export interface NotificationWrites {
  /**
   * Inserts each notification unless its run already has one for its target (then that one is kept,
   * delivery id and all); answers how many were inserted.
   */
  createNotifications(rows: readonly NewNotification[]): Promise<number>;
  /**
   * Claims due notifications, oldest due first: pending ones whose attempt is due and delivering ones
   * whose claim ran out. Each is claimed by one caller however many race (PostgreSQL: FOR UPDATE SKIP
   * LOCKED; SQLite: the single writer); a claim counts an attempt.
   */
  claimNotifications(req: NotificationClaim): Promise<NotificationRecord[]>;
  /** Settles an attempt if `claimId` still holds the notification; false when it does not (nothing changes). */
  settleNotification(id: string, claimId: string, result: NotificationResult, nowMs: number): Promise<boolean>;
  /** Deletes up to `limit` delivered or failed notifications last changed before `beforeMs`; answers how many. */
  pruneNotifications(beforeMs: number, limit: number): Promise<number>;
}
