/**
 * FileBlobs (ARTIFACTS_DIR, docs/architecture.md "Artifacts") against a real SQLite store: a blob is
 * readable only after commit, by any byte range; discard leaves nothing; an id that is not a store
 * UUID never becomes a path; a file of the wrong size is refused; a blob with no file is read from the
 * store's chunks (bytes stored before ARTIFACTS_DIR was set).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileBlobs } from '../../src/runtime/file-blobs.js';
import { openStore } from '../../src/store/index.js';
import { claimOne, start } from '../store/fixtures.js';

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of it) parts.push(Buffer.from(p));
  return Buffer.concat(parts);
}

async function setUp(t: { after(fn: () => unknown): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-blobs-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(path.join(dir, 'weft.db'));
  t.after(() => store.close());
  const blobs = await FileBlobs.open(path.join(dir, 'a', 'b'), store);
  return { dir: path.join(dir, 'a', 'b'), store, blobs };
}

test('written to a temporary file, readable by range only after commit; discard leaves nothing', async (t) => {
  const { dir, blobs } = await setUp(t);
  assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  const id = randomUUID();
  const data = randomBytes(700 * 1024 + 3);
  const w = await blobs.writer(id);
  await w.write(data.subarray(0, 1000));
  await w.write(data.subarray(1000));
  const blob = { blob_id: id, size: data.length, chunk_bytes: 1024 * 1024 };
  await assert.rejects(collect(blobs.read(blob, 0, 10)), /no file/, 'not readable before commit');
  await w.commit();
  const file = path.join(dir, id.slice(0, 2), id);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(fs.readdirSync(path.dirname(file)), [id], 'the temporary name is gone');
  assert.ok((await collect(blobs.read(blob, 0, data.length - 1))).equals(data));
  assert.ok((await collect(blobs.read(blob, 262_000, 600_000))).equals(data.subarray(262_000, 600_001)), 'a range over read pieces');
  assert.ok((await collect(blobs.read(blob, data.length - 1, data.length - 1))).equals(data.subarray(-1)));

  const gone = randomUUID();
  const w2 = await blobs.writer(gone);
  await w2.write(data);
  await w2.discard();
  assert.deepEqual(fs.existsSync(path.join(dir, gone.slice(0, 2))) ? fs.readdirSync(path.join(dir, gone.slice(0, 2))).filter((n) => n.includes(gone)) : [], []);

  fs.truncateSync(file, 10);
  await assert.rejects(collect(blobs.read(blob, 0, 5)), /holds 10 bytes/, 'a file of the wrong size is refused, not served short');
});

test('an id that is not a store UUID never becomes a path', async (t) => {
  const { blobs } = await setUp(t);
  for (const bad of ['../../etc/passwd', 'ab/../../x', '', 'A'.repeat(36)]) {
    await assert.rejects(blobs.writer(bad), /not one this server makes/);
    await assert.rejects(collect(blobs.read({ blob_id: bad, size: 1, chunk_bytes: 1024 }, 0, 0)), /not one this server makes/);
  }
});

test('a blob without a file is read from the store\'s chunks', async (t) => {
  const { store, blobs } = await setUp(t);
  await start(store, 'wf', 1000, { a: {} });
  const c = await claimOne(store, 1000, 'a');
  const begun = await store.beginArtifactUpload(c.lease.lease_id, 1000);
  assert.equal(begun.kind, 'begun');
  const id = begun.kind === 'begun' ? begun.upload.blob_id : '';
  await store.putArtifactChunk(id, 0, Buffer.from('hello '));
  await store.putArtifactChunk(id, 1, Buffer.from('world!'));
  const got = await collect(blobs.read({ blob_id: id, size: 12, chunk_bytes: 6 }, 3, 8));
  assert.equal(got.toString(), 'lo wor');
});
