/**
 * JSON Schemas (draft-07) of the shapes existing workflow-graph clients read (the table of
 * docs/protocol.md "Who speaks it"), written from that table rather than from weft's output,
 * so a server change that breaks an old client fails here. Extra properties are allowed everywhere:
 * serde ignores unknown fields, but a missing or re-typed known one breaks deserialization.
 */
import assert from 'node:assert/strict';
import { Ajv, type SchemaObject, type ValidateFunction } from 'ajv';

/** The job `status` vocabulary old clients parse (never weft's `pending` or `failed`). */
export const UPSTREAM_STATUSES = ['queued', 'running', 'success', 'failure', 'skipped', 'cancelled'] as const;
/** weft's own job states, shown in the additive `state` field. */
export const WEFT_STATES = ['pending', 'queued', 'running', 'success', 'failed', 'skipped', 'cancelled'] as const;
/** How a weft state shows in the upstream `status` field. */
export const STATE_TO_STATUS: Record<(typeof WEFT_STATES)[number], (typeof UPSTREAM_STATUSES)[number]> = {
  pending: 'queued',
  queued: 'queued',
  running: 'running',
  success: 'success',
  failed: 'failure',
  skipped: 'skipped',
  cancelled: 'cancelled',
};

const uint = { type: 'integer', minimum: 0 };
const uintOrNull = { type: ['integer', 'null'], minimum: 0 };
const strings = { type: 'array', items: { type: 'string' } };
/** Epoch milliseconds: anything below 1e12 is seconds or a duration, not a timestamp. */
const epochMs = { type: 'number', exclusiveMinimum: 1e12 };
const epochMsOrNull = { type: ['number', 'null'], exclusiveMinimum: 1e12 };

/** workflow-graph's Job, as its serde struct and TS client read it. */
export const UPSTREAM_JOB: SchemaObject = {
  type: 'object',
  required: [
    'id',
    'name',
    'status',
    'command',
    'duration_secs',
    'started_at',
    'depends_on',
    'output',
    'required_labels',
    'max_retries',
    'attempt',
    'metadata',
  ],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    status: { enum: [...UPSTREAM_STATUSES] },
    command: { type: 'string' },
    duration_secs: uintOrNull,
    started_at: epochMsOrNull,
    depends_on: strings,
    output: { type: ['string', 'null'] },
    required_labels: strings,
    max_retries: uint,
    attempt: uint,
    metadata: { type: 'object' },
    // serde defaults: may be absent, but typed when present.
    ports: { type: 'array' },
    children: { type: ['array', 'null'] },
    collapsed: { type: 'boolean' },
  },
};

/** weft's additive job fields, and the state -> status mapping between them. */
export const WEFT_JOB_FIELDS: SchemaObject = {
  type: 'object',
  required: ['state', 'started_at_ms', 'finished_at_ms', 'duration_ms'],
  properties: {
    state: { enum: [...WEFT_STATES] },
    started_at_ms: { type: ['integer', 'null'], exclusiveMinimum: 1e12 },
    finished_at_ms: { type: ['integer', 'null'], exclusiveMinimum: 1e12 },
    duration_ms: uintOrNull,
  },
  allOf: WEFT_STATES.map((state) => ({
    if: { required: ['state'], properties: { state: { const: state } } },
    then: { properties: { status: { const: STATE_TO_STATUS[state] } } },
  })),
};

export const JOB: SchemaObject = { allOf: [UPSTREAM_JOB, WEFT_JOB_FIELDS] };

/** The status document, the 201 body of POST /api/workflows, and every item of GET /api/workflows. */
export const WORKFLOW: SchemaObject = {
  type: 'object',
  required: ['id', 'name', 'trigger', 'jobs'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    trigger: { type: 'string' },
    jobs: { type: 'array', items: JOB },
  },
};

export const WORKFLOW_LIST: SchemaObject = { type: 'array', items: WORKFLOW };

const UPSTREAM_WORKER: SchemaObject = {
  type: 'object',
  required: ['worker_id', 'labels', 'registered_at_ms', 'last_heartbeat_ms', 'current_job', 'status'],
  properties: {
    worker_id: { type: 'string' },
    labels: strings,
    registered_at_ms: epochMs,
    last_heartbeat_ms: epochMs,
    current_job: { type: ['string', 'null'] },
    status: { enum: ['idle', 'busy', 'offline'] },
  },
};

const LEASE_HELD: SchemaObject = {
  type: 'object',
  required: ['workflow_id', 'job_id', 'run_number', 'lease_id'],
  properties: {
    workflow_id: { type: 'string' },
    job_id: { type: 'string' },
    run_number: { type: 'integer', minimum: 1 },
    lease_id: { type: 'string' },
  },
};

const WEFT_WORKER_FIELDS: SchemaObject = {
  type: 'object',
  required: ['last_seen_ms', 'current_lease'],
  properties: {
    last_seen_ms: epochMs,
    current_lease: { oneOf: [{ type: 'null' }, LEASE_HELD] },
  },
  allOf: [
    {
      if: { required: ['status'], properties: { status: { const: 'busy' } } },
      then: { properties: { current_job: { type: 'string' }, current_lease: LEASE_HELD } },
    },
    {
      if: { required: ['status'], properties: { status: { const: 'idle' } } },
      then: { properties: { current_job: { type: 'null' }, current_lease: { type: 'null' } } },
    },
  ],
};

/** Each item of GET /api/workers and the body of POST /api/workers/register. */
export const WORKER: SchemaObject = { allOf: [UPSTREAM_WORKER, WEFT_WORKER_FIELDS] };
export const WORKER_LIST: SchemaObject = { type: 'array', items: WORKER };

export const LOG_CHUNK: SchemaObject = {
  type: 'object',
  required: ['workflow_id', 'job_id', 'sequence', 'data', 'timestamp_ms', 'stream'],
  properties: {
    workflow_id: { type: 'string' },
    job_id: { type: 'string' },
    sequence: uint,
    data: { type: 'string' },
    timestamp_ms: epochMs,
    stream: { enum: ['stdout', 'stderr'] },
  },
};

/** GET /api/workflows/{wf}/jobs/{job}/logs. */
export const LOG_HISTORY: SchemaObject = { type: 'array', items: LOG_CHUNK };

const ajv = new Ajv({ allErrors: true, strict: false });

export const validators = {
  workflow: ajv.compile(WORKFLOW),
  workflowList: ajv.compile(WORKFLOW_LIST),
  job: ajv.compile(JOB),
  worker: ajv.compile(WORKER),
  workerList: ajv.compile(WORKER_LIST),
  logHistory: ajv.compile(LOG_HISTORY),
} satisfies Record<string, ValidateFunction>;

/**
 * Fails with every ajv error (where, what, which schema rule) and the offending JSON, so whoever
 * reads the failure sees both what the old client expects and what the server sent.
 */
export function assertSchema(validate: ValidateFunction, value: unknown, what: string): void {
  if (validate(value)) return;
  const errors = (validate.errors ?? []).map(
    (e) => `  - ${e.instancePath || '(root)'} ${e.message ?? 'is invalid'} ${JSON.stringify(e.params)}  [schema ${e.schemaPath}]`,
  );
  assert.fail(
    `${what} does not match the workflow-graph compatibility schema (docs/protocol.md):\n` +
      `${errors.join('\n')}\noffending JSON:\n${JSON.stringify(value, null, 2)}`,
  );
}
