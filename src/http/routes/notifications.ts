import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { formatFor, maskedWebhook, webhookSecretName, type NotifyFormat } from '../../domain/notify.js';
import type { Engine } from '../../engine/engine.js';
import { WeftError } from '../../protocol/errors.js';
import { MAX_NOTIFICATION_PAGE, NotificationList, NotificationsQuery, type NotificationView } from '../../protocol/wire.js';
import type { NotificationRecord } from '../../store/store.js';

/** A notification as readers see it: its URL masked (docs/api.md "Notifications"), its payload left out. */
export function notificationView(n: NotificationRecord): NotificationView {
  const byUrl = webhookSecretName(n.url) === null;
  return {
    id: n.id,
    workflow_id: n.workflow_id,
    run_number: n.run_number,
    run_status: n.run_status,
    target: n.target,
    url: maskedWebhook(n.url),
    format: n.format !== null ? (n.format as NotifyFormat) : byUrl ? formatFor(n.url, null) : null,
    signed: n.secret_name !== null,
    status: n.status,
    attempts: n.attempts,
    next_attempt_at_ms: n.status === 'pending' ? n.due_at_ms : null,
    last_error: n.last_error,
    delivered_at_ms: n.delivered_at_ms,
    created_at_ms: n.created_at_ms,
    updated_at_ms: n.updated_at_ms,
  };
}

/** Notifications (README "Notifications", docs/api.md "Notifications"): what was told, to whom, how it went. */
export function notificationRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/api/notifications',
    {
      schema: {
        summary: 'List notifications of run ends, newest first',
        description:
          'One per run end and target (a `notify:` entry of the definition the run started with, or NOTIFY_WEBHOOK) that asked for ' +
          'that end. Filter by `workflow_id` (and `run`) and `status`; `limit` (default 50) above 1000 is capped at 1000. URLs are ' +
          'shown masked; the signing secret and the body are never shown.',
        tags: ['notifications'],
        querystring: NotificationsQuery,
        docs: { answers: { 200: { description: 'Notifications, newest first', schema: NotificationList } } },
      },
    },
    async (req) => {
      const q = req.query;
      if (q.run !== undefined && q.workflow_id === undefined) {
        throw new WeftError('invalid_request', 'query parameter run needs workflow_id: a run number names a run of one workflow');
      }
      const rows = await engine.notifications.list({
        workflow_id: q.workflow_id,
        run_number: q.run,
        status: q.status,
        // The schema's defaults fill `limit` and `offset` when they are left out.
        limit: Math.min(q.limit!, MAX_NOTIFICATION_PAGE),
        offset: q.offset!,
      });
      return rows.map(notificationView);
    },
  );
}
