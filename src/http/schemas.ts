import { MAX_LEASE_TTL_SECS } from '../domain/lease.js';

/** JSON schemas shared by the route modules. Bodies reject unknown fields (see validation.ts). */

export const idParam = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const labelsSchema = {
  type: 'array',
  items: { type: 'string', minLength: 1, maxLength: 256 },
  maxItems: 256,
} as const;

// No NUL: it cannot be stored as text in PostgreSQL, and no real worker id needs one.
export const workerIdSchema = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' } as const;

export const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;


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
