/**
 * What the API reference says about each route beyond its schemas (docs/api.md): a tag, a summary, the
 * error codes it answers, answers that have no response schema, and request examples. Keyed by
 * "METHOD /path" exactly as the route is registered; the OpenAPI test fails for a route missing here.
 */
import type { ErrorCode } from '../protocol/errors.js';
import * as ex from './openapi-examples.js';
import * as shape from './openapi-shapes.js';

const LEGACY_TAGS = [
  { name: 'workflows', description: 'Workflow definitions, runs and their status documents' },
  { name: 'workers', description: 'Worker registration and the worker list' },
  { name: 'jobs', description: 'The worker protocol: claims and the calls on a lease' },
  { name: 'batches', description: 'Batched worker calls for workers that run many jobs at once' },
  { name: 'logs', description: 'Job logs, stored and live' },
  { name: 'service', description: 'Health, readiness and this document' },
] as const;

export type Tag = (typeof LEGACY_TAGS)[number]['name'];

export interface RouteDoc {
  tag: Tag;
  summary: string;
  description?: string;
  /** Error codes particular to this route; the request-shape ones are added from its schemas. */
  errors?: ErrorCode[];
  /** Whether the route reads the store, and so may answer 503 store_unavailable. */
  store?: false;
  /**
   * Answers by status: a description, and for answers written without a response schema, a schema
   * of their own (`content` for a media type other than JSON).
   */
  responses: Record<string, { description: string; schema?: object; content?: object; headers?: object }>;
  /** For routes whose body is validated outside the route schema (workflow definitions) or not read at all. */
  body?: object;
  /** Request headers the route reads (documented only; the route reads them itself). */
  headers?: object;
  /** A body the route ignores: documented, but not required. */
  bodyOptional?: boolean;
  examples?: ex.Examples;
}


export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'GET /api/workflows/:wf_id/jobs/:job_id/logs': {
    tag: 'logs',
    summary: "A job's stored log chunks",
    description:
      'Default: the latest run, and its newest attempt that logged anything. Paging is opt-in: `after` (a sequence) keeps the chunks ' +
      'after it, `limit` (1..1000) at most that many; a full page names the next page\'s `after` in `x-weft-next-after`. Without ' +
      '`limit` every chunk of the attempt comes back (at most MAX_LOG_BYTES_PER_ATTEMPT).',
    errors: ['workflow_not_found', 'job_not_found', 'run_not_found'],
    responses: {
      200: {
        description: 'Chunks in sequence order',
        schema: shape.logChunks,
        headers: {
          'x-weft-run': { type: 'integer', description: 'the run read' },
          'x-weft-attempt': { type: 'integer', description: 'the attempt read' },
          'x-weft-next-after': { type: 'integer', description: 'with `limit`, when the page is full: the `after` of the next page' },
        },
      },
    },
  },
  'GET /api/workflows/:wf_id/jobs/:job_id/logs/stream': {
    tag: 'logs',
    summary: "Follow a job's logs live (server-sent events)",
    description:
      'Replays the stored chunks of the current attempt, then follows live ones: `event: log` (id = sequence, data = the chunk), ' +
      '`event: attempt` when a retry starts (sequences restart at 0), and `event: end` (data `{status, run_number}`) once the job ' +
      'is over, after which the server closes the stream. `Last-Event-ID: N` resumes after sequence N; `: heartbeat` comments keep ' +
      'idle connections open.',
    errors: ['workflow_not_found', 'job_not_found', 'invalid_last_event_id'],
    headers: {
      type: 'object',
      properties: { 'last-event-id': { type: 'string', description: 'resume after this sequence number of the attempt followed' } },
    },
    responses: {
      200: {
        description: 'An event stream',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
    },
  },
  'GET /api/workflows/:id/events': {
    tag: 'workflows',
    summary: "Follow a workflow's job and run changes live (server-sent events)",
    description:
      '`event: job` (data: the job\'s status-document entry plus `run_number`) whenever a job changes, `event: run` (data ' +
      '`{run_number, status}`) when a run starts and ends. Changes within about 25 ms come as one event with the latest state. ' +
      'Ids are `<server process>.<sequence>`; `Last-Event-ID` replays the last 5 minutes, or starts with `event: resync` when it ' +
      'cannot (then refetch the status document).',
    errors: ['workflow_not_found', 'invalid_last_event_id'],
    headers: { type: 'object', properties: { 'last-event-id': { type: 'string', description: 'resume after this event id' } } },
    responses: { 200: { description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } },
  },
  'GET /api/events': {
    tag: 'workflows',
    summary: 'Follow every workflow live (server-sent events)',
    description:
      '`event: workflow` with the workflow\'s summary (the item of `GET /api/workflows?jobs=false`: job counts, no jobs) whenever ' +
      'anything in it changes, `event: deleted` (data `{id}`) when a workflow is deleted; ids and ' +
      '`Last-Event-ID` as for a workflow\'s events, with `event: resync` when the list must be refetched. A client that stops ' +
      'reading is cut off once STREAM_BACKLOG_BYTES of events wait for it.',
    errors: ['invalid_last_event_id'],
    headers: { type: 'object', properties: { 'last-event-id': { type: 'string', description: 'resume after this event id' } } },
    responses: { 200: { description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } },
  },
  'GET /metrics': {
    tag: 'service',
    summary: 'Prometheus metrics (text exposition format)',
    description: 'Jobs by state and label set, claims, completions, failures, retries, expiries, timeouts, durations, HTTP, streams, waiters, store commits and Node process series (README "Metrics").',
    responses: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } } } },
  },
  'GET /healthz': {
    tag: 'service',
    summary: 'Liveness, with how long callbacks waited for the event loop',
    store: false,
    responses: { 200: { description: 'The process is serving', schema: shape.healthAnswer } },
  },
  'GET /readyz': {
    tag: 'service',
    summary: 'Readiness: whether the store answers',
    description: 'Point a load balancer readiness check here (503 while the database is away) and a liveness check at /healthz.',
    responses: { 200: { description: 'The store answers', schema: shape.readyAnswer } },
  },
};
