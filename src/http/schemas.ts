import { MAX_LABEL_LENGTH, MAX_LABELS } from '../domain/labels.js';
import { MAX_INPUT_VALUE_LENGTH, MAX_INPUTS } from '../domain/inputs.js';
import { MAX_LEASE_TTL_SECS } from '../domain/lease.js';

/** JSON schemas shared by the route modules. Bodies reject unknown fields (see validation.ts). */

/**
 * No control characters in ids and labels: NUL cannot be stored as PostgreSQL text, and the others
 * are invisible wherever the value is shown. validation.ts words this pattern's failure.
 */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001f\\u007f]*$';

export const idParam = { type: 'string', minLength: 1, maxLength: 256, pattern: NO_CONTROL_CHARACTERS } as const;

export const labelsSchema = {
  type: 'array',
  items: { type: 'string', minLength: 1, maxLength: MAX_LABEL_LENGTH, pattern: NO_CONTROL_CHARACTERS },
  maxItems: MAX_LABELS,
} as const;

export const workerIdSchema = { type: 'string', minLength: 1, maxLength: 256, pattern: NO_CONTROL_CHARACTERS } as const;

/**
 * A job's outputs (README "Limits"). Each becomes an environment variable of the jobs downstream,
 * so the count is bounded; the values' total size is bounded by the body limit alone.
 */
export const MAX_OUTPUTS = 1000;
export const MAX_OUTPUT_KEY_LENGTH = 256;
export const outputsSchema = {
  type: 'object',
  maxProperties: MAX_OUTPUTS,
  propertyNames: { maxLength: MAX_OUTPUT_KEY_LENGTH },
  additionalProperties: { type: 'string' },
} as const;

export const leaseTtlSchema = { type: 'integer', minimum: 1, maximum: MAX_LEASE_TTL_SECS } as const;

/** Long-poll of a claim: how long to wait for a job when none fits (docs/api.md). */
export const MAX_WAIT_SECS = 60;
export const waitSecsSchema = { type: 'number', minimum: 0, maximum: MAX_WAIT_SECS } as const;

/** The fields of a claim body; the batched claim adds max_jobs (docs/api.md). */
export const claimBodyProperties = {
  worker_id: workerIdSchema,
  labels: labelsSchema,
  lease_ttl_secs: leaseTtlSchema,
  wait_secs: waitSecsSchema,
} as const;

/**
 * `POST /api/workflows/{id}/run` (docs/api.md). Optional: old clients send no body, or an empty one.
 * Whether each input is declared is the engine's check; a NUL is refused there too, with the input named.
 */
export const runBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    inputs: {
      type: 'object',
      maxProperties: MAX_INPUTS,
      propertyNames: { minLength: 1, maxLength: 128 },
      additionalProperties: { type: 'string', maxLength: MAX_INPUT_VALUE_LENGTH },
    },
  },
} as const;

/** `POST /api/workflows/{id}/runs/{n}/rerun`: `only` or `from`, not both (checked by the route); none = only failed. */
export const rerunBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    only: { type: 'string', enum: ['failed', 'all'] },
    from: { type: 'string', minLength: 1, maxLength: 128, pattern: NO_CONTROL_CHARACTERS },
  },
} as const;
