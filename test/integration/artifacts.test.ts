/**
 * Artifacts end to end (README "Artifacts") with real processes: a spawned `weft server` (SQLite, and
 * PostgreSQL) and real `weft worker`s. A job's `artifacts:` are uploaded after it succeeds, a later
 * job's `download:` finds them byte-identical in its fresh working directory, a re-run keeps the kept
 * jobs' artifacts, retention deletes them with their run, and `weft artifacts` lists and downloads
 * them. Needs `npm run build` first (bin/weft runs dist/).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, request, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * `build` writes a random file in a subdirectory and a text file, and prints their joint digest;
 * `use` (download: [build]) prints the digest of what it finds, and where it ran; `other` needs build
 * but downloads nothing, and says whether the files are there.
 */
const WORKFLOW = {
  jobs: {
    build: {
      run: [
        'mkdir -p out/sub',
        `head -c ${3 * 1024 * 1024 + 777} /dev/urandom > out/sub/data.bin`,
        'echo "report of build" > report.txt',
        'ln -s /etc/passwd out/link',
        'echo "::set-output sum=$(cat out/sub/data.bin report.txt | sha256sum | cut -c1-64)"',
      ].join('\n'),
      artifacts: ['out', 'report.txt', 'nothing-*.zip'],
    },
    use: {
      needs: ['build'],
      download: ['build'],
      run: [
        'echo "::set-output sum=$(cat out/sub/data.bin report.txt | sha256sum | cut -c1-64)"',
        'echo "::set-output cwd=$PWD"',
        'test ! -e out/link && echo "::set-output link=absent"',
      ].join('\n'),
    },
    other: {
      needs: ['build'],
      run: 'if [ -e report.txt ]; then echo "::set-output seen=yes"; else echo "::set-output seen=no"; fi',
    },
  },
};

async function startWorker(t: TestContext, sb: Sandbox, url: string, workDir: string) {
  const w = track(t, spawnWeft(['worker'], { ...sb.env, SERVER_URL: url, WORK_DIR: workDir, LONG_POLL_SECS: '1', CONCURRENCY: '2' }, sb.dir));
  await w.waitFor(/weft worker .* started/);
  return w;
}

async function pipeline(t: TestContext, sb: Sandbox, extraEnv: Record<string, string>, chunks: () => Promise<number>) {
  const server = await serverProcess(t, sb, { RETAIN_RUNS: '1', REAP_INTERVAL_SECS: '0.2', ...extraEnv });
  const c = client(server.url);
  const put = await c.put('/api/workflows/art', WORKFLOW);
  assert.equal(put.status, 201, put.text);
  const workDir = path.join(sb.dir, 'work');
  await startWorker(t, sb, server.url, workDir);

  await c.run('art');
  const done = await c.settled('art', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.status, j.error])));
  const status = (await c.get('/api/workflows/art/runs/1')).body;
  const outs = Object.fromEntries(status.jobs.map((j: any) => [j.id, j.outputs]));
  assert.match(outs.build.sum, /^[0-9a-f]{64}$/);
  assert.equal(outs.use.sum, outs.build.sum, 'download: put the need\'s files into the working directory byte for byte');
  assert.equal(outs.use.link, 'absent', 'a symbolic link is not uploaded');
  assert.equal(outs.other.seen, 'no', 'a job without download: gets an empty directory');
  assert.ok(outs.use.cwd.startsWith(workDir + path.sep), `the attempt ran under WORK_DIR (${outs.use.cwd})`);
  await until(() => !fs.existsSync(outs.use.cwd), 'the attempt directory to be removed');

  // Listed, and downloadable byte for byte.
  const list = (await c.get('/api/workflows/art/runs/1/artifacts')).body.artifacts;
  assert.deepEqual(list.map((a: any) => [a.job_id, a.name]), [['build', 'out/sub/data.bin'], ['build', 'report.txt']]);
  const data = Buffer.from(await (await fetch(`${server.url}/api/workflows/art/runs/1/artifacts/build/out%2Fsub%2Fdata.bin`)).arrayBuffer());
  assert.equal(data.length, 3 * 1024 * 1024 + 777);
  assert.equal(sha(data), list[0].sha256);
  // The pattern that matched nothing is a warning in the job's log, not a failure.
  const logs = await c.get('/api/workflows/art/jobs/build/logs?run=1');
  assert.match(logs.body.map((ch: any) => ch.data).join(''), /no file matched the artifacts pattern\(s\) "nothing-\*\.zip"/);

  // `weft artifacts list|download`.
  const cli = spawnWeft(['artifacts', 'list', 'art', '--server', server.url], sb.env, sb.dir);
  assert.equal(await cli.exited, 0, cli.output());
  assert.match(cli.output(), /build\s+out\/sub\/data\.bin\s+3\.0 MiB/);
  const into = path.join(sb.dir, 'fetched');
  const dl = spawnWeft(['artifacts', 'download', 'art', '--run', '1', '--server', server.url, '--dir', into], sb.env, sb.dir);
  assert.equal(await dl.exited, 0, dl.output());
  assert.ok(fs.readFileSync(path.join(into, 'build', 'out', 'sub', 'data.bin')).equals(data));
  assert.equal(fs.readFileSync(path.join(into, 'build', 'report.txt'), 'utf8'), 'report of build\n');

  // A re-run from `use` keeps build, and with it its artifacts, which `use` downloads again.
  const rerun = await c.post('/api/workflows/art/runs/1/rerun', { from: 'use' });
  assert.equal(rerun.status, 202, rerun.text);
  const again = await c.settled('art', 60_000);
  assert.equal(again.run_number, 2);
  assert.equal(again.status, 'success', JSON.stringify(again.jobs.map((j: any) => [j.id, j.status, j.error])));
  const outs2 = Object.fromEntries((await c.get('/api/workflows/art/runs/2')).body.jobs.map((j: any) => [j.id, j.outputs]));
  assert.equal(outs2.use.sum, outs.build.sum, 'the re-run\'s use found the kept build\'s files');
  const list2 = (await c.get('/api/workflows/art/runs/2/artifacts')).body.artifacts;
  assert.deepEqual(list2.map((a: any) => [a.job_id, a.name, a.sha256]), list.map((a: any) => [a.job_id, a.name, a.sha256]));

  // RETAIN_RUNS=1: run 1 goes; run 2's artifacts share its bytes and stay.
  await until(async () => (await c.get('/api/workflows/art/runs/1/artifacts')).status === 404, 'retention to delete run 1', 30_000, 100);
  const kept = await fetch(`${server.url}/api/workflows/art/runs/2/artifacts/build/out%2Fsub%2Fdata.bin`);
  assert.equal(kept.status, 200);
  assert.ok(Buffer.from(await kept.arrayBuffer()).equals(data), 'the kept artifact outlives the run it was uploaded in');

  // A third run (all jobs again) uploads anew; run 2 goes, and nothing of the first upload is left.
  const third = await c.post('/api/workflows/art/runs/2/rerun', { only: 'all' });
  assert.equal(third.status, 202, third.text);
  assert.equal((await c.settled('art', 60_000)).status, 'success');
  await until(async () => (await c.get('/api/workflows/art/runs/2/artifacts')).status === 404, 'retention to delete run 2', 30_000, 100);
  assert.equal((await c.get('/api/workflows/art/runs/3/artifacts')).body.artifacts.length, 2);
  // Run 3's two files: 4 chunks of 1 MiB for data.bin, 1 for report.txt; nothing else.
  assert.equal(await chunks(), 5, 'the deleted runs\' chunks are gone');
}

test('SQLite: artifacts uploaded by a real worker, downloaded by the next job, kept by a re-run, deleted by retention', async (t) => {
  const sb = sandbox(t);
  const Database = (await import('better-sqlite3')).default;
  await pipeline(t, sb, {}, async () => {
    const db = new Database(path.join(sb.dir, 'weft.db'), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM artifact_chunks').get() as { n: number }).n;
    } finally {
      db.close();
    }
  });
});

test('PostgreSQL: the same, on a shared database', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t);
  const postgres = (await import('postgres')).default;
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  t.after(() => sql.end());
  await pipeline(t, sb, { DATABASE_URL: db.url }, async () => Number((await sql`SELECT count(*)::int AS n FROM artifact_chunks`)[0]!.n));
});

test('a failed upload fails the attempt, retryably, with the reason in its log', async (t) => {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, { MAX_ARTIFACT_BYTES: '1000' });
  const c = client(server.url);
  const put = await c.put('/api/workflows/cap', { jobs: { big: { run: 'head -c 5000 /dev/urandom > big.bin', artifacts: ['big.bin'], retries: 1 } } });
  assert.equal(put.status, 201, put.text);
  await startWorker(t, sb, server.url, path.join(sb.dir, 'work'));
  await c.run('cap');
  const done = await c.settled('cap', 60_000);
  const job = done.jobs.find((j: any) => j.id === 'big');
  assert.equal(job.state, 'failed');
  assert.equal(job.attempt, 1, 'retried once (the failure was retryable), then failed');
  assert.match(job.error, /uploading its artifacts.*MAX_ARTIFACT_BYTES/s);
  const logs = await request('GET', `${server.url}/api/workflows/cap/jobs/big/logs`);
  assert.match(logs.body.map((ch: any) => ch.data).join(''), /weft: the worker failed while uploading its artifacts/);
  assert.deepEqual((await c.get('/api/workflows/cap/runs/1/artifacts')).body.artifacts, []);
});
