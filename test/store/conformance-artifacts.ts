/**
 * Conformance: artifacts (README "Artifacts", docs/architecture.md "Artifacts"): uploads guarded by
 * the lease, chunks stored and read back, only a successful attempt's artifacts seen, a re-run's kept
 * jobs sharing the bytes, and retention deleting rows and the bytes no other run names.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ArtifactRecord, Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { buildJobs, claimOne, complete, HASH, labelSetsOf, read, start } from './fixtures.js';

const CHUNK = 1024;

/** Uploads `data` as `name` on the lease in chunks of CHUNK bytes; answers the finish outcome and the blob id. */
async function upload(store: Store, leaseId: string, name: string, data: Buffer, now: number, holder: string | null = null) {
  const begun = await store.beginArtifactUpload(leaseId, now, holder);
  if (begun.kind !== 'begun') return { outcome: begun, blob: null };
  const blob = begun.upload.blob_id;
  for (let seq = 0; seq * CHUNK < data.length; seq++) await store.putArtifactChunk(blob, seq, data.subarray(seq * CHUNK, (seq + 1) * CHUNK));
  const outcome = await store.finishArtifactUpload(leaseId, { blob_id: blob, name, size: data.length, sha256: 'a'.repeat(64), chunk_bytes: CHUNK }, now, holder);
  return { outcome, blob };
}

/** Every byte of an artifact, read a chunk at a time. */
async function bytesOf(store: Store, a: ArtifactRecord): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let seq = 0; seq * a.chunk_bytes < a.size; seq++) {
    const c = await read(store, (r) => r.getArtifactChunk(a.blob_id, seq));
    assert.ok(c, `chunk ${seq} of ${a.name}`);
    parts.push(Buffer.from(c));
  }
  return Buffer.concat(parts);
}

const list = (store: Store, wf: string, run: number, job?: string) => read(store, (r) => r.listArtifacts(wf, run, job));
const chunk0 = (store: Store, blob: string) => read(store, (r) => r.getArtifactChunk(blob, 0));

export function artifactCases(withStore: Case): void {
  withStore('an upload is stored in chunks, seen once its attempt succeeded, read back byte for byte; the same name replaces', async (store) => {
    await start(store, 'wf', 1000, { 'build~1': {}, test: { needs: ['build~1'] } });
    const c = await claimOne(store, 1000, 'build~1');
    const data = randomBytes(3 * CHUNK + 17);
    const first = await upload(store, c.lease.lease_id, 'dist/app.bin', data, 1100);
    assert.equal(first.outcome.kind, 'stored');
    const replaced = await upload(store, c.lease.lease_id, 'log.txt', Buffer.from('one'), 1100);
    const again = await upload(store, c.lease.lease_id, 'log.txt', Buffer.from('two!'), 1200);
    assert.equal(again.outcome.kind, 'stored');
    assert.deepEqual(await list(store, 'wf', 1), [], 'nothing is seen while the attempt runs');
    await complete(store, c.lease.lease_id, {}, 1300);

    const seen = await list(store, 'wf', 1);
    assert.deepEqual(seen.map((a) => [a.job_id, a.name, a.size, a.attempt]), [['build~1', 'dist/app.bin', data.length, 0], ['build~1', 'log.txt', 4, 0]]);
    assert.ok((await bytesOf(store, seen[0]!)).equals(data));
    assert.equal((await bytesOf(store, seen[1]!)).toString(), 'two!');
    assert.equal(await chunk0(store, replaced.blob!), null, 'the replaced upload\'s bytes are gone');
    assert.deepEqual((await list(store, 'wf', 1, 'build~1')).length, 2);
    assert.deepEqual(await list(store, 'wf', 1, 'test'), []);
    const one = await read(store, (r) => r.getArtifact('wf', 1, 'build~1', 'dist/app.bin'));
    assert.equal(one?.sha256, 'a'.repeat(64));
    assert.equal(one?.created_at_ms, 1100);
    assert.equal(await read(store, (r) => r.getArtifact('wf', 1, 'build~1', 'nope')), null);
  });

  withStore('only a live lease held by the caller uploads; a refused finish stores nothing', async (store) => {
    await start(store, 'wf', 1000, { a: { max_retries: 1 } });
    assert.deepEqual(await store.beginArtifactUpload('no-such-lease', 1000), { kind: 'not_found' });
    const c = await claimOne(store, 1000, 'a', { token: 'worker-a', ttl: 10 });
    assert.equal((await store.beginArtifactUpload(c.lease.lease_id, 1000, 'worker-b')).kind, 'not_yours');
    // Begun while live, finished after the lease ran out: refused, and the chunks deleted.
    const begun = await store.beginArtifactUpload(c.lease.lease_id, 1000, 'worker-a');
    assert.equal(begun.kind, 'begun');
    const blob = begun.kind === 'begun' ? begun.upload.blob_id : '';
    await store.putArtifactChunk(blob, 0, Buffer.from('late'));
    const late = await store.finishArtifactUpload(c.lease.lease_id, { blob_id: blob, name: 'x', size: 4, sha256: 'b'.repeat(64), chunk_bytes: CHUNK }, 20_000, 'worker-a');
    assert.equal(late.kind, 'expired');
    assert.equal(await chunk0(store, blob), null);
    // The expiry re-queued the job; its second attempt completes, and the first lease stays refused.
    const c2 = await claimOne(store, 21_000, 'a');
    await complete(store, c2.lease.lease_id, {}, 21_100);
    const settled = await store.beginArtifactUpload(c2.lease.lease_id, 21_200);
    assert.deepEqual(settled, { kind: 'settled', state: 'completed' });
    assert.deepEqual(await list(store, 'wf', 1), []);
  });

  withStore('a failed attempt keeps no artifacts: unseen, and deleted when the next attempt starts uploading', async (store) => {
    await start(store, 'wf', 1000, { a: { max_retries: 1 } });
    const c = await claimOne(store, 1000, 'a');
    const first = await upload(store, c.lease.lease_id, 'out.bin', Buffer.from('attempt 0'), 1100);
    assert.equal(first.outcome.kind, 'stored');
    const failed = await store.fail(c.lease.lease_id, 'boom', true, 1200);
    assert.equal(failed.kind === 'failed' && failed.job.status, 'queued');
    assert.deepEqual(await list(store, 'wf', 1), []);
    const c2 = await claimOne(store, 5000, 'a');
    assert.equal(c2.job.attempt, 1);
    assert.equal((await upload(store, c2.lease.lease_id, 'other.bin', Buffer.from('attempt 1'), 5100)).outcome.kind, 'stored');
    assert.equal(await chunk0(store, first.blob!), null, 'the failed attempt\'s bytes went when the next attempt uploaded');
    await complete(store, c2.lease.lease_id, {}, 5200);
    assert.deepEqual((await list(store, 'wf', 1)).map((a) => [a.name, a.attempt]), [['other.bin', 1]]);
  });

  withStore('a re-run\'s kept job lists the artifacts it was kept with; retention deletes rows, and bytes no run names', async (store) => {
    await start(store, 'wf', 1000, { build: {}, test: { needs: ['build'] } });
    const b = await claimOne(store, 1000, 'build');
    const data = randomBytes(2 * CHUNK + 5);
    await upload(store, b.lease.lease_id, 'app.bin', data, 1100);
    await complete(store, b.lease.lease_id, {}, 1200);
    const t = await claimOne(store, 1300, 'test');
    const only1 = await upload(store, t.lease.lease_id, 'report.txt', Buffer.from('run 1 report'), 1350);
    await complete(store, t.lease.lease_id, {}, 1400);

    // Run 2 re-runs `test`, keeping `build` (as the engine plans it: the kept job starts as success).
    const jobs = buildJobs('wf', 2000, { build: {}, test: { needs: ['build'] } });
    Object.assign(jobs[0]!, { status: 'success', outputs: {}, attempt: 0, started_at_ms: 1000, finished_at_ms: 1200 });
    Object.assign(jobs[1]!, { status: 'queued', pending_needs: 0, enqueued_at_ms: 2000, ready_at_ms: 2000, upstream_outputs: { build: {} } });
    const started = await store.startRun({ workflow_id: 'wf', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 2000, rerun_of: 1 });
    assert.equal(started.kind, 'started');
    const kept = await list(store, 'wf', 2);
    assert.deepEqual(kept.map((a) => [a.job_id, a.name, a.size]), [['build', 'app.bin', data.length]]);
    assert.ok((await bytesOf(store, kept[0]!)).equals(data));
    const t2 = await claimOne(store, 2100, 'test');
    await complete(store, t2.lease.lease_id, {}, 2200);

    // Run 1 goes: its own artifact's bytes with it, the shared ones stay for run 2.
    const out = await store.pruneRuns({ retain_runs: 1, finished_before_ms: null, max_runs: 100, max_log_chunks: 10_000, dry_run: false });
    assert.deepEqual(out.runs.map((r) => r.run_number), [1]);
    assert.deepEqual(out.unnamed_blobs, [only1.blob], 'retention reports the blob only run 1 named, not the one run 2 shares');
    assert.deepEqual(await list(store, 'wf', 1), []);
    assert.equal(await chunk0(store, only1.blob!), null, 'run 1\'s own artifact\'s bytes are gone');
    assert.ok((await bytesOf(store, (await list(store, 'wf', 2))[0]!)).equals(data), 'the kept artifact outlives the run it was uploaded in');

    // A third run, then run 2 goes too: nothing of app.bin is left.
    await start(store, 'wf', 3000, { build: {}, test: { needs: ['build'] } });
    for (const id of ['build', 'test']) await complete(store, (await claimOne(store, 3100, id)).lease.lease_id, {}, 3100);
    const preview = await store.pruneRuns({ retain_runs: 1, finished_before_ms: null, max_runs: 100, max_log_chunks: 10_000, dry_run: true });
    assert.deepEqual(preview.unnamed_blobs ?? [], [], 'a dry run reports nothing');
    const out2 = await store.pruneRuns({ retain_runs: 1, finished_before_ms: null, max_runs: 100, max_log_chunks: 10_000, dry_run: false });
    assert.deepEqual(out2.unnamed_blobs, [kept[0]!.blob_id], 'the shared blob is reported once the last run naming it went');
    assert.deepEqual(await list(store, 'wf', 2), []);
    assert.equal(await chunk0(store, kept[0]!.blob_id), null, 'the shared bytes went with the last run naming them');
  });

  withStore('deleting a workflow deletes its artifacts', async (store) => {
    await start(store, 'wf', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a');
    const up = await upload(store, c.lease.lease_id, 'x', Buffer.from('x'), 1100);
    await complete(store, c.lease.lease_id, {}, 1200);
    assert.equal(await store.deleteWorkflow('wf', { max_runs: 10, max_log_chunks: 1000 }), 'deleted');
    assert.equal(await chunk0(store, up.blob!), null);
    // Created again, its run 1 has none of the old ones.
    await start(store, 'wf', 2000, { a: {} });
    assert.deepEqual(await list(store, 'wf', 1), []);
  });

  withStore('unnamedBlobs answers the blob ids no row and no upload in progress names: after a replace, a failed attempt, retention, a workflow deletion', async (store) => {
    const unnamed = (ids: string[]) => read(store, (r) => r.unnamedBlobs(ids)).then((x) => [...x].sort());
    assert.deepEqual(await unnamed([]), []);
    assert.deepEqual(await unnamed(['never-seen']), ['never-seen'], 'an id nothing ever named is unnamed');
    await start(store, 'wf', 1000, { build: { max_retries: 1 }, test: { needs: ['build'] } });
    const b0 = await claimOne(store, 1000, 'build');
    const failedBlob = (await upload(store, b0.lease.lease_id, 'app.bin', Buffer.from('attempt 0'), 1050)).blob!;
    await store.fail(b0.lease.lease_id, 'boom', true, 1060);
    assert.deepEqual(await unnamed([failedBlob]), [], 'a failed attempt\'s rows still name its blob until the next attempt uploads');
    const b = await claimOne(store, 1070, 'build');
    const replaced = (await upload(store, b.lease.lease_id, 'app.bin', Buffer.from('first'), 1100)).blob!;
    assert.deepEqual(await unnamed([failedBlob]), [failedBlob], 'the next attempt\'s upload dropped the failed attempt\'s rows');
    const kept = (await upload(store, b.lease.lease_id, 'app.bin', Buffer.from('second'), 1150)).blob!;
    assert.deepEqual(await unnamed([replaced, kept]), [replaced], 'a replaced upload\'s blob is unnamed, the new one named');
    await complete(store, b.lease.lease_id, {}, 1200);
    // An upload in progress names its blob before any row does.
    const t = await claimOne(store, 1300, 'test');
    const begun = await store.beginArtifactUpload(t.lease.lease_id, 1300);
    assert.equal(begun.kind, 'begun');
    const open = begun.kind === 'begun' ? begun.upload.blob_id : '';
    assert.deepEqual(await unnamed([open, kept, kept]), [], 'an upload in progress and a stored artifact are named; ids repeat harmlessly');
    await store.abortArtifactUpload(open);
    assert.deepEqual(await unnamed([open]), [open], 'an aborted upload names nothing');
    await complete(store, t.lease.lease_id, {}, 1400);

    // Run 2 re-runs test, keeping build: its row names the same blob, so pruning run 1 leaves it named.
    const jobs = buildJobs('wf', 2000, { build: {}, test: { needs: ['build'] } });
    Object.assign(jobs[0]!, { status: 'success', outputs: {}, attempt: 1, started_at_ms: 1070, finished_at_ms: 1200 });
    Object.assign(jobs[1]!, { status: 'queued', pending_needs: 0, enqueued_at_ms: 2000, ready_at_ms: 2000, upstream_outputs: { build: {} } });
    const started = await store.startRun({ workflow_id: 'wf', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: 2000, rerun_of: 1 });
    assert.equal(started.kind, 'started');
    await complete(store, (await claimOne(store, 2100, 'test')).lease.lease_id, {}, 2200);
    await store.pruneRuns({ retain_runs: 1, finished_before_ms: null, max_runs: 100, max_log_chunks: 10_000, dry_run: false });
    assert.deepEqual(await list(store, 'wf', 1), []);
    assert.deepEqual(await unnamed([kept]), [], 'the kept job of run 2 still names the blob run 1 uploaded');
    assert.equal(await store.deleteWorkflow('wf', { max_runs: 10, max_log_chunks: 1000 }), 'deleted');
    assert.deepEqual(await unnamed([kept, replaced]), [kept, replaced].sort(), 'with the workflow gone nothing names them');
  });
}
