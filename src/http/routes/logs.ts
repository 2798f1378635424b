import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { followLogs } from '../../engine/log-follow.js';
import { WeftError } from '../../protocol/errors.js';
import type { LogChunkView, LogsQuery } from '../../protocol/wire.js';
import { pagedArrayStream } from '../json-stream.js';
import { sseFrame, writeFrames } from '../sse-writer.js';
import { idParam } from '../schemas.js';
import { endStreamsOnClose, type StreamSlots } from '../stream-slots.js';

/** Most chunks one page of `GET …/logs?limit=` holds. */
const MAX_LOG_PAGE = 1000;

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
  app.get<{ Params: { wf_id: string; job_id: string }; Querystring: LogsQuery }>(
    '/api/workflows/:wf_id/jobs/:job_id/logs',
    {
      schema: {
        params: jobParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            run: { type: 'integer', minimum: 1 },
            attempt: { type: 'integer', minimum: 0 },
            // Paging (docs/api.md "Logs"): opt-in, so that a client that sends neither gets every chunk.
            after: { type: 'integer', minimum: -1 },
            limit: { type: 'integer', minimum: 1, maximum: MAX_LOG_PAGE },
          },
        },
      },
    },
    async (req, reply) => {
      const { run_number, attempt, pages } = await engine.logPages(req.params.wf_id, req.params.job_id, req.query);
      if (run_number !== null) {
        void reply.header('x-weft-run', String(run_number)).header('x-weft-attempt', String(attempt));
      }
      if (req.query.limit === undefined) {
        // Every chunk of the attempt (up to MAX_LOG_BYTES_PER_ATTEMPT), written a page at a time.
        return reply.type('application/json; charset=utf-8').send(pagedArrayStream(pages, req.log));
      }
      const chunks: LogChunkView[] = [];
      for await (const page of pages) chunks.push(...page);
      // A full page may have more behind it: the header names where the next one starts.
      if (chunks.length === req.query.limit) void reply.header('x-weft-next-after', String(chunks[chunks.length - 1]!.sequence));
      return chunks;
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
      // Pulled as the connection takes them: a client that stops reading holds one page of the log
      // follower, never a growing backlog (README "Limits").
      async function* frames() {
        for await (const ev of events) {
          if (ev.type === 'log') yield sseFrame('log', JSON.stringify(ev.chunk), String(ev.chunk.sequence));
          else if (ev.type === 'attempt') yield sseFrame('attempt', JSON.stringify({ attempt: ev.attempt }));
          else yield sseFrame('end', JSON.stringify({ status: ev.status, run_number: ev.run_number }));
        }
      }
      reply.sse.sendHeaders();
      // Headers would otherwise wait for the first event, leaving the client unsure the stream is open.
      reply.raw.flushHeaders();
      opts.streams?.opened();
      try {
        await writeFrames(reply.raw, frames());
      } finally {
        abort.abort();
        openStreams.delete(abort);
        opts.streams?.closed();
        slot.release();
      }
    },
  );
}
