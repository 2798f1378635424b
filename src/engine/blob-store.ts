import type { Store } from '../store/store.js';

/**
 * Where artifact bytes live (docs/architecture.md "Artifacts"): the seam between the engine's
 * Artifacts, which checks and records uploads, and the bytes themselves. ChunkBlobs keeps them in the
 * store (the default); with ARTIFACTS_DIR the runtime injects a file implementation (src/runtime),
 * since the engine itself touches no file system.
 */
export interface BlobStore {
  /** Where the bytes go, for logs and docs: 'store' or 'files'. */
  readonly kind: 'store' | 'files';
  /** Starts writing blob `blobId` (a fresh id from beginArtifactUpload). */
  writer(blobId: string): Promise<BlobWriter>;
  /**
   * Bytes `start` to `end` (inclusive) of a blob of `size` bytes recorded in chunks of `chunk_bytes`,
   * read piece by piece as the consumer asks, so that memory stays bounded whatever the size. Ends with
   * an error when the bytes are gone (deleted meanwhile by retention).
   */
  read(blob: { blob_id: string; size: number; chunk_bytes: number }, start: number, end: number): AsyncGenerator<Uint8Array>;
  /**
   * Deletes the bytes of blobs the store reported no row names any more (retention's
   * `unnamed_blobs`). Answers how many went. A no-op for the store's chunks, deleted with the rows.
   */
  remove(blobIds: readonly string[]): Promise<number>;
  /**
   * Deletes the bytes that no artifact row names any more and the leftovers of uploads that died.
   * `force` runs it now; otherwise an implementation may skip a pass that comes soon after the last.
   * Answers how many blobs went. The store's chunks need none: the store deletes them with the rows.
   */
  collect(force: boolean): Promise<number>;
}

export interface BlobWriter {
  /** Appends bytes; the buffer may be reused by the caller once the promise resolves. */
  write(data: Uint8Array): Promise<void>;
  /** Makes the bytes readable; called only after the store recorded the artifact. */
  commit(): Promise<void>;
  /** Drops what was written (a refused or broken upload); never throws. */
  discard(): Promise<void>;
}

/** The default: bytes as chunk rows of the store, written one chunk per call. */
export class ChunkBlobs implements BlobStore {
  readonly kind = 'store';

  constructor(private readonly store: Store) {}

  async writer(blobId: string): Promise<BlobWriter> {
    let seq = 0;
    return {
      write: (data) => this.store.putArtifactChunk(blobId, seq++, data),
      // The chunks are seen as soon as the artifact row is: nothing more to do.
      commit: async () => {},
      // abortArtifactUpload (called by Artifacts for every unfinished upload) deletes the chunks.
      discard: async () => {},
    };
  }

  async *read(blob: { blob_id: string; size: number; chunk_bytes: number }, start: number, end: number): AsyncGenerator<Uint8Array> {
    if (blob.size === 0 || end < start) return;
    let pos = start;
    while (pos <= end) {
      const seq = Math.floor(pos / blob.chunk_bytes);
      const data = await this.store.read((r) => r.getArtifactChunk(blob.blob_id, seq));
      if (data === null) throw new Error(`blob ${blob.blob_id} lost chunk ${seq} while it was being read (deleted meanwhile?)`);
      const from = pos - seq * blob.chunk_bytes;
      const to = Math.min(data.byteLength, end - seq * blob.chunk_bytes + 1);
      yield data.subarray(from, to);
      pos += to - from;
    }
  }

  async remove(): Promise<number> {
    return 0;
  }

  async collect(): Promise<number> {
    return 0;
  }
}
