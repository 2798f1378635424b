import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ChunkBlobs, type BlobStore, type BlobWriter } from '../engine/blob-store.js';
import type { Store } from '../store/store.js';

/**
 * ARTIFACTS_DIR (README "Artifacts", docs/architecture.md "Artifacts"): artifact bytes as files on a
 * (possibly shared) file system instead of chunk rows in the store. The rows stay as they are; a blob
 * `id` is the file `<dir>/<first two characters of id>/<id>`. An upload writes a temporary file
 * beside it, renamed into place only once the checks passed and the store recorded the artifact, so a
 * reader never sees a partial file and a refused upload leaves nothing. Files are created 0600 in
 * directories 0700 (docs/security.md).
 */

/** A temporary upload file not written to for this long belongs to an upload that died (a killed server). */
export const STALE_TEMP_MS = 60 * 60 * 1000;
/** A reaper pass sweeps the directory at most this often, unless retention or a deletion forces it. */
export const SWEEP_EVERY_MS = 60 * 1000;
/** How many blob ids one store query checks during a sweep. */
const SWEEP_BATCH = 500;
const TEMP_PREFIX = '.upload-';
/** Blob ids are the store's UUIDs; anything else is never turned into a path. */
const BLOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Reads hand out at most this much at a time (the same bound as a store chunk or less). */
const READ_PIECE = 256 * 1024;

export class FileBlobs implements BlobStore {
  readonly kind = 'files';
  private lastSweepMs = -Infinity;
  /** Bytes stored before ARTIFACTS_DIR was set stay readable from the store's chunk rows. */
  private readonly inStore: ChunkBlobs;

  private constructor(
    readonly dir: string,
    private readonly store: Store,
    private readonly now: () => number,
  ) {
    this.inStore = new ChunkBlobs(store);
  }

  /** Creates the directory (0700) when missing; fails with a clear message when it cannot be written. */
  static async open(dir: string, store: Store, now: () => number = Date.now): Promise<FileBlobs> {
    const abs = resolve(dir);
    try {
      await mkdir(abs, { recursive: true, mode: 0o700 });
      const probe = join(abs, `${TEMP_PREFIX}probe-${randomBytes(6).toString('hex')}`);
      await (await open(probe, 'wx', 0o600)).close();
      await rm(probe, { force: true });
    } catch (err) {
      throw new Error(`ARTIFACTS_DIR ${abs} cannot be used: ${(err as Error).message}`, { cause: err });
    }
    return new FileBlobs(abs, store, now);
  }

  private pathOf(blobId: string): string {
    if (!BLOB_ID.test(blobId)) throw new Error(`blob id ${JSON.stringify(blobId.slice(0, 80))} is not one this server makes`);
    return join(this.dir, blobId.slice(0, 2), blobId);
  }

  async writer(blobId: string): Promise<BlobWriter> {
    const final = this.pathOf(blobId);
    const sub = join(this.dir, blobId.slice(0, 2));
    await mkdir(sub, { recursive: true, mode: 0o700 });
    const temp = join(sub, `${TEMP_PREFIX}${blobId}.${randomBytes(4).toString('hex')}`);
    const fh = await open(temp, 'wx', 0o600);
    let closed = false;
    return {
      write: async (data) => {
        for (let at = 0; at < data.byteLength; ) at += (await fh.write(data, at, data.byteLength - at)).bytesWritten;
      },
      commit: async () => {
        // On disk before the name appears: another server may read it the moment it does.
        await fh.sync();
        closed = true;
        await fh.close();
        await rename(temp, final);
      },
      discard: async () => {
        if (!closed) await fh.close().catch(() => {});
        closed = true;
        await rm(temp, { force: true }).catch(() => {});
      },
    };
  }

  async *read(blob: { blob_id: string; size: number; chunk_bytes: number }, start: number, end: number): AsyncGenerator<Uint8Array> {
    if (blob.size === 0 || end < start) return;
    let fh;
    try {
      fh = await open(this.pathOf(blob.blob_id), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // No file: bytes from before ARTIFACTS_DIR, in the store (or gone, which that read reports).
      const first = await this.store.read((r) => r.getArtifactChunk(blob.blob_id, 0));
      if (first === null) throw new Error(`blob ${blob.blob_id} has no file in ARTIFACTS_DIR (deleted meanwhile?)`);
      yield* this.inStore.read(blob, start, end);
      return;
    }
    try {
      const { size } = await fh.stat();
      if (size !== blob.size) throw new Error(`blob ${blob.blob_id}: the file holds ${size} bytes, the artifact ${blob.size}`);
      const buf = Buffer.allocUnsafe(Math.min(READ_PIECE, end - start + 1));
      for (let pos = start; pos <= end; ) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.byteLength, end - pos + 1), pos);
        if (bytesRead === 0) throw new Error(`blob ${blob.blob_id}: the file ended at ${pos} bytes (cut short meanwhile?)`);
        pos += bytesRead;
        // A copy: the consumer may hold it while the next piece is read into buf.
        yield Buffer.from(buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  }

  async remove(blobIds: readonly string[]): Promise<number> {
    let removed = 0;
    for (const id of blobIds) {
      if (!BLOB_ID.test(id)) continue;
      try {
        await rm(this.pathOf(id));
        removed++;
      } catch (err) {
        // Another server (or a sweep) removed it first.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return removed;
  }

  async collect(force: boolean): Promise<number> {
    const now = this.now();
    if (!force && now - this.lastSweepMs < SWEEP_EVERY_MS) return 0;
    this.lastSweepMs = now;
    let removed = 0;
    let batch: string[] = [];
    const flush = async () => {
      const unnamed = await this.store.read((r) => r.unnamedBlobs(batch));
      batch = [];
      for (const id of unnamed) {
        // Renamed into place only after its row was recorded: no row now means no one needs it.
        await rm(this.pathOf(id), { force: true });
        removed++;
      }
    };
    for (const sub of await readdir(this.dir, { withFileTypes: true })) {
      if (!sub.isDirectory() || !/^[0-9a-f]{2}$/.test(sub.name)) continue;
      const subDir = join(this.dir, sub.name);
      for (const name of await readdir(subDir).catch(() => [] as string[])) {
        if (name.startsWith(TEMP_PREFIX)) {
          const st = await stat(join(subDir, name)).catch(() => null);
          if (st && now - st.mtimeMs > STALE_TEMP_MS) {
            await rm(join(subDir, name), { force: true });
            removed++;
          }
        } else if (BLOB_ID.test(name)) {
          batch.push(name);
          if (batch.length >= SWEEP_BATCH) await flush();
        }
      }
    }
    if (batch.length > 0) await flush();
    return removed;
  }
}
