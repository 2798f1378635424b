/** Run history (docs/api.md "Runs"): past runs of a workflow, and re-running one. */
import { Type, type Static } from 'typebox';
import { RUN_STATES } from '../domain/model.js';
import { MAX_APPROVAL_COMMENT_CHARS } from '../domain/approval.js';
import { JobView, RunParentView } from './workflows-wire.js';
import { Id, NO_CONTROL_CHARACTERS, nullable, Priority, RunTriggerSchema, StateCounts, StringMap, stringEnum } from './schema-parts.js';

/** An item of `GET /api/workflows/{id}/runs` (run history), newest first. */
export const RunSummary = Type.Object({
  run_number: Type.Integer({ minimum: 1 }),
  status: stringEnum(RUN_STATES),
  created_at_ms: Type.Integer(),
  finished_at_ms: nullable(Type.Integer()),
  /** Jobs of the run in each state; states no job is in are left out. */
  job_counts: Type.Unsafe<Static<typeof StateCounts>>({
    type: 'object',
    description: 'jobs of the run in each state; states no job is in are left out',
    additionalProperties: { type: 'integer', minimum: 1 },
  }),
  /** As in the status document's `run`. */
  inputs: Type.Unsafe<Record<string, string>>({ ...StringMap, description: "the run's input values; {} when it has none" }),
  rerun_of: nullable(Type.Integer(), { description: 'the run this one re-runs; null for a run started afresh' }),
  concurrency_group: Type.Optional(Type.String({ description: "the run's concurrency group (only on a run in one)" })),
  trigger: RunTriggerSchema,
  event_name: nullable(Type.String(), { description: 'the name of the event the run was started with; null: none' }),
  /** README "Workflows calling workflows": only on a run a job's call started. */
  parent: Type.Optional(RunParentView),
});
export type RunSummary = Static<typeof RunSummary>;

export const RunList = Type.Array(RunSummary);

/** Most runs one page of the history holds; a larger `limit` is capped to it. */
export const MAX_RUN_PAGE = 1000;

export const RunsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 0, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: false },
);

export const RunParams = Type.Object({ id: Id, run: Type.Integer({ minimum: 1 }) });

/** The optional body of `POST /api/workflows/{id}/runs/{n}/rerun`: `only` or `from`, not both (checked by the route). */
export const RerunRequest = Type.Object(
  {
    /** `failed` (default): jobs that did not succeed run again; `all`: every job does. */
    only: Type.Optional(stringEnum(['failed', 'all'] as const)),
    /** Run this job and everything downstream of it again. */
    from: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: NO_CONTROL_CHARACTERS })),
    /** Every job of the new run is queued with this priority (README "Priorities"); absent: each job's own. */
    priority: Type.Optional(Priority),
  },
  { additionalProperties: false },
);
export type RerunRequest = Static<typeof RerunRequest>;

/** `POST /api/workflows/{id}/runs/{n}/jobs/{job}/approve` and `…/reject` (README "Approvals"). */
export const ApprovalParams = Type.Object({
  id: Id,
  run: Type.Integer({ minimum: 1 }),
  job: Type.String({ pattern: '^[A-Za-z0-9_.~-]{1,128}$' }),
});

/** The optional body of an approve or reject; none means no comment. */
export const ApprovalRequest = Type.Object(
  { comment: Type.Optional(Type.String({ maxLength: MAX_APPROVAL_COMMENT_CHARS, pattern: '^[^\\u0000]*$', description: 'kept with the decision' })) },
  { additionalProperties: false },
);
export type ApprovalRequest = Static<typeof ApprovalRequest>;

/** The answer of an approve or reject: the run and the job as the decision left it. */
export const ApprovalResponse = Type.Object({
  workflow_id: Type.String(),
  run_number: Type.Integer({ minimum: 1 }),
  decision: stringEnum(['approved', 'rejected'] as const),
  job: JobView,
});
export type ApprovalResponse = Static<typeof ApprovalResponse>;
