/**
 * The worker protocol (docs/api.md "Worker protocol"): claims and the calls on a lease. Its shapes are
 * fixed (docs/protocol.md); fields beyond them are weft's additions, added to but never renamed or
 * re-typed. The answers are also the server's compiled serializers (docs/performance.md "Answers
 * serialized from schemas"): a field missing here would be dropped from the answer.
 */
import { Type, type Static } from 'typebox';
import type { IncomingLogChunk, UpstreamOutputs, WireBackoff } from '../domain/model.js';
import { ArtifactDownload } from './artifacts-wire.js';
import { Id, JobStateSchema, Labels, LeaseTtl, nullable, OutputsInput, StringMap, stringEnum, WaitSecs, WorkerId } from './schema-parts.js';

export type { IncomingLogChunk };

/** The fields of a claim body; the batched claim adds max_jobs (src/protocol/batches-wire.ts). */
export const claimRequestProperties = {
  worker_id: WorkerId,
  labels: Type.Optional(Labels),
  /** 1..86400, default 30. */
  lease_ttl_secs: Type.Optional(LeaseTtl),
  /** Long poll: when nothing fits, wait up to this many seconds (0..60, default 0) for a job. */
  wait_secs: Type.Optional(WaitSecs),
};
export const ClaimRequest = Type.Object(claimRequestProperties, { additionalProperties: false });
export type ClaimRequest = Static<typeof ClaimRequest>;

/**
 * `retry_policy.backoff`: 'None' or an object (serde's external tagging). Left to JSON.stringify by the
 * serializer, which has no anyOf to try in turn on the hot path; the status document's own schema
 * (src/protocol/workflows-wire.ts) spells the forms out.
 */
const ClaimedBackoff = Type.Unsafe<WireBackoff>({
  description: '"None", {"Fixed": {"delay_secs"}} or {"Exponential": {"base_secs", "max_secs"}}',
});

/** A job as delivered by a claim (docs/api.md "POST /api/jobs/claim"), plus additive fields the standalone worker uses. */
export const ClaimedJob = Type.Object({
  job_id: Type.String(),
  workflow_id: Type.String(),
  command: Type.String(),
  required_labels: Type.Array(Type.String()),
  retry_policy: Type.Object({ max_retries: Type.Integer(), backoff: ClaimedBackoff }),
  attempt: Type.Integer(),
  upstream_outputs: Type.Unsafe<UpstreamOutputs>({ type: 'object', additionalProperties: StringMap }),
  enqueued_at_ms: Type.Integer(),
  delayed_until_ms: Type.Integer(),
  run_number: Type.Integer(),
  name: Type.String(),
  env: StringMap,
  timeout_secs: nullable(Type.Integer()),
  // README "Artifacts": only on jobs whose definition has `artifacts:` or `download:`.
  /** `artifacts:` of the job's definition: paths or globs uploaded after success. */
  artifacts: Type.Optional(Type.Array(Type.String())),
  /** What `download:` fetches into the working directory before the command runs. */
  downloads: Type.Optional(Type.Array(ArtifactDownload)),
  // README "Secrets": only on jobs whose env names secrets, and only in this answer.
  /** The secret values in `env`: the worker hides each (and its base64 forms) in the logs, outputs and errors it sends. */
  mask: Type.Optional(Type.Array(Type.String())),
  // README "Triggers and notifications": only on jobs of a run started with an event.
  /** The event payload the run was started with (any JSON); `weft worker` writes it to the file named in WEFT_EVENT_PATH. */
  event: Type.Optional(Type.Unknown({ description: "the payload of the event the run was started with; its name is in env's WEFT_EVENT_NAME" })),
});
export type ClaimedJob = Static<typeof ClaimedJob>;

/** The lease of a claim (docs/api.md "POST /api/jobs/claim"), with when it runs out. */
export const LeaseView = Type.Object({
  lease_id: Type.String(),
  job_id: Type.String(),
  workflow_id: Type.String(),
  worker_id: Type.String(),
  ttl_secs: Type.Integer(),
  granted_at_ms: Type.Integer(),
  expires_at_ms: Type.Integer(),
  /**
   * How long the server held the claim before this lease was granted (a long poll that waited for a
   * job; 0 when one was there at once): the worker's lower bound of when its lease began is the time
   * it sent the claim plus this. Only on claim answers.
   */
  waited_ms: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type LeaseView = Static<typeof LeaseView>;

/** The claim answer when a job fits; the JSON value `null` otherwise. */
export const ClaimResult = Type.Object({ job: ClaimedJob, lease: LeaseView });
export type ClaimResult = Static<typeof ClaimResult>;

/** The answer of a claim: the interface answers the JSON value null when nothing fits. */
export const ClaimAnswer = Type.Unsafe<ClaimResult | null>({ ...ClaimResult, nullable: true });

export const HeartbeatResponse = Type.Object({ ...LeaseView.properties, cancelled: Type.Literal(false) });
export type HeartbeatResponse = Static<typeof HeartbeatResponse>;

/** `POST /api/jobs/{lease_id}/complete`; old clients send no body, or `null`. */
export const CompleteRequest = Type.Object({ outputs: Type.Optional(OutputsInput) }, { additionalProperties: false });
export type CompleteRequest = Static<typeof CompleteRequest>;
export const CompleteBody = Type.Unsafe<CompleteRequest | null | undefined>({ ...CompleteRequest, type: ['object', 'null'] });

export const CompleteResponse = Type.Object({
  ok: Type.Literal(true),
  /** weft's state of the job afterwards (`cancelled` when a cancel came first and the report was ignored). */
  status: JobStateSchema,
  /** Jobs this completion made claimable. */
  enqueued: Type.Array(Type.String()),
});
export type CompleteResponse = Static<typeof CompleteResponse>;

export const FailRequest = Type.Object(
  {
    error: Type.String(),
    /** Omitted means false: a permanent failure (docs/api.md "Lease calls"). */
    retryable: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type FailRequest = Static<typeof FailRequest>;

export const FailResponse = Type.Object({
  ok: Type.Literal(true),
  /** `queued` when re-queued for a retry, `failed` when the budget is spent. */
  status: JobStateSchema,
  attempt: Type.Integer(),
  delayed_until_ms: Type.Integer(),
});
export type FailResponse = Static<typeof FailResponse>;

/** One chunk as a worker pushes it (docs/api.md "Logs"); the lease supplies whatever is left out. */
export const LogChunkInput = Type.Object(
  {
    workflow_id: Type.Optional(Type.String()),
    job_id: Type.Optional(Type.String()),
    sequence: Type.Integer({ minimum: 0 }),
    data: Type.String(),
    timestamp_ms: Type.Optional(Type.Integer({ minimum: 0 })),
    stream: Type.Optional(stringEnum(['stdout', 'stderr'] as const)),
  },
  { additionalProperties: false },
);

/** Most chunks one push may carry. */
export const MAX_CHUNKS_PER_PUSH = 10_000;
export const PushLogsRequest = Type.Object({ chunks: Type.Array(LogChunkInput, { maxItems: MAX_CHUNKS_PER_PUSH }) }, { additionalProperties: false });
export type PushLogsRequest = Static<typeof PushLogsRequest>;

export const PushLogsResponse = Type.Object({
  ok: Type.Literal(true),
  accepted: Type.Integer(),
  /**
   * Present (true) once the attempt's log reached MAX_LOG_BYTES_PER_ATTEMPT: the server kept a marker
   * line and drops whatever else is sent for the attempt, so the worker may stop sending it.
   */
  truncated: Type.Optional(Type.Literal(true)),
});
export type PushLogsResponse = Static<typeof PushLogsResponse>;

/** The path of the calls on a lease. */
export const LeaseParams = Type.Object({ lease_id: Id });

/** `GET /api/jobs/{wf_id}/{job_id}/cancelled`; without `run`: the newest running run, else the latest run. */
export const JobParams = Type.Object({ wf_id: Id, job_id: Id });
export const CancelledQuery = Type.Object({ run: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: false });
