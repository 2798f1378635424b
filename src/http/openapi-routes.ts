/**
 * What the API reference says about each route beyond its schemas (docs/api.md): a tag, a summary, the
 * error codes it answers, answers that have no response schema, and request examples. Keyed by
 * "METHOD /path" exactly as the route is registered; the OpenAPI test fails for a route missing here.
 */
import type { ErrorCode } from '../protocol/errors.js';
import * as ex from './openapi-examples.js';
import * as shape from './openapi-shapes.js';

export const TAGS = [
  { name: 'workflows', description: 'Workflow definitions, runs and their status documents' },
  { name: 'workers', description: 'Worker registration and the worker list' },
  { name: 'jobs', description: 'The worker protocol: claims and the calls on a lease' },
  { name: 'batches', description: 'Batched worker calls for workers that run many jobs at once' },
  { name: 'logs', description: 'Job logs, stored and live' },
  { name: 'artifacts', description: "Files a job's successful attempt uploaded, for later jobs and for people" },
  { name: 'service', description: 'Health, readiness and this document' },
] as const;

export type Tag = (typeof TAGS)[number]['name'];

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

const LEASE_ERRORS: ErrorCode[] = ['lease_not_found', 'lease_expired', 'lease_timed_out', 'lease_completed', 'lease_failed', 'lease_released'];
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
  'POST /api/workers/register': {
    tag: 'workers',
    summary: 'Register a worker (optional: a claim registers it too)',
    description: 'Registering again updates the labels.',
    responses: { 200: { description: 'The worker record', schema: shape.workerView } },
    examples: ex.registerExamples,
  },
  'GET /api/workers': {
    tag: 'workers',
    summary: 'List workers',
    description:
      '`status` is busy while the worker holds an unexpired lease, else offline when unseen for WORKER_OFFLINE_SECS, else idle. ' +
      'Ordered by worker id. Without `limit` and `offset`, every worker; with either, one page (`limit` defaults to and is capped ' +
      'at 1000). A worker unseen for WORKER_RETAIN_SECS and holding no lease is deleted by the reaper.',
    responses: { 200: { description: 'The known workers (a page of them with limit/offset)', schema: shape.workerList } },
  },
  'POST /api/jobs/claim': {
    tag: 'jobs',
    summary: 'Claim the oldest job that fits the labels',
    description:
      'A job fits when its required_labels are a subset of `labels`. With `wait_secs`, a claim that finds nothing waits for a ' +
      'fitting job (a long poll) and answers null only when the time is up.',
    responses: { 200: { description: 'The job and its lease, or null when nothing fits' } },
    examples: ex.claimExamples,
  },
  'POST /api/jobs/:lease_id/heartbeat': {
    tag: 'jobs',
    summary: 'Renew a lease',
    description: 'A 409 job_cancelled tells the worker to stop the job.',
    errors: [...LEASE_ERRORS, 'job_cancelled'],
    responses: { 200: { description: 'The renewed lease' } },
    body: IGNORED_BODY,
    bodyOptional: true,
    examples: ex.heartbeatExamples,
  },
  'POST /api/jobs/:lease_id/complete': {
    tag: 'jobs',
    summary: 'Report success, with outputs for downstream jobs',
    description: 'After a cancel this answers 200 and changes nothing.',
    errors: LEASE_ERRORS,
    responses: { 200: { description: "The job's new state and the jobs now queued" } },
    bodyOptional: true,
    examples: ex.completeExamples,
  },
  'POST /api/jobs/:lease_id/fail': {
    tag: 'jobs',
    summary: 'Report failure',
    description: 'With `retryable` and budget left the job is re-queued after its backoff; otherwise it fails and its downstream jobs are skipped.',
    errors: LEASE_ERRORS,
    responses: { 200: { description: "The job's new state (queued or failed), attempt and delay" } },
    examples: ex.failExamples,
  },
  'POST /api/jobs/:lease_id/logs': {
    tag: 'logs',
    summary: 'Push log chunks',
    description:
      'A chunk re-sent with a sequence already stored for that attempt is kept once. `workflow_id`/`job_id`, when sent, must match the lease. ' +
      'An attempt keeps at most MAX_LOG_BYTES_PER_ATTEMPT bytes of log data: the chunk that passes it is stored as a marker line, the rest is ' +
      'dropped, and the answer carries `truncated: true` from then on (the worker may stop sending).',
    errors: [...LEASE_ERRORS, 'chunk_mismatch'],
    responses: { 200: { description: 'How many chunks were kept, and `truncated: true` once the attempt\'s log is full' } },
    examples: ex.pushLogsExamples,
  },
  'GET /api/jobs/:wf_id/:job_id/cancelled': {
    tag: 'jobs',
    summary: 'Whether a job of a run is cancelled',
    description:
      'With `?run=N`, the job of that run (a worker always sends the run of the job it holds); without it, the job of the ' +
      "workflow's newest running run, or of its latest run when none is running.",
    errors: ['workflow_not_found', 'job_not_found', 'run_not_found'],
    responses: { 200: { description: 'true when cancelled, else false', schema: { type: 'boolean' } } },
  },
  'POST /api/jobs/claim-batch': {
    tag: 'batches',
    summary: 'Claim up to max_jobs jobs at once',
    responses: { 200: { description: 'Each claim exactly as a one-job claim answers it; [] when nothing fits by the deadline' } },
    examples: ex.claimBatchExamples,
  },
  'POST /api/jobs/report-batch': {
    tag: 'batches',
    summary: 'Report many completions and failures, then optionally claim more',
    description:
      'Each report succeeds or fails on its own, answered with the status and error body its one-job call would have had. ' +
      'A report that is not well formed makes the whole batch a 400 and nothing is applied.',
    responses: { 200: { description: 'One result per report, in order, and the new claims' } },
    examples: ex.reportBatchExamples,
  },
  'POST /api/jobs/heartbeat-batch': {
    tag: 'batches',
    summary: 'Renew many leases',
    responses: { 200: { description: 'One result per lease, in order' } },
    examples: ex.heartbeatBatchExamples,
  },
  'PUT /api/jobs/:lease_id/artifacts/:name': {
    tag: 'artifacts',
    summary: "Upload a file of the lease's attempt as artifact {name}",
    description:
      'The body is the file, `Content-Type: application/octet-stream`, streamed; `x-weft-sha256` is its SHA-256 (64 lowercase hex ' +
      'digits). `{name}` is the path relative to the job\'s working directory, URL-encoded as one segment. The lease must be live ' +
      'and held by the caller\'s token when the upload starts and ends. The server hashes as it stores and refuses a mismatch; ' +
      'over MAX_ARTIFACT_BYTES it answers 413. Either way nothing is stored. The same name again in the attempt replaces it; ' +
      'only a successful attempt\'s artifacts are ever listed. Exempt from REQUEST_TIMEOUT_SECS; cut after 60 s without a byte.',
    errors: [
      'invalid_artifact_name',
      'artifact_checksum_mismatch',
      'artifact_too_large',
      'unsupported_media_type',
      'lease_not_yours',
      'job_cancelled',
      ...LEASE_ERRORS,
    ],
    headers: {
      type: 'object',
      required: ['x-weft-sha256'],
      properties: { 'x-weft-sha256': { type: 'string', pattern: '^[0-9a-f]{64}$', description: "SHA-256 of the body, as the uploader computed it" } },
    },
    responses: { 201: { description: 'Stored', schema: shape.artifactView } },
  },
  'GET /api/workflows/:wf_id/runs/:run/artifacts': {
    tag: 'artifacts',
    summary: "A run's artifacts",
    description: "Of the jobs that succeeded, by job then name; `job` keeps one job's. A re-run's kept jobs list those of the run they were kept from.",
    errors: ['workflow_not_found', 'run_not_found'],
    responses: { 200: { description: 'The artifacts', schema: shape.artifactList } },
  },
  'GET /api/workflows/:wf_id/runs/:run/artifacts/:job_id/:name': {
    tag: 'artifacts',
    summary: 'Download an artifact (Range supported)',
    description:
      'The bytes, streamed, as an attachment, with `x-weft-sha256`, `ETag` and `Accept-Ranges: bytes`. One `Range` (`bytes=a-b`, ' +
      '`bytes=a-`, `bytes=-n`) answers 206 with `Content-Range`; a range past the end answers 416; several ranges get the whole file.',
    errors: ['artifact_not_found', 'range_not_satisfiable'],
    responses: {
      200: { description: 'The whole artifact', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      206: { description: 'The requested range', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
    },
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
  'GET /api/workflows/:id/runs': {
    tag: 'workflows',
    summary: "A page of the workflow's runs, newest first (run history)",
    description: '`limit` (default 50) above 1000 is capped at 1000. Each run has its jobs counted by state.',
    errors: ['workflow_not_found'],
    responses: { 200: { description: 'Runs, newest first; [] when the workflow never ran', schema: shape.runList } },
  },
  'GET /api/workflows/:id/definition': {
    tag: 'workflows',
    summary: 'The workflow definition, in the contract form of a workflow file',
    description: 'Defaults are left out; `steps:` show as the one `run` they are joined into. Parsing it gives the same definition.',
    errors: ['workflow_not_found'],
    responses: {
      200: {
        description: 'The definition',
        schema: {
          type: 'object',
          required: ['id', 'name', 'jobs'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            on: { description: 'the trigger, as the workflow file gave it' },
            env: { type: 'object', additionalProperties: { type: 'string' } },
            jobs: { type: 'object', additionalProperties: { type: 'object' }, description: 'job id → job, in the contract form' },
          },
        },
      },
    },
  },
  'POST /api/workflows/:id/runs/:run/rerun': {
    tag: 'workflows',
    summary: 'Start the next run as a re-run of run n',
    description:
      'A new run from the current definition with run n\'s inputs. `only: "failed"` (the default, also with no body) runs ' +
      'again every job that did not succeed in run n; `only: "all"` runs every job; `from: <job>` runs that job and ' +
      'everything downstream of it. The other jobs start as `success` with run n\'s outputs. Give `only` or `from`, not both.',
    errors: ['workflow_not_found', 'run_not_found', 'run_active', 'nothing_to_rerun'],
    responses: { 202: { description: 'The status document of the new run', schema: shape.statusDocument } },
    bodyOptional: true,
    examples: ex.rerunExamples,
  },
  'GET /api/workflows/:id/runs/:run': {
    tag: 'workflows',
    summary: 'The status document of one run',
    errors: ['workflow_not_found', 'run_not_found'],
    responses: { 200: { description: 'The status document of that run', schema: shape.statusDocument } },
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
  'GET /api/openapi.json': {
    tag: 'service',
    summary: 'This document',
    description: 'OpenAPI 3.1, generated from the route schemas.',
    store: false,
    responses: { 200: { description: 'The OpenAPI document', schema: shape.openApiDocument } },
  },
};
