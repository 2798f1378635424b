import type { SecretKey } from './secret-box.js';
import type { Logger } from 'pino';
import type { JobChange, JobRecord, Store } from '../store/store.js';
import type { BlobStore } from './blob-store.js';
import type { NotifySettings } from './notifications.js';
import type { SpanSink } from '../domain/trace-context.js';
import type { ClaimTry } from './claim-waiters.js';

/** The engine's options, its events and what its callers pass it (src/engine/engine.ts). */

export interface EngineEvents {
  job: [JobChange];
  logs: [JobChange];
  /** Changes may have been missed (events from other servers were cut off): look again at everything. */
  resync: [];
  /** A workflow's definition was created or changed (its jobs' changes come as `job`). */
  workflow: [string];
  /** An attempt started or ended here (README "Metrics" counts these). */
  attempt: [AttemptEvent];
  /**
   * Durable changes this process made, as it announces them to the others (`job` also carries those
   * heard from other servers): README "Traces (OpenTelemetry)" reads the runs they ended.
   */
  changed: [readonly JobChange[]];
}

/**
 * An attempt's start or end, as this process made or found it; what another process (a `weft
 * scheduler`'s reaper) settles is heard there, not here. `job` is the job afterwards: for an ended
 * attempt, `queued` means it will be retried. `ran` is the job as the ended attempt ran, just before
 * its end (a re-queued job no longer carries the attempt's ready time, claim or worker).
 */
export type AttemptEvent =
  /** Handed to a worker: it waited from `job.ready_at_ms` to `job.started_at_ms`. */
  | { kind: 'claimed'; job: JobRecord }
  | { kind: 'completed'; job: JobRecord }
  /** Reported failed by its worker; it ran from `started_at_ms` to `at_ms`. */
  | { kind: 'failed'; job: JobRecord; started_at_ms: number; at_ms: number; ran: JobRecord }
  /** Its lease ran out, found by the reaper or by a call on that lease. */
  | { kind: 'expired'; job: JobRecord; ran: JobRecord }
  /** It outlived its timeout_secs, found by the reaper or by a call on its lease. */
  | { kind: 'timed_out'; job: JobRecord; ran: JobRecord };

/**
 * A worker's claim as the engine takes it (from the wire's ClaimRequest, src/protocol/wire.ts): who
 * claims, with the labels it has, for leases of how long.
 */
export interface WorkerClaim {
  worker_id: string;
  labels: string[];
  lease_ttl_secs?: number;
  /** The name of the token the claim came with: its leases are bound to it. Absent: tokens are off. */
  token_name?: string | null;
}

/**
 * Which leases' ids a reader may see (README "Access tokens"): given the name of the token a lease was
 * claimed with, true when the reader may see it. Absent: every one (tokens off).
 */
export type LeaseVisibility = (tokenName: string | null) => boolean;

export interface ClaimWait {
  /** How long a claim that finds nothing may wait for a job (0: answer at once). */
  waitMs?: number;
  /** Aborts the wait (the client went away). */
  signal?: AbortSignal;
  /**
   * Called once the claim's first try is over, before it waits or answers, with what it found (null:
   * it failed); see Claims.firstPick.
   */
  tried?: (found: ClaimTry | null) => void;
  /** Its first try must see what the completes handed over before it enqueue (StoreClaim.after_completes). */
  afterCompletes?: boolean;
}

export interface EngineOptions {
  store: Store;
  logger: Logger;
  now?: () => number;
  /** A worker unseen for longer than this is shown `offline`. */
  workerOfflineAfterMs?: number;
  /** WORKER_RETAIN_SECS in ms: a worker unseen for longer, holding no lease, is deleted by the reaper. Default 7 days. */
  workerRetainMs?: number;
  /**
   * How often waiting claims look again on their own, for jobs queued by another process (which
   * raises no event here). Default 1000.
   */
  claimSweepMs?: number;
  /**
   * A scheduled time at most this old when a scheduler pass finds it is on time; an older one was
   * missed and its schedule's catch_up decides (docs/api.md "Schedules"). Default 60 s.
   */
  scheduleGraceMs?: number;
  /** MAX_LOG_BYTES_PER_ATTEMPT: the most log data one attempt of a job keeps (default 64 MiB). */
  maxLogBytesPerAttempt?: number;
  /** MAX_ARTIFACT_BYTES: the largest artifact an upload may store (default 1 GiB, README "Artifacts"). */
  maxArtifactBytes?: number;
  /**
   * Where artifact bytes go (ARTIFACTS_DIR, docs/architecture.md "Artifacts"): the store's chunk rows
   * when absent; the runtime passes its file implementation when ARTIFACTS_DIR is set.
   */
  blobs?: BlobStore;
  /** WEFT_SECRET_KEY (README "Secrets"): without it, secrets can be neither set nor used. */
  secretKey?: SecretKey | null;
  /** NOTIFY_* and PUBLIC_URL (README "Notifications"); the timings are settable so tests need not wait for real ones. */
  notify?: Partial<NotifySettings>;
  /**
   * Where the spans of runs and attempts go (README "Traces (OpenTelemetry)"): the runtime passes its
   * OTLP exporter when OTEL_EXPORTER_OTLP_ENDPOINT is set. Absent: no tracing, and no work for it.
   */
  traceSink?: SpanSink | null;
}
