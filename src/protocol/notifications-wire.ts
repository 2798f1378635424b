/** Notifications (docs/api.md "Notifications", README "Notifications"): the outbox of run-end webhooks. */
import { Type, type Static } from 'typebox';
import { NOTIFY_FORMATS, NOTIFY_ON } from '../domain/notify.js';
import { Id, nullable, stringEnum } from './schema-parts.js';

export const NOTIFICATION_STATUSES = ['pending', 'delivering', 'delivered', 'failed'] as const;

/** Most notifications one page holds; a larger `limit` is capped to it. */
export const MAX_NOTIFICATION_PAGE = 1000;

export const NotificationsQuery = Type.Object(
  {
    workflow_id: Type.Optional(Id),
    run: Type.Optional(Type.Integer({ minimum: 1, description: 'only with workflow_id: the notifications of that run' })),
    status: Type.Optional(stringEnum(NOTIFICATION_STATUSES)),
    limit: Type.Optional(Type.Integer({ minimum: 0, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: false },
);

/** One notification: one run end told to one target. */
export const NotificationView = Type.Object({
  /** The delivery id, sent as X-Weft-Delivery on every attempt. */
  id: Type.String(),
  workflow_id: Type.String(),
  run_number: Type.Integer({ minimum: 1 }),
  run_status: Type.String({ description: 'how the run ended: success, failed or cancelled' }),
  target: Type.String({ description: "`notify[i]`: entry i of the run's `notify:` list; `server`: NOTIFY_WEBHOOK" }),
  url: Type.String({ description: 'the webhook, its user, password, query values and token-like path segments shown as ***; a secret reference as written' }),
  format: Type.Unsafe<(typeof NOTIFY_FORMATS)[number] | null>({
    type: ['string', 'null'],
    enum: [...NOTIFY_FORMATS, null],
    description: 'json or slack; null: decided by the URL a secret holds, at each attempt',
  }),
  signed: Type.Boolean({ description: 'whether each attempt carries X-Weft-Signature-256' }),
  status: stringEnum(NOTIFICATION_STATUSES, {
    description: 'pending (waiting for its next attempt), delivering (an attempt is under way), delivered or failed (gave up after 24 h of retries)',
  }),
  attempts: Type.Integer({ minimum: 0 }),
  next_attempt_at_ms: nullable(Type.Integer(), { description: 'when a pending notification is tried next; null otherwise' }),
  last_error: nullable(Type.String(), { description: 'why the last failed attempt failed (kept after a later delivery); null: none failed' }),
  delivered_at_ms: nullable(Type.Integer()),
  created_at_ms: Type.Integer(),
  updated_at_ms: Type.Integer(),
});
export type NotificationView = Static<typeof NotificationView>;

export const NotificationList = Type.Array(NotificationView);

/** A `notify:` entry of a workflow definition, as docs/api.md shows it. */
export const NotifyTargetInput = Type.Object(
  {
    on: Type.Optional(Type.Array(stringEnum(NOTIFY_ON), { minItems: 1, description: 'the run ends to tell; default [failure]' })),
    webhook: Type.String({ description: 'an http(s) URL, or ${{ secrets.NAME }} naming a secret that holds it' }),
    secret: Type.Optional(Type.String({ description: 'a secret whose value signs the body: X-Weft-Signature-256: sha256=<hex HMAC-SHA256>' })),
    format: Type.Optional(stringEnum(NOTIFY_FORMATS, { description: 'default: slack for a hooks.slack.com URL, else json' })),
  },
  { additionalProperties: false },
);
