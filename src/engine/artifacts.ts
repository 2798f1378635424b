import { createHash } from 'node:crypto';
import {
  ARTIFACT_CHUNK_BYTES,
  artifactNameProblem,
  DEFAULT_MAX_ARTIFACT_BYTES,
  isSha256,
  type ArtifactView,
} from '../domain/artifacts.js';
import { WeftError } from '../protocol/errors.js';
import type { ArtifactDownload, ClaimResult } from '../protocol/wire.js';
import type { ArtifactRecord, LeaseRefusal, Store, StoreReads } from '../store/store.js';
import { ChunkBlobs, type BlobStore, type BlobWriter } from './blob-store.js';

/**
 * Artifacts (README "Artifacts"): uploads streamed chunk by chunk into the blob store (the store's
 * chunk rows, or files under ARTIFACTS_DIR), listings, and downloads streamed out piece by piece, so
 * that neither direction holds more than a chunk or two of a file however large it is, nor a
 * transaction for its length.
 */
export class Artifacts {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    /** The engine's answer to a refused lease call (announces what the refusal changed). */
    private readonly refused: (leaseId: string, outcome: LeaseRefusal, holder: string | null) => WeftError,
    /** MAX_ARTIFACT_BYTES. */
    readonly maxBytes: number = DEFAULT_MAX_ARTIFACT_BYTES,
    /** Where the bytes go (ARTIFACTS_DIR); the store's chunk rows by default. */
    readonly blobs: BlobStore = new ChunkBlobs(store),
  ) {}

  /**
   * Stores `body` as artifact `name` of the lease's attempt. The lease must be live and held by
   * `holder` when the upload starts and when it ends; `sha256` is what the uploader computed, and the
   * bytes must hash to it. Anything short of that stores nothing.
   */
  async upload(leaseId: string, name: string, sha256: string | undefined, body: AsyncIterable<Uint8Array>, holder: string | null): Promise<ArtifactView> {
    const problem = artifactNameProblem(name);
    if (problem !== null) throw new WeftError('invalid_artifact_name', `artifact name "${printable(name)}" ${problem}`);
    if (sha256 === undefined || !isSha256(sha256)) {
      throw new WeftError('invalid_request', 'header x-weft-sha256 must be the SHA-256 of the body as 64 lowercase hex digits');
    }
    const begun = await this.store.beginArtifactUpload(leaseId, this.now(), holder);
    if (begun.kind === 'cancelled') throw new WeftError('job_cancelled', `lease ${leaseId}: the job was cancelled; nothing to upload for`);
    if (begun.kind !== 'begun') throw this.refused(leaseId, begun, holder);
    const blobId = begun.upload.blob_id;
    let stored = false;
    let writer: BlobWriter | null = null;
    try {
      writer = await this.blobs.writer(blobId);
      const hash = createHash('sha256');
      let size = 0;
      // Shared memory: handed to SQLite's writer thread, a chunk is shared rather than copied into a
      // fresh buffer of that thread, whose garbage it would then be (a 1 GiB upload left ~1,000 such
      // buffers for the thread's rare collections: docs/performance.md "Artifacts").
      const chunk = Buffer.from(new SharedArrayBuffer(ARTIFACT_CHUNK_BYTES));
      let filled = 0;
      for await (const data of body) {
        size += data.byteLength;
        if (size > this.maxBytes) {
          throw new WeftError('artifact_too_large', `artifact "${printable(name)}" passed MAX_ARTIFACT_BYTES (${this.maxBytes} bytes); nothing was stored`);
        }
        hash.update(data);
        let at = 0;
        while (at < data.byteLength) {
          const n = Math.min(data.byteLength - at, ARTIFACT_CHUNK_BYTES - filled);
          chunk.set(data.subarray(at, at + n), filled);
          filled += n;
          at += n;
          if (filled === ARTIFACT_CHUNK_BYTES) {
            // Awaited before more is read: the request stream waits meanwhile (backpressure). The store
            // has copied the chunk once the write resolves, so the one buffer serves every chunk.
            await writer.write(chunk);
            filled = 0;
          }
        }
      }
      if (filled > 0) await writer.write(chunk.subarray(0, filled));
      const digest = hash.digest('hex');
      if (digest !== sha256) {
        throw new WeftError(
          'artifact_checksum_mismatch',
          `artifact "${printable(name)}": the ${size} bytes received hash to ${digest}, not to the declared x-weft-sha256 ${sha256}; nothing was stored`,
        );
      }
      const finished = await this.store.finishArtifactUpload(
        leaseId,
        { blob_id: blobId, name, size, sha256, chunk_bytes: ARTIFACT_CHUNK_BYTES },
        this.now(),
        holder,
      );
      stored = true;
      if (finished.kind === 'cancelled') throw new WeftError('job_cancelled', `lease ${leaseId}: the job was cancelled during the upload; nothing was stored`);
      if (finished.kind !== 'stored') throw this.refused(leaseId, finished, holder);
      // Recorded: now the bytes become readable (a file renamed into place). Until the job succeeds no
      // one lists the row, so no reader looks for them in between.
      await writer.commit();
      writer = null;
      return artifactView(finished.artifact);
    } finally {
      // What was written and not made readable goes (a refused upload, or a commit that failed: a row
      // without bytes is then dropped by the next upload of the name, or by retention).
      await writer?.discard();
      // finishArtifactUpload deletes a refused upload's chunks itself.
      if (!stored) await this.store.abortArtifactUpload(blobId).catch(() => {});
    }
  }

  /** The run's artifacts (one job's, with `jobId`); a run or job that does not exist lists none. */
  list(r: StoreReads, workflowId: string, runNumber: number, jobId?: string): Promise<ArtifactRecord[]> {
    return r.listArtifacts(workflowId, runNumber, jobId);
  }

  /** One artifact, or a 404 naming what is missing. */
  async find(workflowId: string, runNumber: number, jobId: string, name: string): Promise<ArtifactRecord> {
    const found = await this.store.read((r) => r.getArtifact(workflowId, runNumber, jobId, name));
    if (!found) {
      throw new WeftError(
        'artifact_not_found',
        `run #${runNumber} of workflow "${workflowId}" has no artifact "${printable(name)}" of job "${jobId}"`,
      );
    }
    return found;
  }

  /**
   * Bytes `start` to `end` (inclusive) of an artifact, a chunk at a time, each chunk read when the
   * consumer asks for it. Ends with an error when the artifact is deleted meanwhile (retention).
   */
  async *bytes(a: ArtifactRecord, start: number, end: number): AsyncGenerator<Uint8Array> {
    try {
      yield* this.blobs.read(a, start, end);
    } catch (err) {
      throw new Error(`artifact "${a.name}" of job "${a.job_id}": ${(err as Error).message}`, { cause: err });
    }
  }

  /** Fills in `artifacts` and `downloads` of claimed jobs whose definition has either key. */
  async addToClaims(results: ClaimResult[], specs: ReadonlyArray<{ paths: string[]; download: string[] } | null | undefined>): Promise<void> {
    const wanted = results.map((c, i) => ({ c, spec: specs[i] })).filter((x) => x.spec);
    if (wanted.length === 0) return;
    await this.store.read(async (r) => {
      for (const { c, spec } of wanted) {
        c.job.artifacts = [...spec!.paths];
        const downloads: ArtifactDownload[] = [];
        for (const id of spec!.download.flatMap((need) => downloadJobIds(need, c.job.upstream_outputs))) {
          for (const a of await r.listArtifacts(c.job.workflow_id, c.job.run_number, id)) {
            downloads.push({ job_id: a.job_id, name: a.name, size: a.size, sha256: a.sha256, path: artifactPath(a) });
          }
        }
        c.job.downloads = downloads;
      }
    });
  }
}

/**
 * The jobs whose artifacts `download: [need]` fetches: the need itself, or, when it is a matrix or
 * fan-out group, each of its instances (`<need>~<index>`, README "Matrix, fan-out and artifacts"),
 * which the claimed job's upstream outputs list by id. `~` is never part of a job id a definition
 * gives, so only instances match.
 */
export function downloadJobIds(need: string, upstream: Readonly<Record<string, unknown>>): string[] {
  const instances = Object.keys(upstream)
    .filter((id) => id.startsWith(`${need}~`))
    .sort((a, b) => Number(a.slice(need.length + 1)) - Number(b.slice(need.length + 1)));
  return instances.length > 0 ? instances : [need];
}

export function artifactView(a: ArtifactRecord): ArtifactView {
  return { job_id: a.job_id, name: a.name, size: a.size, sha256: a.sha256, created_at_ms: a.created_at_ms };
}

/** Where an artifact is downloaded from, each segment URL-encoded (a name's `/` included). */
export function artifactPath(a: { workflow_id: string; run_number: number; job_id: string; name: string }): string {
  return `/api/workflows/${encodeURIComponent(a.workflow_id)}/runs/${a.run_number}/artifacts/${encodeURIComponent(a.job_id)}/${encodeURIComponent(a.name)}`;
}

/** A hostile name, shown in an error without its control characters. */
function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = s.replace(/[\u0000-\u001f\u007f]/g, '?');
  return clean.length > 200 ? `${clean.slice(0, 200)}…` : clean;
}
