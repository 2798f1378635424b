import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { followLogs } from '../../engine/log-follow.js';
import { WeftError } from '../../protocol/errors.js';
import { JobParams, LogChunkList, LogsQuery, type LogChunkView } from '../../protocol/wire.js';
import { pagedArrayStream } from '../json-stream.js';
import { sseFrame, writeFrames } from '../sse-writer.js';
import { endStreamsOnClose, type StreamSlots } from '../stream-slots.js';

export interface LogRouteOptions {
  /** How often a live stream looks for changes made by other processes. */
  pollMs?: number;
  /** Hears each live stream open and end (README "Metrics"). */
  streams?: { opened(): void; closed(): void };
  /** The server's stream slots; every stream holds one while it is open. */
  slots: StreamSlots;
}

/** Job logs (docs/api.md "Logs"), stored and live; workers push them with `POST /api/jobs/{lease_id}/logs` (jobs.ts). */
export function logRoutes(app: FastifyInstance, engine: Engine, opts: LogRouteOptions): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const openStreams = endStreamsOnClose(app);
  api.get(
    '/api/workflows/:wf_id/jobs/:job_id/logs',
    {
      schema: {
        summary: "A job's stored log chunks",
        description:
          'Default: the latest run, and its newest attempt that logged anything. Paging is opt-in: `after` (a sequence) keeps the chunks ' +
          "after it, `limit` (1..1000) at most that many; a full page names the next page's `after` in `x-weft-next-after`. Without " +
          '`limit` every chunk of the attempt comes back (at most MAX_LOG_BYTES_PER_ATTEMPT). `format=text` answers the same chunks\' ' +
          'text instead, as a plain-text file to download (`<workflow>-<job>-run<n>-attempt<a>.log`).',
        tags: ['logs'],
        params: JobParams,
        querystring: LogsQuery,
        docs: {
          answers: {
            200: {
              description: 'Chunks in sequence order',
              schema: LogChunkList,
              headers: {
                'x-weft-run': { type: 'integer', description: 'the run read' },
                'x-weft-attempt': { type: 'integer', description: 'the attempt read' },
                'x-weft-next-after': { type: 'integer', description: 'with `limit`, when the page is full: the `after` of the next page' },
              },
            },
          },
          errors: ['workflow_not_found', 'job_not_found', 'run_not_found'],
        },
      },
    },
    async (req, reply) => {
      const { run_number, attempt, pages } = await engine.logPages(req.params.wf_id, req.params.job_id, req.query);
      if (run_number !== null) {
        void reply.header('x-weft-run', String(run_number)).header('x-weft-attempt', String(attempt));
      }
      if (req.query.format === 'text') {
        // The log as a person reads it: the chunks' text in sequence order, streamed a page at a time.
        const name = `${req.params.wf_id}-${req.params.job_id}-run${run_number ?? 0}-attempt${(attempt ?? 0) + 1}.log`;
        const text = Readable.from(
          (async function* () {
            for await (const page of pages) for (const c of page) yield c.data;
          })(),
        );
        return reply
          .type('text/plain; charset=utf-8')
          .header('content-disposition', `attachment; filename="${name.replace(/[^A-Za-z0-9_.~-]/g, '_')}"`)
          .send(text);
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

  api.get(
    '/api/workflows/:wf_id/jobs/:job_id/logs/stream',
    {
      sse: 'manual',
      schema: {
        summary: "Follow a job's logs live (server-sent events)",
        description:
          'Replays the stored chunks of the current attempt, then follows live ones: `event: log` (id = sequence, data = the chunk), ' +
          '`event: attempt` when a retry starts (sequences restart at 0), and `event: end` (data `{status, run_number}`) once the job ' +
          'is over, after which the server closes the stream. `Last-Event-ID: N` resumes after sequence N; `: heartbeat` comments keep ' +
          'idle connections open.',
        tags: ['logs'],
        params: JobParams,
        docs: {
          answers: { 200: { description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } },
          errors: ['workflow_not_found', 'job_not_found', 'invalid_last_event_id'],
          headers: {
            type: 'object',
            properties: { 'last-event-id': { type: 'string', description: 'resume after this sequence number of the attempt followed' } },
          },
        },
      },
    },
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
