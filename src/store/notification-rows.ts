import type { NotificationRecord, NotificationState } from './notification-types.js';

type Row = Record<string, unknown>;

const orNull = <T>(v: unknown, f: (x: unknown) => T): T | null => (v === null || v === undefined ? null : f(v));

/** A notifications row (README "Notifications"), as both stores read it. */
export function toNotification(r: Row): NotificationRecord {
  return {
    seq: Number(r.seq),
    id: r.id as string,
    workflow_id: r.workflow_id as string,
    run_number: Number(r.run_number),
    run_status: r.run_status as string,
    target: r.target as string,
    url: r.url as string,
    secret_name: (r.secret_name as string | null) ?? null,
    format: (r.format as string | null) ?? null,
    payload: r.payload as string,
    created_at_ms: Number(r.created_at_ms),
    status: r.status as NotificationState,
    attempts: Number(r.attempts),
    due_at_ms: orNull(r.due_at_ms, Number),
    claim_id: (r.claim_id as string | null) ?? null,
    last_error: (r.last_error as string | null) ?? null,
    delivered_at_ms: orNull(r.delivered_at_ms, Number),
    updated_at_ms: Number(r.updated_at_ms),
  };
}

/** The columns a settled attempt writes, by its result. */
export function settledColumns(result: { kind: 'delivered' } | { kind: 'retry'; at_ms: number; error: string } | { kind: 'failed'; error: string }, nowMs: number): {
  status: NotificationState;
  due_at_ms: number | null;
  last_error: string | null;
  delivered_at_ms: number | null;
} {
  switch (result.kind) {
    case 'delivered':
      return { status: 'delivered', due_at_ms: null, last_error: null, delivered_at_ms: nowMs };
    case 'retry':
      return { status: 'pending', due_at_ms: result.at_ms, last_error: result.error, delivered_at_ms: null };
    case 'failed':
      return { status: 'failed', due_at_ms: null, last_error: result.error, delivered_at_ms: null };
  }
}
