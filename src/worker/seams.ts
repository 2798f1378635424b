/**
 * What the worker's parts know of each other (docs/architecture.md "The worker"). Each part is handed
 * the few members it uses, never the whole Worker: the Worker builds these from its settings and
 * private methods and passes them in, so no part imports worker.ts and each can be read and changed
 * alone. A JobRun is what the per-job parts see of a job attempt, through the narrower views below.
 */
import type { Logger } from 'pino';
import type { WorkflowApiError, WorkflowClient } from '../client/client.js';
import type { BatchClaimRequest, ClaimedJob, ClaimResult, LeaseView } from '../protocol/wire.js';
import type { Outcome } from './outcome.js';
import type { Delivery } from './report-answer.js';

// ------------------------------------------------------------------------ a job attempt (JobRun)

/** The worker's settings and server calls one job attempt uses (./job-run.ts). */
export interface RunSettings {
  readonly client: Pick<WorkflowClient, 'heartbeat' | 'isCancelled' | 'pushLogs' | 'uploadArtifact' | 'downloadArtifactPath'>;
  readonly workerId: string;
  /** The worker's logger; each attempt logs through a child bound to the job. */
  readonly logger: Logger;
  readonly heartbeatMs: number;
  readonly cancelPollMs: number;
  /** How late a log chunk may be shipped. */
  readonly logFlushMs: number;
  readonly maxBackoffMs: number;
}

/** What the log shipping of an attempt (./log-sender.ts) needs of it. */
export interface LogSenderRun {
  readonly worker: Pick<RunSettings, 'logFlushMs' | 'maxBackoffMs'> & { readonly client: Pick<WorkflowClient, 'pushLogs'> };
  readonly lease: Pick<LeaseView, 'lease_id'>;
  readonly log: Logger;
  /** A 409 from the server: the lease is gone (expired, settled, or its job cancelled). */
  lost(err: WorkflowApiError): void;
}

/** What a result report (./deliver.ts, ./report-batcher.ts) needs of the attempt it reports. */
export interface ReportedRun {
  readonly job: ClaimedJob;
  readonly lease: Pick<LeaseView, 'lease_id'>;
  readonly log: Logger;
  /** A 409 from the server: the lease is gone (expired, settled, or its job cancelled). */
  lost(err: WorkflowApiError): void;
  /** The local estimate of the lease's expiry has passed. */
  leaseExpired(): boolean;
  /** The lease is no longer ours: stop everything for it. */
  loseLease(detail: string): void;
}

/** What the lease keeper (./lease-keeper.ts) needs of each attempt whose lease it renews. */
export interface KeptLease {
  readonly lease: Pick<LeaseView, 'lease_id'>;
  readonly log: Logger;
  /** False once the attempt needs no renewal any more (reported, given up, or its lease gone). */
  readonly heartbeating: boolean;
  readonly leaseExpiresAt: number;
  /** A renewal sent at `sentAt` went through. */
  renewed(sentAt: number): void;
  lost(err: WorkflowApiError): void;
}

// ---------------------------------------------------------------------------------- reports

/** The server calls and the backoff cap of a report sent on the one-job endpoints (./deliver.ts). */
export interface ReportChannel {
  readonly client: Pick<WorkflowClient, 'complete' | 'fail'>;
  readonly maxBackoffMs: number;
}

/**
 * Sends one complete/fail report, by whichever way the worker uses at the time, until it lands,
 * `stopWhy()` says stop (checked before each try; `interrupt` ends a wait between tries), or
 * `deadline` passes.
 */
export type Deliver = (
  run: ReportedRun,
  outcome: Outcome,
  stopWhy: () => string | null,
  interrupt: AbortSignal,
  deadline?: number,
) => Promise<Delivery>;

/** What settling a finished job (./job-result.ts) needs of the worker. */
export interface Settling {
  readonly deliver: Deliver;
  /** How long a finished job's result waits for its buffered log chunks. */
  readonly logDrainMs: number;
  /** How long a shut-down job's failure report may take. */
  readonly abortGraceMs: number;
}

// ---------------------------------------------------------------------------------- batches

/** A claim sent along with a report batch; the slots it may fill count as taken until `release()`. */
export interface ClaimAlong {
  readonly request: BatchClaimRequest;
  release(): void;
}

/** What the report batcher (./report-batcher.ts) needs of the worker. */
export interface ReportBatcherContext extends ReportChannel {
  readonly client: Pick<WorkflowClient, 'reportBatch' | 'complete' | 'fail'>;
  readonly logger: Logger;
  /** False once the worker gave batches up: what is queued then goes to the one-job endpoint. */
  batching(): boolean;
  /** The claim to send along with a batch of `reporting` reports (complete-and-claim-next), or null. */
  claimAlong(reporting: number): ClaimAlong | null;
  /** Jobs a report batch sent at `sentAt` claimed along: they are the worker's to run. */
  claimed(claims: readonly ClaimResult[], sentAt: number): void;
  /** The server has no batch endpoints. */
  noBatches(err: unknown): void;
}

/** What the lease keeper (./lease-keeper.ts) needs of the worker. */
export interface LeaseKeeperContext {
  readonly client: Pick<WorkflowClient, 'heartbeatBatch'>;
  readonly logger: Logger;
  /** The heartbeat interval: an answer arriving later than this is no use. */
  readonly heartbeatMs: number;
  /**
   * How often every lease is renewed. Its answer is also how a cancel is found, so the renewal runs
   * at least as often as the cancellation poll it replaces.
   */
  readonly everyMs: number;
  /** The server has no batch endpoints: the keeper's jobs are to heartbeat on their own. */
  noBatches(err: unknown): void;
}
