/**
 * Batched worker calls (docs/api.md "Batches"): additive to the one-job calls, for workers that run
 * many jobs at once. Each element is answered with the status and body its one-job call would have had.
 * The answers are compiled serializers, as the worker protocol's are (src/protocol/jobs-wire.ts).
 */
import { Type, type Static } from 'typebox';
import type { Outputs } from '../domain/model.js';
import type { ErrorBody } from './errors.js';
import { ClaimResult, claimRequestProperties, CompleteResponse, FailResponse, HeartbeatResponse } from './jobs-wire.js';
import { ErrorBodySchema, Id, JobStateSchema, OutputsInput, stringEnum } from './schema-parts.js';

/** How many jobs, reports or leases one batch may carry. */
export const MAX_BATCH = 1000;

export const BatchClaimRequest = Type.Object(
  {
    ...claimRequestProperties,
    /** 1..1000, default 1. */
    max_jobs: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BATCH })),
  },
  { additionalProperties: false },
);
export type BatchClaimRequest = Static<typeof BatchClaimRequest>;

export const BatchClaimResponse = Type.Object({ claims: Type.Array(ClaimResult) });
export type BatchClaimResponse = Static<typeof BatchClaimResponse>;

export type Report =
  | { lease_id: string; outcome: 'complete'; outputs?: Outputs; error?: undefined; retryable?: undefined }
  | { lease_id: string; outcome: 'fail'; error: string; retryable?: boolean; outputs?: undefined };

/**
 * One report. The schema takes both outcomes' fields; which belong to which outcome is the route's
 * check (it names the report), so the type is the union the schema cannot say without anyOf.
 */
export const ReportInput = Type.Unsafe<Report>(
  Type.Object(
    {
      lease_id: Id,
      outcome: stringEnum(['complete', 'fail'] as const),
      outputs: Type.Optional(OutputsInput),
      error: Type.Optional(Type.String()),
      retryable: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
);

export const ReportBatchRequest = Type.Object(
  {
    reports: Type.Array(ReportInput, { maxItems: MAX_BATCH }),
    /** Claims more jobs in the same round trip, after the reports (complete-and-claim-next). */
    claim: Type.Optional(BatchClaimRequest),
  },
  { additionalProperties: false },
);
export type ReportBatchRequest = Static<typeof ReportBatchRequest>;

/** A complete or a fail answer: the serializer writes whichever fields the answer has. */
const ReportAnswer = Type.Unsafe<CompleteResponse | FailResponse>({
  type: 'object',
  properties: {
    ok: CompleteResponse.properties.ok,
    status: JobStateSchema,
    enqueued: CompleteResponse.properties.enqueued,
    attempt: FailResponse.properties.attempt,
    delayed_until_ms: FailResponse.properties.delayed_until_ms,
  },
});

/** One report's answer: the status and body its one-job call would have had. */
export type ReportResult =
  | { lease_id: string; status: 200; result: CompleteResponse | FailResponse }
  | { lease_id: string; status: number; error: ErrorBody };
const ReportResultSchema = Type.Unsafe<ReportResult>(
  Type.Object({ lease_id: Type.String(), status: Type.Integer(), result: Type.Optional(ReportAnswer), error: Type.Optional(ErrorBodySchema) }),
);

export const ReportBatchResponse = Type.Object({ results: Type.Array(ReportResultSchema), claims: Type.Array(ClaimResult) });
export type ReportBatchResponse = Static<typeof ReportBatchResponse>;

export const HeartbeatBatchRequest = Type.Object({ lease_ids: Type.Array(Id, { maxItems: MAX_BATCH }) }, { additionalProperties: false });
export type HeartbeatBatchRequest = Static<typeof HeartbeatBatchRequest>;

export type HeartbeatResult =
  | { lease_id: string; status: 200; lease: HeartbeatResponse }
  | { lease_id: string; status: number; error: ErrorBody };
const HeartbeatResultSchema = Type.Unsafe<HeartbeatResult>(
  Type.Object({ lease_id: Type.String(), status: Type.Integer(), lease: Type.Optional(HeartbeatResponse), error: Type.Optional(ErrorBodySchema) }),
);

export const HeartbeatBatchResponse = Type.Object({ results: Type.Array(HeartbeatResultSchema) });
export type HeartbeatBatchResponse = Static<typeof HeartbeatBatchResponse>;
