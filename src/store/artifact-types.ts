import type { LeaseRefusal } from './operations.js';

/**
 * The artifact part of the storage seam (README "Artifacts", docs/architecture.md "Artifacts").
 * Bytes live in blobs: a blob is written chunk by chunk under a random id while its upload runs
 * (`artifact_uploads` holds it until it ends), and each artifact row names one blob. A re-run's kept
 * job gets rows of its own that name the same blobs, so a blob goes only when no row names it.
 */

/** One stored artifact: a file a job's attempt uploaded. */
export interface ArtifactRecord {
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  name: string;
  blob_id: string;
  size: number;
  sha256: string;
  /** Bytes per chunk of its blob (the last chunk may hold fewer). */
  chunk_bytes: number;
  created_at_ms: number;
}

/** The attempt an upload belongs to, as its lease says. */
export interface ArtifactUpload {
  blob_id: string;
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
}

export type BeginUploadOutcome =
  | { kind: 'begun'; upload: ArtifactUpload }
  /** The job was cancelled: there is nothing to upload for. */
  | { kind: 'cancelled' }
  | LeaseRefusal;

export type FinishUploadOutcome =
  | { kind: 'stored'; artifact: ArtifactRecord }
  | { kind: 'cancelled' }
  | LeaseRefusal;

/** The artifact writes, on Store. */
export interface ArtifactWrites {
  /**
   * Starts an upload for the lease's attempt when the lease is live and held by `holder`: answers a
   * fresh blob id to write chunks under. Discards the job's artifacts of earlier attempts (an attempt
   * that did not succeed keeps none) and uploads left unfinished for over a day.
   */
  beginArtifactUpload(leaseId: string, nowMs: number, holder?: string | null): Promise<BeginUploadOutcome>;
  /** Stores chunk `seq` (0, 1, …) of an upload's blob; a chunk written again replaces the first. */
  putArtifactChunk(blobId: string, seq: number, data: Uint8Array): Promise<void>;
  /**
   * Ends an upload: when the lease is still live and held, the artifact `name` of the attempt now
   * names the blob (one of the same name before is replaced, its blob deleted unless named elsewhere).
   * Otherwise the blob is deleted and the refusal answered.
   */
  finishArtifactUpload(
    leaseId: string,
    upload: { blob_id: string; name: string; size: number; sha256: string; chunk_bytes: number },
    nowMs: number,
    holder?: string | null,
  ): Promise<FinishUploadOutcome>;
  /** Deletes an unfinished upload's chunks (a refused or broken upload). */
  abortArtifactUpload(blobId: string): Promise<void>;
}

/** The artifact reads, on StoreReads. Only artifacts of an attempt that succeeded are seen. */
export interface ArtifactReads {
  /** The run's artifacts (one job's, with `jobId`), by job then name. */
  listArtifacts(workflowId: string, runNumber: number, jobId?: string): Promise<ArtifactRecord[]>;
  getArtifact(workflowId: string, runNumber: number, jobId: string, name: string): Promise<ArtifactRecord | null>;
  /** Chunk `seq` of a blob, or null when there is none (deleted meanwhile). */
  getArtifactChunk(blobId: string, seq: number): Promise<Uint8Array | null>;
  /**
   * Of `blobIds`, those that no artifact row (of any run or attempt) and no upload in progress names:
   * bytes kept outside the store (ARTIFACTS_DIR) under such an id are no longer needed by anyone.
   * Retention, workflow deletion, a replaced name or a failed attempt leave such ids behind.
   */
  unnamedBlobs(blobIds: readonly string[]): Promise<string[]>;
}

/** Uploads left unfinished longer than this are deleted by the next upload that starts. */
export const STALE_UPLOAD_MS = 24 * 60 * 60 * 1000;

/** The jobs a re-run keeps: those its plan starts as `success` (src/engine/run-plan.ts). */
export function keptJobIds(jobs: ReadonlyArray<{ job_id: string; status: string }>): string[] {
  return jobs.filter((j) => j.status === 'success').map((j) => j.job_id);
}
