import { Readable } from 'node:stream';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { DocumentParts } from '../engine/reads.js';
import type { JobView, StatusDocument } from '../protocol/wire.js';

/** Jobs serialized between two turns of the event loop: a few milliseconds of JSON.stringify. */
const JOBS_PER_SLICE = 500;

/**
 * One status document's JSON, written as it is produced: its jobs are serialized JOBS_PER_SLICE at a
 * time, and read a page at a time when the document comes with `jobPages`, with a turn of the event
 * loop between slices, so that a document of tens of thousands of jobs never keeps the server from
 * everything else for longer than one slice's work. The text is JSON.stringify's, key for key.
 */
async function* documentPieces({ doc, jobPages }: DocumentParts, extra: Record<string, unknown> = {}): AsyncGenerator<string> {
  const { id, name, trigger, jobs, ...rest } = doc;
  const head = JSON.stringify({ id, name, trigger });
  yield `${head.slice(0, -1)},"jobs":[`;
  let written = 0;
  const write = (views: JobView[]) => {
    const text = JSON.stringify(views).slice(1, -1);
    const piece = written > 0 && text !== '' ? `,${text}` : text;
    written += views.length;
    return piece;
  };
  for (let i = 0; i < jobs.length; i += JOBS_PER_SLICE) {
    yield write(jobs.slice(i, i + JOBS_PER_SLICE));
    await yieldToLoop();
  }
  if (jobPages) {
    for await (const page of jobPages) {
      for (let i = 0; i < page.length; i += JOBS_PER_SLICE) yield write(page.slice(i, i + JOBS_PER_SLICE));
      await yieldToLoop();
    }
  }
  yield `],${JSON.stringify({ ...(rest satisfies Omit<StatusDocument, 'id' | 'name' | 'trigger' | 'jobs'>), ...extra }).slice(1)}`;
}

/**
 * The workflow list's JSON array, written as it is produced: each document is read when the connection
 * wants more (so a slow reader holds one page of jobs, not the whole answer), and written by
 * documentPieces, so that a page of workflows of tens of thousands of jobs never keeps the server from
 * everything else for longer than one page's work (docs/api.md "GET /api/workflows").
 */
export function documentArrayStream(items: AsyncIterable<DocumentParts>, log: FastifyBaseLogger): Readable {
  async function* pieces(): AsyncGenerator<string> {
    yield '[';
    let first = true;
    for await (const item of items) {
      if (!first) yield ',';
      first = false;
      yield* documentPieces(item);
    }
    yield ']';
  }
  const stream = Readable.from(pieces(), { objectMode: false });
  // Past the first byte an error can only cut the answer short; the log says why.
  stream.on('error', (err) => log.warn({ err: err.message }, 'a workflow list answer was cut short'));
  return stream;
}

/**
 * Answers one status document (GET /api/workflows/{id}, a run's, the answers to a start and to a
 * create or update), `extra` fields after its own: a document that fits in one slice as it is, a
 * larger one written as documentPieces produces it (docs/performance.md "Large runs").
 */
export function sendDocument(reply: FastifyReply, parts: DocumentParts, code = 200, extra: Record<string, unknown> = {}): FastifyReply {
  reply.code(code);
  if (!parts.jobPages && parts.doc.jobs.length <= JOBS_PER_SLICE) return reply.send({ ...parts.doc, ...extra });
  const stream = Readable.from(documentPieces(parts, extra), { objectMode: false });
  // Past the first byte an error can only cut the answer short; the log says why.
  stream.on('error', (err) => reply.log.warn({ err: err.message }, 'a status document answer was cut short'));
  return reply.type('application/json; charset=utf-8').send(stream);
}

/**
 * A JSON array whose items come in pages (log chunks, docs/api.md "Logs"): each page is serialized
 * when the connection wants more, with a turn of the event loop between pages.
 */
export function pagedArrayStream(pages: AsyncIterable<unknown[]>, log: FastifyBaseLogger): Readable {
  async function* pieces(): AsyncGenerator<string> {
    yield '[';
    let first = true;
    for await (const page of pages) {
      if (page.length === 0) continue;
      const text = JSON.stringify(page).slice(1, -1);
      yield first ? text : `,${text}`;
      first = false;
      await yieldToLoop();
    }
    yield ']';
  }
  const stream = Readable.from(pieces(), { objectMode: false });
  stream.on('error', (err) => log.warn({ err: err.message }, 'a log answer was cut short'));
  return stream;
}
