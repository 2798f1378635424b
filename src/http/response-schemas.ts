/**
 * Schemas of the worker protocol's 200 answers (src/protocol/types.ts, docs/api.md). Fastify compiles
 * each into a serializer once, so the answers a worker fetches thousands of times a second are written
 * without a generic JSON.stringify walk. A field missing here would be dropped from the answer: the
 * protocol and compat suites compare whole answers, so they catch it.
 */

const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const strings = { type: 'array', items: str } as const;
const stringMap = { type: 'object', additionalProperties: str } as const;
/** Error bodies carry detail fields beyond error and message (ErrorBody). */
const errorBody = { type: 'object', additionalProperties: true, properties: { error: str, message: str } } as const;

const leaseView = {
  lease_id: str,
  job_id: str,
  workflow_id: str,
  worker_id: str,
  ttl_secs: int,
  granted_at_ms: int,
  expires_at_ms: int,
} as const;

const claimedJob = {
  type: 'object',
  properties: {
    job_id: str,
    workflow_id: str,
    command: str,
    required_labels: strings,
    // `backoff` is 'None' or an object (WireBackoff): left to JSON.stringify.
    retry_policy: { type: 'object', properties: { max_retries: int, backoff: {} } },
    attempt: int,
    upstream_outputs: { type: 'object', additionalProperties: stringMap },
    enqueued_at_ms: int,
    delayed_until_ms: int,
    run_number: int,
    name: str,
    env: stringMap,
    timeout_secs: { type: ['integer', 'null'] },
    // README "Artifacts": only on jobs whose definition has `artifacts:` or `download:`.
    artifacts: strings,
    downloads: {
      type: 'array',
      items: { type: 'object', properties: { job_id: str, name: str, size: int, sha256: str, path: str } },
    },
  },
} as const;

export const claimResult = { type: 'object', properties: { job: claimedJob, lease: { type: 'object', properties: leaseView } } } as const;

export const heartbeatAnswer = { type: 'object', properties: { ...leaseView, cancelled: { type: 'boolean' } } } as const;

/** complete and fail answers; a report-batch result is either. */
const reportAnswerProperties = {
  ok: { type: 'boolean' },
  status: str,
  enqueued: strings,
  attempt: int,
  delayed_until_ms: int,
} as const;

export const completeAnswer = { type: 'object', properties: reportAnswerProperties } as const;
export const failAnswer = completeAnswer;

export const pushLogsAnswer = { type: 'object', properties: { ok: { type: 'boolean' }, accepted: int, truncated: { type: 'boolean' } } } as const;

const claims = { type: 'array', items: claimResult } as const;

export const claimBatchAnswer = { type: 'object', properties: { claims } } as const;

export const reportBatchAnswer = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: { lease_id: str, status: int, result: completeAnswer, error: errorBody },
      },
    },
    claims,
  },
} as const;

export const heartbeatBatchAnswer = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: { type: 'object', properties: { lease_id: str, status: int, lease: heartbeatAnswer, error: errorBody } },
    },
  },
} as const;
