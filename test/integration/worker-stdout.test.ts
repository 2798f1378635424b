/**
 * `weft worker` with its stdout and stderr in a pipe, as in `weft worker 2>&1 | tee log`: a reader
 * that never reads (the pipe fills up), a reader that has gone (EPIPE), and `tee` taking Ctrl-C
 * along with the worker. SIGTERM and SIGINT must end the worker whatever its stdout is, idle or with
 * a job running, and it must keep working meanwhile.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { sandbox as makeSandbox, serverProcess as server, WEFT_BIN, type Sandbox } from '../helpers/server.js';
import { alive } from '../helpers/process.js';

const sandbox = (t: TestContext) => makeSandbox(t, 'weft-stdout-');

/** Long ids make every log line of the worker long, so that a few jobs fill a pipe. */
const WORKER_ID = `w-${'x'.repeat(200)}`;

function workerEnv(serverUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SERVER_URL: serverUrl, WORKER_ID, POLL_SECS: '0.2', LOG_LEVEL: 'info' };
  for (const k of ['WORKER_LABELS', 'LEASE_TTL_SECS', 'HEARTBEAT_SECS', 'CONCURRENCY', 'CANCEL_POLL_SECS', 'KILL_GRACE_SECS', 'LOG_FORMAT']) delete env[k];
  return env;
}

/**
 * A job whose success the worker logs in one line of about 200 KB (it names every output: 1,000, the
 * most a job may report, README "Limits", with long keys), more than a pipe holds (64 KB on Linux): a
 * reader that does not read leaves the worker's stdout full.
 */
const FLOOD = `for i in $(seq 1 1000); do echo "::set-output k\${i}_${'x'.repeat(200)}=1"; done`;

/** A pipe (a FIFO opened read-write by the test) that nobody ever reads. */
function stalledPipe(t: TestContext, sb: Sandbox): number {
  const fifo = path.join(sb.dir, 'stalled');
  execFileSync('mkfifo', [fifo]);
  const fd = fs.openSync(fifo, 'r+');
  t.after(() => fs.closeSync(fd));
  return fd;
}

/** Resolves with the exit code (or signal), or rejects once `ms` have passed. */
function exitWithin(proc: ChildProcess, ms: number, what: string): Promise<number | string> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode ?? proc.signalCode!);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: the worker was still running ${ms} ms after the signal`)), ms);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? -1);
    });
  });
}

/** `weft worker` writing stdout and stderr into `fd`; SIGKILLed after the test if still alive. */
function workerInto(t: TestContext, sb: Sandbox, serverUrl: string, fd: number): ChildProcess {
  const proc = spawn(process.execPath, [WEFT_BIN, 'worker'], { cwd: sb.dir, env: workerEnv(serverUrl), stdio: ['ignore', fd, fd] });
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return proc;
}

/**
 * `sh -c 'weft worker 2>&1 | READER'` in a process group of its own, as a shell runs a pipeline
 * in the foreground; the worker's pid comes from its start line, which READER must keep in `log`.
 */
async function pipeline(t: TestContext, sb: Sandbox, serverUrl: string, reader: string) {
  const log = path.join(sb.dir, 'log');
  const sh = spawn('sh', ['-c', `"${process.execPath}" "${WEFT_BIN}" worker 2>&1 | ${reader}`], {
    cwd: sb.dir,
    env: workerEnv(serverUrl),
    stdio: 'ignore',
    detached: true,
  });
  const group = sh.pid!;
  let pid = 0;
  t.after(() => {
    if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  const start = await until(
    () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').find((l) => l.includes(' started: labels')) : undefined),
    'the worker to start',
  );
  // On a pipe the worker logs JSON lines.
  pid = (JSON.parse(start) as { pid: number }).pid;
  assert.ok(alive(pid));
  return { pid, group, log };
}

const gone = (pid: number, what: string) => until(() => !alive(pid), what, 8000, 20);

const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

/** Runs FLOOD, then a job more: a worker stuck writing its log of the first never takes the second. */
async function runFlood(api: ReturnType<typeof client>, id: string) {
  await api.createWorkflow({ id, jobs: { flood: { run: FLOOD } } });
  await api.run(id);
  assert.equal((await api.settled(id, 20_000)).status, 'success');
  await api.createWorkflow({ id: `${id}-next`, jobs: { next: { run: 'true' } } });
  await api.run(`${id}-next`);
  assert.equal((await api.settled(`${id}-next`, 20_000)).status, 'success');
}

test('stdout in a pipe nobody reads: the worker keeps running jobs and exits at once on SIGTERM', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const w = workerInto(t, sb, srv.url, stalledPipe(t, sb));
  await runFlood(api, 'flood');
  w.kill('SIGTERM');
  assert.equal(await exitWithin(w, 8000, 'idle, SIGTERM'), 0);
});

test('stdout in a pipe nobody reads: SIGINT with a job running lets it finish and report, then the worker exits', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const w = workerInto(t, sb, srv.url, stalledPipe(t, sb));
  await runFlood(api, 'flood');
  await api.createWorkflow({ id: 'slow', jobs: { j: { run: 'sleep 3' } } });
  await api.run('slow');
  await until(async () => jobOf(await api.status('slow'), 'j').state === 'running', 'the job to run');
  w.kill('SIGINT');
  assert.equal(await exitWithin(w, 15_000, 'job running, SIGINT'), 0);
  assert.equal(jobOf(await api.status('slow'), 'j').state, 'success');
});

test('Ctrl-C on `weft worker 2>&1 | tee log` (SIGINT to the whole group, tee dies too) ends an idle worker', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const { pid, group } = await pipeline(t, sb, srv.url, 'tee log > /dev/null');
  process.kill(-group, 'SIGINT');
  await gone(pid, 'the worker to exit after Ctrl-C');
});

test('SIGTERM to the group of `weft worker 2>&1 | tee log` with a job running: the job finishes and is reported, the worker exits', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const { pid, group } = await pipeline(t, sb, srv.url, 'tee log > /dev/null');
  await api.createWorkflow({ id: 'drain', jobs: { j: { run: 'for i in 1 2 3 4 5 6; do echo line $i; sleep 0.4; done' } } });
  await api.run('drain');
  await until(async () => jobOf(await api.status('drain'), 'j').state === 'running', 'the job to run');
  process.kill(-group, 'SIGTERM');
  await gone(pid, 'the worker to exit after its job');
  assert.equal(jobOf(await api.status('drain'), 'j').state, 'success');
});

test('a reader that has gone (EPIPE on every log line): jobs still run, and SIGTERM ends the worker', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  // `head` keeps the start line and leaves: every later line meets a closed pipe.
  const { pid } = await pipeline(t, sb, srv.url, 'head -n 1 > log');
  await runFlood(api, 'after-epipe');
  assert.ok(alive(pid));
  process.kill(pid, 'SIGTERM');
  await gone(pid, 'the worker to exit on SIGTERM');
});
