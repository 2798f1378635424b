import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { followLogs } from '../../engine/log-follow.js';
import { WeftError } from '../../protocol/errors.js';
import { idParam } from '../schemas.js';
import { endStreamsOnClose, type StreamSlots } from '../stream-slots.js';

const jobParams = { type: 'object', properties: { wf_id: idParam, job_id: idParam } } as const;

export interface LogRouteOptions {
  /** How often a live stream looks for changes made by other processes. */
  pollMs?: number;
  /** Hears each live stream open and end (README "Metrics"). */
  streams?: { opened(): void; closed(): void };
  /** The server's stream slots; every stream holds one while it is open. */
  slots: StreamSlots;
}

export function logRoutes(app: FastifyInstance, engine: Engine, opts: LogRouteOptions): void {
  const openStreams = endStreamsOnClose(app);
  app.get<{ Params: { wf_id: string; job_id: string }; Querystring: { run?: number; attempt?: number } }>(
    '/api/workflows/:wf_id/jobs/:job_id/logs',
    {
      schema: {
        params: jobParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { run: { type: 'integer', minimum: 1 }, attempt: { type: 'integer', minimum: 0 } },
        },
      },
    },
    async (req, reply) => {
      const result = await engine.logs(req.params.wf_id, req.params.job_id, req.query);
      if (result.run_number !== null) {
        void reply.header('x-weft-run', String(result.run_number)).header('x-weft-attempt', String(result.attempt));
      }
      return result.chunks;
    },
  );

  app.get<{ Params: { wf_id: string; job_id: string } }>(
    '/api/workflows/:wf_id/jobs/:job_id/logs/stream',
    { sse: 'manual', schema: { params: jobParams } },
    async (req, reply) => {
      const lastId = req.headers['last-event-id'];
      let afterSequence: number | undefined;
      if (lastId !== undefined && lastId !== '') {
        const n = Number(lastId);
        if (!Number.isInteger(n) || n < -1) {
          throw new WeftError('invalid_last_event_id', `Last-Event-ID must be a log sequence number, got "${String(lastId)}"`);
        }
        afterSequence = n;
      }
      // Taken before the store is asked anything, so that a flood of streams costs no reads.
      const slot = opts.slots.take(reply);
      if (slot === null) return reply;
      try {
        // Unknown workflow or job: a JSON 404 before any stream byte is written.
        await engine.readStore((ops) => engine.logTarget(ops, req.params.wf_id, req.params.job_id));
      } catch (err) {
        slot.release();
        throw err;
      }
      const abort = new AbortController();
      openStreams.add(abort);
      reply.raw.on('close', () => abort.abort());
      const events = followLogs(engine, req.params.wf_id, req.params.job_id, {
        afterSequence,
        signal: abort.signal,
        pollMs: opts.pollMs,
      });
      async function* frames() {
        for await (const ev of events) {
          if (ev.type === 'log') yield { event: 'log', id: String(ev.chunk.sequence), data: ev.chunk };
          else if (ev.type === 'attempt') yield { event: 'attempt', data: { attempt: ev.attempt } };
          else yield { event: 'end', data: { status: ev.status, run_number: ev.run_number } };
        }
      }
      reply.sse.sendHeaders();
      // Headers would otherwise wait for the first event, leaving the client unsure the stream is open.
      reply.raw.flushHeaders();
      opts.streams?.opened();
      try {
        await reply.sse.send(frames());
      } finally {
        abort.abort();
        openStreams.delete(abort);
        opts.streams?.closed();
        slot.release();
      }
    },
  );
}
