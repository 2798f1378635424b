import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { LiveEvents, LiveFrame } from '../../engine/live-events.js';
import type { StreamCounter } from '../metrics.js';
import { endStreamsOnClose, type StreamSlots } from '../stream-slots.js';
import { WorkflowParams } from '../../protocol/wire.js';
import { sseFrame, writeFrames } from '../sse-writer.js';

/**
 * Live events for dashboards (docs/api.md "Live events"): `job` and `run` events of one workflow, and
 * `workflow` events (list items) of all of them, as server-sent events with resumable ids.
 */
export function eventRoutes(app: FastifyInstance, live: LiveEvents, slots: StreamSlots, streams?: StreamCounter): void {
  const open = endStreamsOnClose(app);
  app.addHook('onClose', async () => live.close());

  const stream = async (workflowId: string | null, lastEventId: string | string[] | undefined, reply: FastifyReply) => {
    // Taken before anything is read, so that a flood of streams costs no reads (README "Limits").
    const slot = slots.take(reply);
    if (slot === null) return reply;
    const abort = new AbortController();
    let frames: AsyncGenerator<LiveFrame>;
    try {
      // An unknown workflow or a malformed Last-Event-ID is a JSON error before any stream byte.
      frames = await live.subscribe(workflowId, Array.isArray(lastEventId) ? lastEventId[0] : lastEventId, abort.signal, (backlog) => {
        // The client stopped reading (README "Limits"): its connection goes, with what it holds; an
        // EventSource reconnects with Last-Event-ID and gets what it missed, or a resync.
        reply.log.warn({ workflow_id: workflowId, backlog_bytes: backlog, limit_bytes: live.maxBacklogBytes }, 'event stream cut off: its client stopped reading');
        reply.raw.destroy();
      });
    } catch (err) {
      slot.release();
      throw err;
    }
    open.add(abort);
    streams?.opened();
    reply.raw.on('close', () => abort.abort());
    async function* sse() {
      for await (const f of frames) {
        yield f.type === 'resync' ? sseFrame('resync', '{}') : sseFrame(f.type, f.json, live.eventId(f.seq));
      }
    }
    reply.sse.sendHeaders();
    // Headers would otherwise wait for the first event, leaving the client unsure the stream is open.
    reply.raw.flushHeaders();
    try {
      await writeFrames(reply.raw, sse());
    } finally {
      abort.abort();
      open.delete(abort);
      streams?.closed();
      slot.release();
    }
  };

  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const lastEventId = { type: 'object', properties: { 'last-event-id': { type: 'string', description: 'resume after this event id' } } };
  const eventStream = { 200: { description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } };

  api.get(
    '/api/workflows/:id/events',
    {
      sse: 'manual',
      schema: {
        summary: "Follow a workflow's job and run changes live (server-sent events)",
        description:
          "`event: job` (data: the job's status-document entry plus `run_number`) whenever a job changes, `event: run` (data " +
          '`{run_number, status}`) when a run starts and ends. Changes within about 25 ms come as one event with the latest state. ' +
          'Ids are `<server process>.<sequence>`; `Last-Event-ID` replays the last 5 minutes, or starts with `event: resync` when it ' +
          'cannot (then refetch the status document).',
        tags: ['workflows'],
        params: WorkflowParams,
        docs: { answers: eventStream, errors: ['workflow_not_found', 'invalid_last_event_id'], headers: lastEventId },
      },
    },
    async (req, reply) => stream(req.params.id, req.headers['last-event-id'], reply),
  );
  api.get(
    '/api/events',
    {
      sse: 'manual',
      schema: {
        summary: 'Follow every workflow live (server-sent events)',
        description:
          "`event: workflow` with the workflow's summary (the item of `GET /api/workflows?jobs=false`: job counts, no jobs) whenever " +
          'anything in it changes, `event: deleted` (data `{id}`) when a workflow is deleted; ids and ' +
          "`Last-Event-ID` as for a workflow's events, with `event: resync` when the list must be refetched. A client that stops " +
          'reading is cut off once STREAM_BACKLOG_BYTES of events wait for it.',
        tags: ['workflows'],
        docs: { answers: eventStream, errors: ['invalid_last_event_id'], headers: lastEventId },
      },
    },
    async (req, reply) => stream(null, req.headers['last-event-id'], reply),
  );
}
