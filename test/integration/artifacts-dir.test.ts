/**
 * ARTIFACTS_DIR (README "Artifacts", docs/architecture.md "Artifacts") with real processes: artifact
 * bytes as files (0600, in directories 0700) instead of chunk rows. A real `weft worker` uploads, a
 * later job downloads byte-identical, the API lists and serves whole and by Range; a refused upload
 * (checksum, size cap) leaves no file; retention removes the files of the blobs the store reports
 * unnamed, workflow deletion sweeps the directory (files no row names, an upload's temporary file
 * once it is an hour old). Two `weft server`s on one
 * PostgreSQL database with the same directory serve each other's uploads. Needs `npm run build`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, request, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const SIZE = 2 * 1024 * 1024 + 321;

const WORKFLOW = {
  jobs: {
    build: {
      run: [`head -c ${SIZE} /dev/urandom > data.bin`, 'echo "report" > report.txt', 'echo "::set-output sum=$(sha256sum data.bin | cut -c1-64)"'].join('\n'),
      artifacts: ['data.bin', 'report.txt'],
    },
    use: { needs: ['build'], download: ['build'], run: 'echo "::set-output sum=$(sha256sum data.bin | cut -c1-64)"' },
  },
};

/** Every file under the directory (relative paths), temporary ones included. */
function filesIn(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((p) => fs.statSync(path.join(dir, p)).isFile()).sort();
}
const blobFiles = (dir: string) => filesIn(dir).filter((p) => !path.basename(p).startsWith('.'));
const mode = (p: string) => fs.statSync(p).mode & 0o777;

async function startWorker(t: TestContext, sb: Sandbox, url: string) {
  const w = track(t, spawnWeft(['worker'], { ...sb.env, SERVER_URL: url, WORK_DIR: path.join(sb.dir, 'work'), LONG_POLL_SECS: '1', CONCURRENCY: '2' }, sb.dir));
  await w.waitFor(/weft worker .* started/);
  return w;
}

async function download(url: string, range?: string): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(url, { headers: range ? { range } : {} });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** PUT an artifact, the body streamed in pieces with no Content-Length. */
async function put(base: string, leaseId: string, name: string, data: Buffer, shaHeader = sha(data)) {
  async function* pieces() {
    for (let i = 0; i < data.length; i += 64 * 1024) yield data.subarray(i, i + 64 * 1024);
  }
  const res = await fetch(`${base}/api/jobs/${encodeURIComponent(leaseId)}/artifacts/${encodeURIComponent(name)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'x-weft-sha256': shaHeader },
    body: pieces() as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test('SQLite: a real worker uploads into ARTIFACTS_DIR, the next job downloads, Range reads, retention and deletion remove the files', async (t) => {
  const sb = sandbox(t);
  const dir = path.join(sb.dir, 'shared', 'artifacts');
  const server = await serverProcess(t, sb, { ARTIFACTS_DIR: dir, RETAIN_RUNS: '1', REAP_INTERVAL_SECS: '0.2' });
  const c = client(server.url);
  assert.equal(mode(dir), 0o700, 'the directory is created 0700');
  assert.equal((await c.put('/api/workflows/art', WORKFLOW)).status, 201);
  await startWorker(t, sb, server.url);

  await c.run('art');
  const done = await c.settled('art', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.status, j.error])));
  const outs = Object.fromEntries((await c.get('/api/workflows/art/runs/1')).body.jobs.map((j: any) => [j.id, j.outputs]));
  assert.match(outs.build.sum, /^[0-9a-f]{64}$/);
  assert.equal(outs.use.sum, outs.build.sum, 'download: found the need\'s file byte for byte');

  // The bytes are files, not chunk rows.
  const files1 = blobFiles(dir);
  assert.equal(files1.length, 2, `one file per artifact: ${files1.join(', ')}`);
  for (const f of files1) {
    assert.equal(mode(path.join(dir, f)), 0o600, `${f} is 0600`);
    assert.equal(mode(path.dirname(path.join(dir, f))), 0o700, `${path.dirname(f)} is 0700`);
    assert.equal(path.dirname(f), path.basename(f).slice(0, 2), 'filed under the first two characters of its id');
  }
  const Database = (await import('better-sqlite3')).default;
  const chunkRows = () => {
    const db = new Database(path.join(sb.dir, 'weft.db'), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM artifact_chunks').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  assert.equal(chunkRows(), 0, 'no chunk rows with ARTIFACTS_DIR');

  const list = (await c.get('/api/workflows/art/runs/1/artifacts')).body.artifacts;
  assert.deepEqual(list.map((a: any) => [a.name, a.size]), [['data.bin', SIZE], ['report.txt', 7]]);
  const url = `${server.url}/api/workflows/art/runs/1/artifacts/build/data.bin`;
  const whole = await download(url);
  assert.equal(whole.status, 200);
  assert.equal(sha(whole.body), outs.build.sum);
  assert.equal(sha(whole.body), list[0].sha256);
  // A Range across the 1 MiB chunk boundary, and a suffix.
  const part = await download(url, 'bytes=1048000-1049999');
  assert.equal(part.status, 206);
  assert.ok(part.body.equals(whole.body.subarray(1048000, 1050000)));
  const tail = await download(url, 'bytes=-100');
  assert.equal(tail.status, 206);
  assert.ok(tail.body.equals(whole.body.subarray(SIZE - 100)));

  // Left-overs for the sweep: an old temporary file of an upload that died, a fresh one (an upload in
  // progress, kept), and a file no row names (bytes whose row went while the server was down).
  const sub = path.join(dir, 'ab');
  fs.mkdirSync(sub, { mode: 0o700 });
  const oldTemp = path.join(sub, `.upload-${randomUUID()}.dead`);
  const freshTemp = path.join(sub, `.upload-${randomUUID()}.live`);
  const stray = path.join(sub, `ab${randomUUID().slice(2)}`);
  for (const f of [oldTemp, freshTemp, stray]) fs.writeFileSync(f, 'x', { mode: 0o600 });
  const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
  fs.utimesSync(oldTemp, twoHoursAgo, twoHoursAgo);

  // Run 2 uploads anew; RETAIN_RUNS=1 deletes run 1, and with it run 1's files.
  assert.equal((await c.post('/api/workflows/art/runs/1/rerun', { only: 'all' })).status, 202);
  assert.equal((await c.settled('art', 60_000)).status, 'success');
  await until(async () => (await c.get('/api/workflows/art/runs/1/artifacts')).status === 404, 'retention to delete run 1', 30_000, 100);
  // Removed by retention itself (the ids the store reported), not by a later sweep of the directory.
  await server.waitFor(/deleted the artifact files of the runs retention deleted/, 60_000);
  assert.ok(files1.every((f) => !fs.existsSync(path.join(dir, f))), 'run 1\'s files are removed');
  const files2 = blobFiles(dir).filter((f) => path.join(dir, f) !== stray);
  assert.equal(files2.length, 2, `run 2's two files: ${files2.join(', ')}`);
  const again = await download(`${server.url}/api/workflows/art/runs/2/artifacts/build/report.txt`);
  assert.equal(again.body.toString(), 'report\n');

  // Deleting the workflow removes the rest, and sweeps the directory.
  assert.equal((await request('DELETE', `${server.url}/api/workflows/art`)).status, 200);
  await until(() => blobFiles(dir).length === 0, 'the workflow\'s files (and the unnamed one) to be removed', 30_000, 100);
  await until(() => !fs.existsSync(oldTemp), 'the sweep to remove the dead upload\'s temporary file', 30_000, 100);
  assert.ok(fs.existsSync(freshTemp), 'a temporary file less than an hour old is left alone');
});

test('a refused upload (checksum mismatch, MAX_ARTIFACT_BYTES) leaves no file behind, temporary or final', async (t) => {
  const sb = sandbox(t);
  const dir = path.join(sb.dir, 'artifacts');
  const server = await serverProcess(t, sb, { ARTIFACTS_DIR: dir, MAX_ARTIFACT_BYTES: String(2 * 1024 * 1024) });
  const created = await request('POST', `${server.url}/api/workflows`, { id: 'wf', jobs: [{ id: 'build', command: 'true' }] });
  assert.equal(created.status, 201, created.text);
  assert.equal((await request('POST', `${server.url}/api/workflows/wf/run`)).status, 202);
  const claimed = await request('POST', `${server.url}/api/jobs/claim`, { worker_id: 'w1', labels: [], lease_ttl_secs: 60 });
  assert.equal(claimed.status, 200, claimed.text);
  const lease = claimed.body.lease.lease_id as string;

  const data = randomBytes(1536 * 1024);
  const bad = await put(server.url, lease, 'a.bin', data, sha(Buffer.from('other')));
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'artifact_checksum_mismatch');
  assert.deepEqual(filesIn(dir), [], 'nothing of the mismatched upload is left');
  const big = await put(server.url, lease, 'big.bin', randomBytes(2 * 1024 * 1024 + 1));
  assert.equal(big.status, 413);
  assert.equal(big.body.error, 'artifact_too_large');
  assert.deepEqual(filesIn(dir), [], 'nothing of the oversized upload is left');

  const ok = await put(server.url, lease, 'a.bin', data);
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  const files = filesIn(dir);
  assert.equal(files.length, 1, files.join(', '));
  assert.equal(fs.readFileSync(path.join(dir, files[0]!)).equals(data), true, 'the file holds the bytes');
  assert.equal(mode(path.join(dir, files[0]!)), 0o600);
});

test('PostgreSQL: two servers on one database and one ARTIFACTS_DIR serve each other\'s uploads', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t);
  const dir = path.join(sb.dir, 'shared-artifacts');
  const env = { DATABASE_URL: db.url, ARTIFACTS_DIR: dir };
  const a = await serverProcess(t, sb, env);
  const b = await serverProcess(t, sb, { ...env, API_ONLY: '1' });
  assert.equal((await client(a.url).put('/api/workflows/art', WORKFLOW)).status, 201);
  // The worker talks to server A only: every upload goes through A.
  await startWorker(t, sb, a.url);
  await client(a.url).run('art');
  const done = await client(b.url).settled('art', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.status, j.error])));
  const outs = Object.fromEntries((await client(b.url).get('/api/workflows/art/runs/1')).body.jobs.map((j: any) => [j.id, j.outputs]));
  assert.equal(outs.use.sum, outs.build.sum);
  assert.equal(blobFiles(dir).length, 2);
  const postgres = (await import('postgres')).default;
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  t.after(() => sql.end());
  assert.equal(Number((await sql`SELECT count(*)::int AS n FROM artifact_chunks`)[0]!.n), 0, 'no chunk rows with ARTIFACTS_DIR');

  // Through server B: whole and by Range.
  const url = `${b.url}/api/workflows/art/runs/1/artifacts/build/data.bin`;
  const whole = await download(url);
  assert.equal(whole.status, 200);
  assert.equal(sha(whole.body), outs.build.sum, 'server B serves the bytes uploaded through server A');
  const part = await download(url, `bytes=${SIZE - 5000}-`);
  assert.equal(part.status, 206);
  assert.ok(part.body.equals(whole.body.subarray(SIZE - 5000)));

  // Deleted through B: B removes the files A wrote.
  assert.equal((await request('DELETE', `${b.url}/api/workflows/art`)).status, 200);
  await until(() => blobFiles(dir).length === 0, 'the files to be removed', 30_000, 100);
});

test('`weft prune` with ARTIFACTS_DIR removes the files of the runs it deleted', async (t) => {
  const sb = sandbox(t);
  const dir = path.join(sb.dir, 'artifacts');
  // One reaper pass at start only: what goes after is the prune's doing.
  const server = await serverProcess(t, sb, { ARTIFACTS_DIR: dir, REAP_INTERVAL_SECS: '3600' });
  const c = client(server.url);
  assert.equal((await c.put('/api/workflows/art', WORKFLOW)).status, 201);
  await startWorker(t, sb, server.url);
  await c.run('art');
  assert.equal((await c.settled('art', 60_000)).status, 'success');
  const run1 = blobFiles(dir);
  assert.equal(run1.length, 2);
  assert.equal((await c.post('/api/workflows/art/runs/1/rerun', { only: 'all' })).status, 202);
  assert.equal((await c.settled('art', 60_000)).status, 'success');
  assert.equal(blobFiles(dir).length, 4);

  const prune = spawnWeft(['prune', '--retain-runs', '1'], { ...sb.env, ARTIFACTS_DIR: dir }, sb.dir);
  assert.equal(await prune.exited, 0, prune.output());
  assert.match(prune.output(), /deleted 1 run/);
  const left = blobFiles(dir);
  assert.equal(left.length, 2, `run 2's files only: ${left.join(', ')}`);
  assert.ok(run1.every((f) => !left.includes(f)), 'run 1\'s files went with it');
  const still = await download(`${server.url}/api/workflows/art/runs/2/artifacts/build/report.txt`);
  assert.equal(still.body.toString(), 'report\n');
});
