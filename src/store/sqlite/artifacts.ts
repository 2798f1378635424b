import { randomUUID } from 'node:crypto';
import { STALE_UPLOAD_MS } from '../artifact-types.js';
import type { ArtifactRecord, BeginUploadOutcome, FinishUploadOutcome, StoreReads } from '../store.js';
import type { Row } from '../rows.js';
import type { Conn } from './connection.js';
import { checkLease } from './settle.js';

/**
 * Artifacts (README "Artifacts") as synchronous writes (see writes.ts) and reads. An upload writes
 * one chunk per call, each its own small write through the writer thread, so that a large file never
 * sits in memory whole nor holds SQLite's write lock for long.
 */

/** Most stale uploads one new upload clears away. */
const STALE_UPLOADS_PER_BEGIN = 4;

export function toArtifact(r: Row): ArtifactRecord {
  return {
    workflow_id: r.workflow_id as string,
    run_number: Number(r.run_number),
    job_id: r.job_id as string,
    attempt: Number(r.attempt),
    name: r.name as string,
    blob_id: r.blob_id as string,
    size: Number(r.size),
    sha256: r.sha256 as string,
    chunk_bytes: Number(r.chunk_bytes),
    created_at_ms: Number(r.created_at_ms),
  };
}

/** Deletes the chunks of each blob no artifact row names any more. */
function dropUnusedBlobs(c: Conn, blobIds: Iterable<string>): void {
  for (const id of new Set(blobIds)) c.q('deleteUnusedBlob').run(id, id);
}

export function beginArtifactUpload(c: Conn, leaseId: string, nowMs: number, holder: string | null = null): BeginUploadOutcome {
  const check = checkLease(c, leaseId, nowMs, holder);
  if (check.kind === 'cancelled') return { kind: 'cancelled' };
  if (check.kind !== 'live') return check;
  const { job } = check;
  // An earlier attempt that did not succeed keeps nothing (its rows were never visible anyway).
  const old = c.q('deleteOtherAttemptArtifacts').all(job.workflow_id, job.run_number, job.job_id, job.attempt) as Row[];
  dropUnusedBlobs(c, old.map((r) => r.blob_id as string));
  for (const r of c.q('staleArtifactUploads').all(nowMs - STALE_UPLOAD_MS, STALE_UPLOADS_PER_BEGIN) as Row[]) {
    abortArtifactUpload(c, r.blob_id as string);
  }
  const blobId = randomUUID();
  c.q('insertArtifactUpload').run(blobId, leaseId, nowMs);
  return {
    kind: 'begun',
    upload: { blob_id: blobId, workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id, attempt: job.attempt },
  };
}

export function putArtifactChunk(c: Conn, blobId: string, seq: number, data: Uint8Array): void {
  // A chunk that crossed to the writer thread arrives as a plain Uint8Array: bind it as a Buffer (no copy).
  c.q('putArtifactChunk').run(blobId, seq, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

export function finishArtifactUpload(
  c: Conn,
  leaseId: string,
  upload: { blob_id: string; name: string; size: number; sha256: string; chunk_bytes: number },
  nowMs: number,
  holder: string | null = null,
): FinishUploadOutcome {
  const check = checkLease(c, leaseId, nowMs, holder);
  if (check.kind !== 'live') {
    abortArtifactUpload(c, upload.blob_id);
    return check.kind === 'cancelled' ? { kind: 'cancelled' } : check;
  }
  const { job } = check;
  const replaced = c.q('deleteArtifactByName').all(job.workflow_id, job.run_number, job.job_id, job.attempt, upload.name) as Row[];
  const artifact: ArtifactRecord = {
    workflow_id: job.workflow_id,
    run_number: job.run_number,
    job_id: job.job_id,
    attempt: job.attempt,
    name: upload.name,
    blob_id: upload.blob_id,
    size: upload.size,
    sha256: upload.sha256,
    chunk_bytes: upload.chunk_bytes,
    created_at_ms: nowMs,
  };
  c.q('insertArtifact').run(artifact);
  c.q('deleteArtifactUpload').run(upload.blob_id);
  dropUnusedBlobs(c, replaced.map((r) => r.blob_id as string));
  return { kind: 'stored', artifact };
}

export function abortArtifactUpload(c: Conn, blobId: string): void {
  c.q('deleteBlob').run(blobId);
  c.q('deleteArtifactUpload').run(blobId);
}

/** A re-run's kept jobs keep their artifacts: rows of the new run naming the same blobs. */
export function copyKeptArtifacts(c: Conn, workflowId: string, fromRun: number, toRun: number, jobIds: readonly string[]): void {
  if (jobIds.length === 0) return;
  c.q('copyKeptArtifacts').run({ workflow_id: workflowId, from_run: fromRun, to_run: toRun, job_ids: JSON.stringify(jobIds) });
}

/**
 * Retention: the run's artifacts, and the chunks of the blobs no other run's rows name. Answers those
 * blob ids (for bytes kept outside the store, ARTIFACTS_DIR).
 */
export function deleteRunArtifacts(c: Conn, workflowId: string, runNumber: number): string[] {
  const rows = c.q('deleteRunArtifacts').all(workflowId, runNumber) as Row[];
  const ids = [...new Set(rows.map((r) => r.blob_id as string))];
  if (ids.length === 0) return [];
  const unnamed = (c.q('unnamedBlobs').all(JSON.stringify(ids)) as Row[]).map((r) => r.blob_id as string);
  dropUnusedBlobs(c, ids);
  return unnamed;
}

/** The artifact reads of makeReads (reads.ts). */
export function artifactReads(c: Conn): Pick<StoreReads, 'listArtifacts' | 'getArtifact' | 'getArtifactChunk' | 'unnamedBlobs'> {
  return {
    listArtifacts: async (workflowId, runNumber, jobId) =>
      (jobId === undefined
        ? (c.q('listRunArtifacts').all(workflowId, runNumber) as Row[])
        : (c.q('listJobArtifacts').all(workflowId, runNumber, jobId) as Row[])
      ).map(toArtifact),
    getArtifact: async (workflowId, runNumber, jobId, name) => {
      const row = c.q('getArtifact').get(workflowId, runNumber, jobId, name) as Row | undefined;
      return row ? toArtifact(row) : null;
    },
    getArtifactChunk: async (blobId, seq) => {
      const row = c.q('getArtifactChunk').get(blobId, seq) as { data: Buffer } | undefined;
      return row ? row.data : null;
    },
    unnamedBlobs: async (blobIds) =>
      blobIds.length === 0 ? [] : (c.q('unnamedBlobs').all(JSON.stringify(blobIds)) as Row[]).map((r) => r.blob_id as string),
  };
}
