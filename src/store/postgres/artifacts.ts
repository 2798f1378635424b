import { randomUUID } from 'node:crypto';
import { STALE_UPLOAD_MS } from '../artifact-types.js';
import type { ArtifactRecord, BeginUploadOutcome, FinishUploadOutcome, StoreReads } from '../store.js';
import { QUERIES } from './queries.js';
import { checkLease, settleRunsOf } from './settle.js';
import { transaction, writeStatement, type Exec, type Row, type Sql } from './tx.js';

/**
 * Artifacts (README "Artifacts"): the writes, each one transaction or statement, and the reads. An
 * upload writes one chunk per statement, so that a large file never sits in memory whole nor holds a
 * transaction open for the length of its upload.
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

async function dropUnusedBlobs(q: Exec, rows: readonly Row[]): Promise<void> {
  if (rows.length > 0) await q(QUERIES.deleteUnusedBlobs, [[...new Set(rows.map((r) => r.blob_id as string))]]);
}

export async function beginArtifactUpload(sql: Sql, leaseId: string, nowMs: number, holder: string | null): Promise<BeginUploadOutcome> {
  const outcome = await transaction(sql, async (q): Promise<BeginUploadOutcome> => {
    const v = await checkLease(q, leaseId, nowMs, holder);
    if (v.kind === 'refused') return v.outcome;
    if (v.kind === 'cancelled') return { kind: 'cancelled' };
    const { job } = v.locked;
    // An earlier attempt that did not succeed keeps nothing (its rows were never visible anyway).
    await dropUnusedBlobs(q, await q(QUERIES.deleteOtherAttemptArtifacts, [job.workflow_id, job.run_number, job.job_id, job.attempt]));
    for (const r of await q(QUERIES.staleArtifactUploads, [nowMs - STALE_UPLOAD_MS, STALE_UPLOADS_PER_BEGIN])) {
      await q(QUERIES.deleteBlob, [r.blob_id]);
      await q(QUERIES.deleteArtifactUpload, [r.blob_id]);
    }
    const blobId = randomUUID();
    await q(QUERIES.insertArtifactUpload, [blobId, leaseId, nowMs]);
    return {
      kind: 'begun',
      upload: { blob_id: blobId, workflow_id: job.workflow_id, run_number: job.run_number, job_id: job.job_id, attempt: job.attempt },
    };
  });
  return settleRunsOf(sql, nowMs, outcome);
}

export async function putArtifactChunk(sql: Sql, blobId: string, seq: number, data: Uint8Array): Promise<void> {
  await writeStatement(sql, QUERIES.putArtifactChunk, [blobId, seq, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

export async function finishArtifactUpload(
  sql: Sql,
  leaseId: string,
  upload: { blob_id: string; name: string; size: number; sha256: string; chunk_bytes: number },
  nowMs: number,
  holder: string | null,
): Promise<FinishUploadOutcome> {
  const outcome = await transaction(sql, async (q): Promise<FinishUploadOutcome> => {
    const v = await checkLease(q, leaseId, nowMs, holder);
    if (v.kind !== 'live') return v.kind === 'refused' ? v.outcome : { kind: 'cancelled' };
    const { job } = v.locked;
    const replaced = await q(QUERIES.deleteArtifactByName, [job.workflow_id, job.run_number, job.job_id, job.attempt, upload.name]);
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
    await q(QUERIES.insertArtifact, [
      artifact.workflow_id,
      artifact.run_number,
      artifact.job_id,
      artifact.attempt,
      artifact.name,
      artifact.blob_id,
      artifact.size,
      artifact.sha256,
      artifact.chunk_bytes,
      artifact.created_at_ms,
    ]);
    await q(QUERIES.deleteArtifactUpload, [upload.blob_id]);
    await dropUnusedBlobs(q, replaced);
    return { kind: 'stored', artifact };
  });
  // A refused upload stores nothing: its chunks go (outside the refusing transaction, which may have
  // settled the lease and must commit that).
  if (outcome.kind !== 'stored') await abortArtifactUpload(sql, upload.blob_id);
  return settleRunsOf(sql, nowMs, outcome);
}

export async function abortArtifactUpload(sql: Sql, blobId: string): Promise<void> {
  await transaction(sql, async (q) => {
    await q(QUERIES.deleteBlob, [blobId]);
    await q(QUERIES.deleteArtifactUpload, [blobId]);
  });
}

/** A re-run's kept jobs keep their artifacts: rows of the new run naming the same blobs. */
export async function copyKeptArtifacts(q: Exec, workflowId: string, fromRun: number, toRun: number, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length > 0) await q(QUERIES.copyKeptArtifacts, [workflowId, fromRun, toRun, jobIds]);
}

/** The artifact reads of makeReads (reads.ts). */
export function artifactReads(q: Exec): Pick<StoreReads, 'listArtifacts' | 'getArtifact' | 'getArtifactChunk' | 'unnamedBlobs'> {
  return {
    listArtifacts: async (workflowId, runNumber, jobId) =>
      (jobId === undefined
        ? await q(QUERIES.listRunArtifacts, [workflowId, runNumber])
        : await q(QUERIES.listJobArtifacts, [workflowId, runNumber, jobId])
      ).map(toArtifact),
    getArtifact: async (workflowId, runNumber, jobId, name) => {
      const [row] = await q(QUERIES.getArtifact, [workflowId, runNumber, jobId, name]);
      return row ? toArtifact(row) : null;
    },
    getArtifactChunk: async (blobId, seq) => {
      const [row] = await q(QUERIES.getArtifactChunk, [blobId, seq]);
      return row ? (row.data as Buffer) : null;
    },
    unnamedBlobs: async (blobIds) =>
      blobIds.length === 0 ? [] : (await q(QUERIES.unnamedBlobs, [[...blobIds]])).map((r) => r.blob_id as string),
  };
}
