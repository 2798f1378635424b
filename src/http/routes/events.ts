import type { FastifyInstance } from 'fastify';
import type { LiveEvents, LiveFrame } from '../../engine/live-events.js';
import { idParam } from '../schemas.js';

/**
 * Live events for dashboards (docs/api.md "Live events"): `job` and `run` events of one workflow, and
 * `workflow` events (list items) of all of them, as server-sent events with resumable ids.
 */
export function eventRoutes(app: FastifyInstance, live: LiveEvents): void {
  // A stream lasts until its client leaves; a graceful shutdown ends the open ones itself.
  const open = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const c of open) c.abort();
  });
  app.addHook('onClose', async () => live.close());

  const stream = async (workflowId: string | null, lastEventId: string | string[] | undefined, reply: import('fastify').FastifyReply) => {
    const abort = new AbortController();
    // An unknown workflow or a malformed Last-Event-ID is a JSON error before any stream byte.
    const frames = await live.subscribe(workflowId, Array.isArray(lastEventId) ? lastEventId[0] : lastEventId, abort.signal);
    open.add(abort);
    reply.raw.on('close', () => abort.abort());
    async function* sse() {
      for await (const f of frames as AsyncGenerator<LiveFrame>) {
        if (f.type === 'resync') yield { event: 'resync', data: {} };
        else yield { event: f.type, id: live.eventId(f.seq), data: f.data };
      }
    }
    reply.sse.sendHeaders();
    // Headers would otherwise wait for the first event, leaving the client unsure the stream is open.
    reply.raw.flushHeaders();
    try {
      await reply.sse.send(sse());
    } finally {
      abort.abort();
      open.delete(abort);
    }
  };

  app.get<{ Params: { id: string } }>(
    '/api/workflows/:id/events',
    { sse: 'manual', schema: { params: { type: 'object', properties: { id: idParam } } } },
    async (req, reply) => stream(req.params.id, req.headers['last-event-id'], reply),
  );
  app.get('/api/events', { sse: 'manual' }, async (req, reply) => stream(null, req.headers['last-event-id'], reply));
}
