/**
 * Schemas that exist only for the API reference (GET /api/openapi.json): the answers that are written
 * without a response schema (status documents, workers, log chunks, health), and the two forms of a
 * workflow definition, which the definitions module validates itself rather than a route schema.
 * They describe src/protocol/types.ts and docs/api.md; the OpenAPI test checks live answers against
 * them, so they cannot drift from what the server sends.
 */
import { JOB_STATES } from '../domain/types.js';
import { ERROR_CODES } from '../protocol/errors.js';
import { COMPAT_JOB_STATUSES } from '../protocol/states.js';

const str = { type: 'string' } as const;
const strOrNull = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const intOrNull = { type: ['integer', 'null'] } as const;
const strings = { type: 'array', items: str } as const;
const stringMap = { type: 'object', additionalProperties: str } as const;
const WORKFLOW_STATES = ['idle', 'queued', 'running', 'success', 'failed', 'cancelled'] as const;

/** Every non-2xx answer (src/protocol/errors.ts ErrorBody). */
export const errorBodySchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'A code of the catalogue in docs/protocol.md.' },
    message: { type: 'string', description: 'What went wrong and what to fix, for a person.' },
  },
  additionalProperties: true,
  description: 'Some errors add detail fields: `issues` for invalid_workflow, `run_number` for run_active.',
} as const;

/** Backoff as the status document and claims show it: serde's external tagging. */
const wireBackoff = {
  description: '"None", {"Fixed": {"delay_secs"}} or {"Exponential": {"base_secs", "max_secs"}}',
  anyOf: [
    { type: 'string', enum: ['None'] },
    { type: 'object', required: ['Fixed'], properties: { Fixed: { type: 'object', properties: { delay_secs: int } } } },
    {
      type: 'object',
      required: ['Exponential'],
      properties: { Exponential: { type: 'object', properties: { base_secs: int, max_secs: int } } },
    },
  ],
} as const;

const jobView = {
  type: 'object',
  required: ['id', 'name', 'status', 'command', 'duration_secs', 'started_at', 'depends_on', 'output', 'required_labels', 'max_retries', 'attempt', 'state'],
  properties: {
    id: str,
    name: str,
    status: { type: 'string', enum: COMPAT_JOB_STATUSES, description: "workflow-graph's vocabulary; weft's own state is `state`" },
    command: str,
    duration_secs: { ...intOrNull, description: 'whole seconds the finished attempt took' },
    started_at: { ...intOrNull, description: 'epoch ms the current attempt started' },
    depends_on: strings,
    output: { ...strOrNull, description: 'the last error text' },
    required_labels: strings,
    max_retries: int,
    attempt: int,
    metadata: { type: 'object' },
    ports: { type: 'array' },
    children: { type: ['array', 'null'] },
    collapsed: { type: 'boolean' },
    state: { type: 'string', enum: JOB_STATES },
    started_at_ms: intOrNull,
    finished_at_ms: intOrNull,
    duration_ms: intOrNull,
    backoff: wireBackoff,
    timeout_secs: intOrNull,
    enqueued_at_ms: intOrNull,
    delayed_until_ms: int,
    outputs: stringMap,
    error: strOrNull,
    worker_id: strOrNull,
    condition: { type: 'string', enum: ['success()', 'failure()', 'always()', 'cancelled()'], description: 'the job\'s `if:`' },
    needs_results: { ...stringMap, description: 'needs that ended other than success: failure, skipped or cancelled' },
  },
} as const;

const runView = {
  type: ['object', 'null'],
  properties: {
    number: int,
    status: { type: 'string', enum: WORKFLOW_STATES },
    created_at: str,
    finished_at: strOrNull,
    created_at_ms: int,
    finished_at_ms: intOrNull,
    inputs: { ...stringMap, description: "the run's input values; {} when it has none" },
    rerun_of: { ...intOrNull, description: 'the run this one re-runs; null for a run started afresh' },
  },
} as const;

const statusProperties = {
  id: str,
  name: str,
  trigger: { type: 'string', description: '"" when the definition has none' },
  jobs: { type: 'array', items: jobView },
  status: { type: 'string', enum: WORKFLOW_STATES },
  run_number: intOrNull,
  run: runView,
  source: { type: 'string', enum: ['file', 'api'] },
  created_at: str,
  updated_at: str,
  next_fire_at_ms: { ...intOrNull, description: 'When its on.schedule next starts a run (epoch ms); null without schedules' },
} as const;

/** docs/api.md "GET /api/workflows/{id}/status": workflow-graph's Workflow with weft's data beside it. */
export const statusDocument = {
  type: 'object',
  required: ['id', 'name', 'trigger', 'jobs', 'status', 'run_number', 'run'],
  properties: statusProperties,
} as const;

/** An item of `GET /api/workflows?jobs=false` and the data of the list stream's `workflow` events. */
const workflowSummary = {
  type: 'object',
  required: ['id', 'name', 'trigger', 'status', 'run_number', 'run', 'job_counts'],
  properties: {
    ...Object.fromEntries(Object.entries(statusProperties).filter(([k]) => k !== 'jobs' && k !== 'run')),
    run: { ...runView, description: "The latest run, without its inputs (null: never run)" },
    job_counts: { type: 'object', additionalProperties: { type: 'integer' }, description: 'Jobs of the latest run by state; states no job is in are left out' },
  },
} as const;

/** `GET /api/workflows`: status documents, or with `jobs=false` summaries. */
export const statusList = {
  type: 'array',
  items: { oneOf: [statusDocument, workflowSummary] },
  description: 'Status documents with their jobs; with `jobs=false`, summaries (job counts instead of jobs)',
} as const;

/** An item of the run history (docs/api.md "Runs"). */
export const runSummary = {
  type: 'object',
  required: ['run_number', 'status', 'created_at_ms', 'finished_at_ms', 'job_counts'],
  properties: {
    run_number: { type: 'integer', minimum: 1 },
    status: { type: 'string', enum: ['queued', 'running', 'success', 'failed', 'cancelled'] },
    created_at_ms: { type: 'integer' },
    finished_at_ms: { type: ['integer', 'null'] },
    job_counts: {
      type: 'object',
      description: 'jobs of the run in each state; states no job is in are left out',
      additionalProperties: { type: 'integer', minimum: 1 },
    },
    inputs: { ...stringMap, description: "the run's input values; {} when it has none" },
    rerun_of: { ...intOrNull, description: 'the run this one re-runs; null for a run started afresh' },
  },
} as const;

export const runList = { type: 'array', items: runSummary } as const;

export const cancelAnswer = {
  type: 'object',
  required: [...statusDocument.required, 'cancelled_jobs'],
  properties: { ...statusProperties, cancelled_jobs: strings, cancelled_runs: { type: 'array', items: int } },
} as const;

const currentLease = {
  type: 'object',
  properties: { workflow_id: str, job_id: str, run_number: int, attempt: int, lease_id: str },
} as const;

const currentJob = {
  type: 'object',
  properties: { workflow_id: str, job_id: str, run_number: int, attempt: int },
} as const;

export const workerView = {
  type: 'object',
  required: ['worker_id', 'labels', 'registered_at_ms', 'last_heartbeat_ms', 'current_job', 'status'],
  properties: {
    worker_id: str,
    labels: strings,
    registered_at_ms: int,
    last_heartbeat_ms: int,
    current_job: strOrNull,
    status: { type: 'string', enum: ['idle', 'busy', 'offline'] },
    last_seen_ms: int,
    current_lease: {
      ...currentLease,
      type: ['object', 'null'],
      description: "With tokens on: only a lease the caller's token claimed (every lease for an admin token); null otherwise",
    },
    current_leases: { type: 'array', items: currentLease, description: 'The leases it holds that the caller may see (as current_lease)' },
    current_jobs: { type: 'array', items: currentJob, description: 'Every job it holds, without lease ids' },
  },
} as const;

export const workerList = { type: 'array', items: workerView } as const;

/** An artifact as listed (README "Artifacts"). */
export const artifactView = {
  type: 'object',
  required: ['job_id', 'name', 'size', 'sha256', 'created_at_ms'],
  properties: {
    job_id: { type: 'string' },
    name: { type: 'string' },
    size: { type: 'integer', minimum: 0 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    created_at_ms: { type: 'integer' },
  },
} as const;

export const artifactList = {
  type: 'object',
  required: ['workflow_id', 'run_number', 'artifacts'],
  properties: { workflow_id: { type: 'string' }, run_number: { type: 'integer' }, artifacts: { type: 'array', items: artifactView } },
} as const;

export const logChunks = {
  type: 'array',
  items: {
    type: 'object',
    required: ['workflow_id', 'job_id', 'run_number', 'attempt', 'sequence', 'stream', 'data', 'timestamp_ms'],
    properties: {
      workflow_id: str,
      job_id: str,
      run_number: int,
      attempt: int,
      sequence: int,
      stream: { type: 'string', enum: ['stdout', 'stderr'] },
      data: str,
      timestamp_ms: int,
    },
  },
} as const;

export const healthAnswer = {
  type: 'object',
  required: ['ok', 'event_loop_delay_ms'],
  properties: {
    ok: { type: 'boolean' },
    event_loop_delay_ms: {
      type: 'object',
      description: 'how long callbacks waited for the event loop over the last one to two seconds',
      properties: { p50: { type: 'number' }, p99: { type: 'number' }, max: { type: 'number' } },
    },
  },
} as const;

export const openApiDocument = {
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: { openapi: str, info: { type: 'object' }, paths: { type: 'object' } },
} as const;

export const readyAnswer = { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } } as const;

// ------------------------------------------------------------------ workflow definitions (README "Workflow definitions")

const nonNegative = { type: 'integer', minimum: 0 } as const;
const backoffInput = {
  description: 'none, {fixed: {delay_secs}} or {exponential: {base_secs, max_secs}}; the PascalCase spellings are accepted too',
  anyOf: [
    { type: 'string', enum: ['none', 'None'] },
    { type: 'object', minProperties: 1, maxProperties: 1 },
  ],
} as const;
const needsInput = { anyOf: [str, strings] } as const;
const jobId = { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,128}$' } as const;

const contractJob = {
  type: 'object',
  additionalProperties: false,
  description: 'exactly one of `run` and `steps`',
  properties: {
    name: str,
    needs: needsInput,
    if: { type: 'string', description: 'success() (default), failure(), always() or cancelled(); ${{ }} around it is accepted' },
    run: { type: 'string', description: 'the command, run with sh -c' },
    steps: { type: 'array', items: { type: 'object', required: ['run'], properties: { name: str, run: str } } },
    labels: strings,
    retries: nonNegative,
    backoff: backoffInput,
    env: stringMap,
    timeout_secs: nonNegative,
  },
} as const;

const arrayJob = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'command'],
  properties: {
    id: jobId,
    name: str,
    command: { type: 'string', description: 'the command, run with sh -c' },
    depends_on: needsInput,
    required_labels: strings,
    max_retries: nonNegative,
    backoff: backoffInput,
    env: stringMap,
    timeout_secs: nonNegative,
    // workflow-graph's clients send jobs in the full shape of their status document (docs/api.md).
    status: { description: 'accepted and ignored' },
    duration_secs: { description: 'accepted and ignored' },
    started_at: { description: 'accepted and ignored' },
    output: { description: 'accepted and ignored' },
    attempt: { description: 'accepted and ignored' },
    metadata: { type: 'object', description: 'kept and shown again in the status document' },
    ports: { type: 'array' },
    children: { type: ['array', 'null'] },
    collapsed: { type: 'boolean' },
  },
} as const;

/** POST /api/workflows and PUT /api/workflows/{id}: the contract form or the array form. */
export const definitionBody = {
  description:
    'A workflow definition in the contract form (jobs keyed by id) or the array form existing clients send (docs/api.md). ' +
    'Unknown keys, cycles and unknown `needs` are refused with 400 invalid_workflow listing every problem.',
  anyOf: [
    {
      title: 'contract form',
      type: 'object',
      additionalProperties: false,
      required: ['jobs'],
      properties: {
        id: jobId,
        name: str,
        on: { description: 'free text shown as the trigger' },
        env: stringMap,
        jobs: { type: 'object', minProperties: 1, additionalProperties: contractJob },
      },
    },
    {
      title: 'array form',
      type: 'object',
      additionalProperties: false,
      required: ['jobs'],
      properties: {
        id: jobId,
        name: str,
        trigger: str,
        env: stringMap,
        jobs: { type: 'array', minItems: 1, items: arrayJob },
      },
    },
  ],
} as const;
