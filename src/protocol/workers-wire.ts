/** Workers (docs/api.md "Workers"): registration and the worker list. */
import { Type, type Static } from 'typebox';
import { Labels, nullable, stringEnum, WorkerId } from './schema-parts.js';

export const RegisterRequest = Type.Object({ worker_id: WorkerId, labels: Type.Optional(Labels) }, { additionalProperties: false });
export type RegisterRequest = Static<typeof RegisterRequest>;

const currentJobProperties = {
  workflow_id: Type.String(),
  job_id: Type.String(),
  run_number: Type.Integer(),
  attempt: Type.Integer(),
};

/** The job and run a worker holds. */
export const CurrentJob = Type.Object(currentJobProperties);
export type CurrentJob = Static<typeof CurrentJob>;

/** The job, run and lease a worker holds. */
export const CurrentLease = Type.Object({ ...currentJobProperties, lease_id: Type.String() });
export type CurrentLease = Static<typeof CurrentLease>;

/** `GET /api/workers` items. The first block is workflow-graph's WorkerInfo. */
export const WorkerView = Type.Object({
  worker_id: Type.String(),
  labels: Type.Array(Type.String()),
  registered_at_ms: Type.Integer(),
  /** When any call of the worker was last seen (the same as `last_seen_ms`). */
  last_heartbeat_ms: Type.Integer(),
  /** The id of the job it holds (the oldest, if several); null when idle. */
  current_job: nullable(Type.String()),
  status: stringEnum(['idle', 'busy', 'offline'] as const),

  last_seen_ms: Type.Integer(),
  /**
   * When tokens are on, only the leases the caller may see: every one for an admin token, those it
   * claimed itself for a worker token, none for a read token (README "Access tokens").
   */
  current_lease: Type.Union([CurrentLease, Type.Null()], {
    description: "With tokens on: only a lease the caller's token claimed (every lease for an admin token); null otherwise",
  }),
  /** Every lease it holds (a worker with CONCURRENCY > 1 may hold several), as far as the caller may see them. */
  current_leases: Type.Array(CurrentLease, { description: 'The leases it holds that the caller may see (as current_lease)' }),
  /** Every job it holds, without lease ids, for every caller. */
  current_jobs: Type.Array(CurrentJob, { description: 'Every job it holds, without lease ids' }),
});
export type WorkerView = Static<typeof WorkerView>;

export const WorkerList = Type.Array(WorkerView);

/** Most workers one page holds; a larger `limit` is capped to it. */
export const MAX_WORKER_PAGE = 1000;
/** PostgreSQL takes OFFSET as a 32-bit integer. */
export const MAX_WORKER_OFFSET = 2_147_483_647;

/** Without either, every worker (SPEC 4.3); with either, one page by worker id. */
export const WorkersQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 0 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKER_OFFSET })),
});
