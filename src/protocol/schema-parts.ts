/**
 * Pieces the wire schemas of every endpoint family are built from (src/protocol/*-wire.ts), defined
 * once here. They are TypeBox schemas: plain JSON Schema values that the server validates with and
 * serializes with, and that TypeScript reads the wire types from (`Static<typeof X>`).
 */
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { MAX_INPUTS, MAX_INPUT_VALUE_LENGTH } from '../domain/inputs.js';
import { MAX_LABEL_LENGTH, MAX_LABELS } from '../domain/labels.js';
import { MAX_LEASE_TTL_SECS } from '../domain/lease.js';
import { MAX_PRIORITY, MIN_PRIORITY } from '../domain/priority.js';
import { JOB_STATES, RUN_STATES, RUN_TRIGGERS, type JobState, type Outputs, type RunTrigger, type WorkflowState } from '../domain/model.js';
import { ERROR_CODES, type ErrorBody } from './errors.js';

/**
 * No control characters in ids and labels: NUL cannot be stored as PostgreSQL text, and the others
 * are invisible wherever the value is shown. src/http/validation.ts words this pattern's failure.
 */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001f\\u007f]*$';

/** A string of a fixed vocabulary, as `{type: string, enum}`: its refusal names every allowed value. */
export function stringEnum<T extends string>(values: readonly T[], options: { description?: string } = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** A primitive schema that also takes null, as `type: [t, 'null']` (one type check, no anyOf to try in turn). */
export function nullable<S extends TSchema & { type: string }>(schema: S, options: { description?: string } = {}): TUnsafe<Static<S> | null> {
  return Type.Unsafe<Static<S> | null>({ ...schema, type: [schema.type, 'null'], ...options });
}

/** What started a run (README "Dashboard"); null for a run from before runs recorded it. */
export const RunTriggerSchema = Type.Unsafe<RunTrigger | null>({
  type: ['string', 'null'],
  enum: [...RUN_TRIGGERS, null],
  description:
    'what started the run: manual (the API, CLI or dashboard), schedule, rerun, webhook, event or workflow_run; null for a run from before weft recorded it',
});

/** Ids in paths and bodies (workflow, job and lease ids). */
export const Id = Type.String({ minLength: 1, maxLength: 256, pattern: NO_CONTROL_CHARACTERS });
export const WorkerId = Type.String({ minLength: 1, maxLength: 256, pattern: NO_CONTROL_CHARACTERS });
export const Labels = Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH, pattern: NO_CONTROL_CHARACTERS }), { maxItems: MAX_LABELS });

/** An object of strings (env, outputs, inputs as answered). */
export const StringMap = Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' } });
/** Counts by state; states nothing is in are left out. */
export const StateCounts = Type.Unsafe<Partial<Record<JobState, number>>>({ type: 'object', additionalProperties: { type: 'integer' } });

/**
 * A job's outputs (README "Limits"). Each becomes an environment variable of the jobs downstream,
 * so the count is bounded; the values' total size is bounded by the body limit alone.
 */
export const MAX_OUTPUTS = 1000;
export const MAX_OUTPUT_KEY_LENGTH = 256;
export const OutputsInput = Type.Unsafe<Outputs>({
  type: 'object',
  maxProperties: MAX_OUTPUTS,
  propertyNames: { maxLength: MAX_OUTPUT_KEY_LENGTH },
  additionalProperties: { type: 'string' },
});

/** Values of a workflow's declared inputs, by name (README "Run inputs"). */
export const InputsInput = Type.Unsafe<Record<string, string>>({
  type: 'object',
  maxProperties: MAX_INPUTS,
  propertyNames: { minLength: 1, maxLength: 128 },
  additionalProperties: { type: 'string', maxLength: MAX_INPUT_VALUE_LENGTH },
});

export const LeaseTtl = Type.Integer({ minimum: 1, maximum: MAX_LEASE_TTL_SECS });

/** A priority (README "Priorities"): higher is claimed first. */
export const Priority = Type.Integer({ minimum: MIN_PRIORITY, maximum: MAX_PRIORITY, description: `${MIN_PRIORITY} (least urgent) to ${MAX_PRIORITY} (most urgent); default 0` });

/** Long-poll of a claim: how long to wait for a job when none fits (docs/api.md). */
export const MAX_WAIT_SECS = 60;
export const WaitSecs = Type.Number({ minimum: 0, maximum: MAX_WAIT_SECS });

export const JobStateSchema = stringEnum(JOB_STATES);
export const WORKFLOW_STATES = ['idle', ...RUN_STATES] as const satisfies readonly WorkflowState[];
export const WorkflowStateSchema = stringEnum(WORKFLOW_STATES);

/** Every non-2xx answer (src/protocol/errors.ts ErrorBody), and the error of a refused batch element. */
export const ErrorBodySchema = Type.Unsafe<ErrorBody>({
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'A code of the catalogue in docs/protocol.md.' },
    message: { type: 'string', description: 'What went wrong and what to fix, for a person.' },
  },
  additionalProperties: true,
  description: 'Some errors add detail fields: `issues` for invalid_workflow, `run_number` for run_active.',
});
