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

const IGNORED_BODY = { type: 'object', description: 'Ignored: the call needs no body.' } as const;

export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'GET /api/workflows': {
    tag: 'workflows',
    summary: 'List workflows with their status documents',
    description:
      'Ordered by id. `limit` above 1000 is capped at 1000. With `status`, only workflows whose latest run has a job in that ' +
      'state are listed (`active` = running, `failure` = failed); a workflow that never ran counts as all-pending. With `q`, ' +
      'only workflows whose id or name contains that text (ASCII case ignored). With `jobs=false`, each item is a summary: ' +
      'the status document without `jobs` (and without the run\'s inputs), with `job_counts` by state instead; it reads no job ' +
      'row and stays small however large the workflows. The full form is written a page of jobs at a time.',
    responses: { 200: { description: 'Status documents, each with its jobs; with jobs=false, summaries', schema: shape.statusList } },
  },
  'POST /api/workflows': {
    tag: 'workflows',
    summary: 'Create a workflow',
    description: 'The contract form or the array form; the id is generated (`wf-<12 hex>`) when absent.',
    errors: ['invalid_workflow', 'workflow_exists'],
    responses: { 201: { description: 'The status document of the new workflow', schema: shape.statusDocument } },
    body: shape.definitionBody,
    examples: ex.createWorkflowExamples,
  },
  'PUT /api/workflows/:id': {
    tag: 'workflows',
    summary: 'Create or update a workflow by id',
    description:
      "Same bodies as POST; the path's id wins. An update changes the definition in place: the run history stays, and a run " +
      'in progress keeps the jobs it started with.',
    errors: ['invalid_workflow'],
    responses: {
      200: { description: 'Updated in place: the status document', schema: shape.statusDocument },
      201: { description: 'Created: the status document', schema: shape.statusDocument },
    },
    body: shape.definitionBody,
    examples: ex.putWorkflowExamples,
  },
  'GET /api/workflows/:id': {
    tag: 'workflows',
    summary: "A workflow's status document (the same as …/status)",
    errors: ['workflow_not_found'],
    responses: { 200: { description: 'The status document of the latest run', schema: shape.statusDocument } },
  },
  'GET /api/workflows/:id/status': {
    tag: 'workflows',
    summary: "A workflow's status document",
    description: "workflow-graph's Workflow (id, name, trigger, jobs) with weft's data beside it; docs/api.md explains every field.",
    errors: ['workflow_not_found'],
    responses: { 200: { description: 'The status document of the latest run', schema: shape.statusDocument } },
  },
  'POST /api/workflows/:id/run': {
    tag: 'workflows',
    summary: 'Start the next run',
    description:
      'Enqueues the root jobs. By default one run per workflow is active at a time; `concurrency: {max_runs, when_full}` ' +
      'allows more, and with `when_full: queue` a start while every slot is taken answers 202 with the run `queued`, which ' +
      'starts (oldest first) when a slot frees. The body is optional: `inputs` gives values ' +
      "to the workflow's declared inputs (each job gets `WEFT_INPUT_<NAME>`); an undeclared input, or a required one left " +
      'out, is 400 `invalid_request` naming them (details `unknown_inputs`, `missing_inputs`).',
    errors: ['workflow_not_found', 'run_active'],
    responses: { 202: { description: 'The status document of the new run', schema: shape.statusDocument } },
    bodyOptional: true,
    examples: ex.runExamples,
  },
  'POST /api/workflows/:id/cancel': {
    tag: 'workflows',
    summary: 'Cancel a run, or every active run',
    description:
      'With `?run=N`, cancels that run; without it, every active run (running and queued). A queued run just ends ' +
      '`cancelled`; of a running one every pending, queued and running job is cancelled. With no active run nothing changes. ' +
      'The answer is the status document of the latest run plus `cancelled_jobs` and `cancelled_runs`. ' +
      'Jobs with if: always() or if: cancelled() are spared: they run once their needs have ended, and a second cancel stops them.',
    errors: ['workflow_not_found', 'run_not_found'],
    responses: { 202: { description: 'The status document plus the ids of the jobs and the numbers of the runs cancelled', schema: shape.cancelAnswer } },
    body: IGNORED_BODY,
    bodyOptional: true,
    examples: ex.cancelExamples,
  },
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
  'DELETE /api/workflows/:id': {
    tag: 'workflows',
    summary: 'Delete a workflow with its whole history',
    description:
      'Every run, job, lease and log chunk of it, in bounded steps. The id is free afterwards. A workflow loaded from ' +
      'WORKFLOWS_DIR comes back at the next start unless its file is removed.',
    errors: ['workflow_not_found', 'workflow_active'],
    responses: {
      200: {
        description: 'Deleted',
        schema: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'string' } }, additionalProperties: false },
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
