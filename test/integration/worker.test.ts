/**
 * `weft worker` as real processes against a real `weft server`: environment and outputs, log chunks,
 * failures and retries, cancellation killing the whole process tree, labels, heartbeats, graceful
 * SIGTERM, a server restart, concurrency and bad configuration; plus the Python example worker.
 * Every test has its own temp directory and SQLite file, and kills what it starts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, request, until } from '../helpers/http.js';
import { sandbox as makeSandbox, serverProcess as server, spawnWeft, track, type Sandbox } from '../helpers/server.js';
import { alive, hasPython, spawnPythonWorker } from '../helpers/process.js';

const sandbox = (t: TestContext) => makeSandbox(t, 'weft-worker-');

// ------------------------------------------------------------------------------------------ helpers


/** Worker settings nothing in the test runner's environment may override. */
const WORKER_DEFAULTS: Record<string, string | undefined> = {
  WORKER_LABELS: undefined,
  WORKER_ID: undefined,
  LEASE_TTL_SECS: undefined,
  HEARTBEAT_SECS: undefined,
  CONCURRENCY: undefined,
  CANCEL_POLL_SECS: undefined,
  KILL_GRACE_SECS: undefined,
  POLL_SECS: '0.2',
};

/** Starts `weft worker` and waits for its start line. */
async function worker(t: TestContext, sb: Sandbox, serverUrl: string, env: Record<string, string | undefined> = {}) {
  const p = track(t, spawnWeft(['worker'], { ...WORKER_DEFAULTS, SERVER_URL: serverUrl, ...env }, sb.dir));
  await p.waitFor(/weft worker \S+ started/);
  return p;
}

type Api = ReturnType<typeof client>;

async function createAndRun(api: Api, def: { id: string; [key: string]: unknown }) {
  await api.createWorkflow(def);
  await api.run(def.id);
}


const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

async function logs(api: Api, wf: string, job: string): Promise<any[]> {
  const r = await api.get(`/api/workflows/${wf}/jobs/${job}/logs`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/**
 * The log as [stream, line] pairs. The worker merges consecutive lines of one stream into one chunk
 * per push, so chunk boundaries depend on timing; the lines, their streams and their order do not.
 * Checks on the way that sequences count up from 0 and that no chunk ends mid-line.
 */
function lines(chunks: any[]): [string, string][] {
  chunks.forEach((c, i) => assert.equal(c.sequence, i, `chunk ${i} has sequence ${c.sequence}`));
  const out: [string, string][] = [];
  for (const c of chunks) {
    assert.ok(c.data.endsWith('\n'), `chunk ${c.sequence} ends mid-line: ${JSON.stringify(c.data)}`);
    for (const line of c.data.slice(0, -1).split('\n')) out.push([c.stream, line]);
  }
  return out;
}

const stdoutText = (chunks: any[]) => lines(chunks).map(([, l]) => l);


// --------------------------------------------------------------------------------------- the tests

test('outputs flow downstream through UPSTREAM_* and WEFT_UPSTREAM_OUTPUTS; WEFT_* and job env are set', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url);
  await createAndRun(api, {
    id: 'flow',
    env: { GREETING: 'hi', MODE: 'wf' },
    jobs: {
      'build-x': { run: 'echo "::set-output version=1.2.3"; echo "::set-output file.name=a b=c"; echo built' },
      test: {
        needs: 'build-x',
        env: { MODE: 'job' },
        run: [
          'echo "v=$UPSTREAM_BUILD_X_VERSION"',
          'echo "f=$UPSTREAM_BUILD_X_FILE_NAME"',
          'echo "json=$WEFT_UPSTREAM_OUTPUTS"',
          'echo "ids=$WEFT_WORKFLOW_ID/$WEFT_JOB_ID/$WEFT_RUN/$WEFT_ATTEMPT"',
          'echo "env=$GREETING/$MODE"',
          'echo "::set-output seen=$UPSTREAM_BUILD_X_VERSION"',
        ].join('; '),
      },
    },
  });
  const doc = await api.settled('flow');
  assert.equal(doc.status, 'success', JSON.stringify(doc.jobs));
  assert.deepEqual(jobOf(doc, 'build-x').outputs, { version: '1.2.3', 'file.name': 'a b=c' });
  assert.deepEqual(jobOf(doc, 'test').outputs, { seen: '1.2.3' });
  assert.deepEqual(stdoutText(await logs(api, 'flow', 'test')), [
    'v=1.2.3',
    'f=a b=c',
    `json=${JSON.stringify({ 'build-x': { version: '1.2.3', 'file.name': 'a b=c' } })}`,
    'ids=flow/test/1/0',
    'env=hi/job',
    '::set-output seen=1.2.3',
  ]);
  // The ::set-output line is logged as well.
  assert.ok(stdoutText(await logs(api, 'flow', 'build-x')).includes('::set-output version=1.2.3'));
});

test('stdout and stderr lines arrive as ordered chunks with their stream', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url);
  // Two pipes have no order between them: the sleeps give the lines one.
  const script = ['echo out-1', 'sleep 0.05', 'echo err-1 >&2', 'sleep 0.05', 'echo out-2', 'sleep 0.05', 'echo err-2 >&2', 'sleep 0.05', 'printf "out-3\\nout-4"'];
  await createAndRun(api, { id: 'streams', jobs: { j: { run: script.join('; ') } } });
  const doc = await api.settled('streams');
  assert.equal(doc.status, 'success', JSON.stringify(doc.jobs));
  const chunks = await logs(api, 'streams', 'j');
  assert.deepEqual(lines(chunks), [
    ['stdout', 'out-1'],
    ['stderr', 'err-1'],
    ['stdout', 'out-2'],
    ['stderr', 'err-2'],
    ['stdout', 'out-3'],
    ['stdout', 'out-4'],
  ]);
  // A change of stream starts a new chunk; lines of one stream that go out together share one.
  assert.ok(chunks.length >= 5 && chunks.length <= 6, `${chunks.length} chunks`);
  for (const c of chunks) assert.ok(c.timestamp_ms > 0 && c.attempt === 0);
});

test('a failing command is retried, then failed with the exit code and stderr tail; downstream is skipped', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url);
  await createAndRun(api, {
    id: 'fails',
    jobs: {
      flaky: { retries: 1, run: 'echo working; sleep 0.05; echo "first line" >&2; echo "boom at attempt $WEFT_ATTEMPT" >&2; exit 7' },
      after: { needs: 'flaky', run: 'echo never' },
    },
  });
  const doc = await api.settled('fails');
  assert.equal(doc.status, 'failed');
  const flaky = jobOf(doc, 'flaky');
  assert.equal(flaky.state, 'failed');
  assert.equal(flaky.attempt, 1, 'one retry was used');
  assert.match(flaky.error, /exit(ed with)? code 7/);
  assert.ok(flaky.error.endsWith('first line\nboom at attempt 1'), flaky.error);
  assert.equal(jobOf(doc, 'after').state, 'skipped');
  // Each attempt's logs start at sequence 0.
  const attempt0 = await api.get('/api/workflows/fails/jobs/flaky/logs?attempt=0');
  assert.equal(attempt0.body[0].sequence, 0);
  assert.deepEqual(lines(attempt0.body), [
    ['stdout', 'working'],
    ['stderr', 'first line'],
    ['stderr', 'boom at attempt 0'],
  ]);

  // More than 10 KB of stderr: the error stays within 4096 characters and still ends with the tail.
  await createAndRun(api, {
    id: 'noisy',
    jobs: { j: { run: 'i=0; while [ $i -lt 400 ]; do echo "noise line $i ................................" >&2; i=$((i+1)); done; echo LAST-WORDS >&2; exit 3' } },
  });
  const noisy = jobOf(await api.settled('noisy'), 'j');
  assert.equal(noisy.state, 'failed');
  assert.ok(noisy.error.length <= 4096, `error is ${noisy.error.length} characters`);
  assert.ok(noisy.error.length > 3000, 'the tail fills the room it has');
  assert.match(noisy.error, /^command exited with code 3/);
  assert.ok(noisy.error.endsWith('LAST-WORDS'), noisy.error.slice(-100));
});

test('cancel kills the whole process tree within seconds; the worker then claims the next job', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const w = await worker(t, sb, srv.url);
  const pidFile = path.join(sb.dir, 'pids');
  await createAndRun(api, {
    id: 'long',
    jobs: {
      j: { run: `sleep 300 & echo $! >> ${pidFile}; (sleep 300; echo never) & echo $! >> ${pidFile}; echo $$ >> ${pidFile}; echo started; wait` },
    },
  });
  const pids = await until(
    () => {
      const text = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : '';
      const list = text.split('\n').filter(Boolean).map(Number);
      return list.length === 3 ? list : null;
    },
    'the job to write its pids',
    10_000,
  );
  assert.ok(pids.every(alive), 'the job is running');
  const r = await api.post('/api/workflows/long/cancel');
  assert.equal(r.status, 202);
  // The processes sleep for 300 s: gone well before that means the worker killed them.
  await until(() => pids.every((p) => !alive(p)), 'every process of the job to be gone', 60_000, 50);
  const doc = await api.status('long');
  assert.equal(jobOf(doc, 'j').state, 'cancelled');
  // The worker's log says plainly how the job ended.
  await w.waitFor(/job cancelled after \d+\.\d s; handler stopped; nothing reported/, 5000);

  await createAndRun(api, { id: 'next', jobs: { j: { run: 'echo "::set-output ok=yes"' } } });
  const next = await api.settled('next');
  assert.equal(next.status, 'success');
  assert.deepEqual(jobOf(next, 'j').outputs, { ok: 'yes' });
  // Nothing was reported for the cancelled job after the cancel.
  assert.equal(jobOf(await api.status('long'), 'j').state, 'cancelled');
});

test('labels route each job to the worker that has them', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url, { WORKER_ID: 'w-gpu', WORKER_LABELS: 'gpu, linux' });
  await worker(t, sb, srv.url, { WORKER_ID: 'w-arm', WORKER_LABELS: 'arm,linux' });
  await createAndRun(api, {
    id: 'routed',
    jobs: {
      g1: { labels: ['gpu'], run: 'echo "::set-output host=$WEFT_JOB_ID"' },
      g2: { labels: ['gpu', 'linux'], run: 'true' },
      a1: { labels: ['arm'], run: 'true' },
      a2: { labels: ['arm', 'linux'], run: 'true' },
    },
  });
  const doc = await api.settled('routed');
  assert.equal(doc.status, 'success');
  assert.equal(jobOf(doc, 'g1').worker_id, 'w-gpu');
  assert.equal(jobOf(doc, 'g2').worker_id, 'w-gpu');
  assert.equal(jobOf(doc, 'a1').worker_id, 'w-arm');
  assert.equal(jobOf(doc, 'a2').worker_id, 'w-arm');
  const workers = (await api.get('/api/workers')).body as any[];
  assert.deepEqual(workers.find((w) => w.worker_id === 'w-gpu')?.labels, ['gpu', 'linux']);
});

test('heartbeats keep a job that outlives its lease TTL from being re-run', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb, { REAP_INTERVAL_SECS: '0.2' });
  const api = client(srv.url);
  await worker(t, sb, srv.url, { LEASE_TTL_SECS: '2' });
  await createAndRun(api, { id: 'slow', jobs: { j: { retries: 3, run: 'echo start; sleep 5; echo done' } } });
  const doc = await api.settled('slow', 20_000);
  const j = jobOf(doc, 'j');
  assert.equal(j.state, 'success');
  assert.equal(j.attempt, 0, 'never re-queued');
  assert.equal(j.error, null);
  assert.ok(j.duration_secs >= 4.5, `ran ${j.duration_secs}s`);
  assert.deepEqual(stdoutText(await logs(api, 'slow', 'j')), ['start', 'done']);
});

test('SIGTERM: the running job finishes and is reported, nothing new is claimed, exit 0', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const w = await worker(t, sb, srv.url);
  await createAndRun(api, {
    id: 'drain',
    jobs: { first: { run: 'sleep 2; echo "::set-output finished=yes"' }, second: { needs: 'first', run: 'true' } },
  });
  await until(async () => jobOf(await api.status('drain'), 'first').state === 'running', 'the job to run');
  w.kill('SIGTERM');
  assert.equal(await w.exited, 0, w.output());
  const doc = await api.status('drain');
  assert.equal(jobOf(doc, 'first').state, 'success');
  assert.deepEqual(jobOf(doc, 'first').outputs, { finished: 'yes' });
  // The job it unblocked was not taken: the worker had stopped claiming.
  assert.equal(jobOf(doc, 'second').state, 'queued');
});

test('a second SIGTERM aborts the running job: its processes are killed and the job is handed back', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const w = await worker(t, sb, srv.url);
  const pidFile = path.join(sb.dir, 'pid');
  await createAndRun(api, { id: 'abort', jobs: { j: { retries: 1, run: `sleep 300 & echo $! > ${pidFile}; wait` } } });
  const pid = await until(() => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) || null : null), 'the job to start');
  w.kill('SIGTERM');
  await w.waitFor(/waiting for running jobs to finish/);
  assert.ok(alive(pid), 'the first signal lets the job run on');
  w.kill('SIGTERM');
  assert.equal(await w.exited, 143, w.output());
  await until(() => !alive(pid), 'the job process to be killed', 8000, 50);
  const j = jobOf(await api.status('abort'), 'j');
  assert.equal(j.state, 'queued', 'handed back for a retry at once');
  assert.equal(j.attempt, 1);
  assert.match(j.error, /shut down/);
  assert.match(w.output(), /job aborted by shutdown after \d+\.\d s; handler stopped; failure reported \(job queued\)/);
});

test('a third signal exits at once, and the job\'s processes do not outlive the worker', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  // SIGKILL would come only after a minute; the job shrugs off SIGTERM.
  const w = await worker(t, sb, srv.url, { KILL_GRACE_SECS: '60' });
  const pidFile = path.join(sb.dir, 'pid');
  await createAndRun(api, { id: 'stubborn', jobs: { j: { run: `trap "" TERM; sleep 300 & echo $! > ${pidFile}; wait` } } });
  const pid = await until(() => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) || null : null), 'the job to start');
  t.after(() => {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  w.kill('SIGTERM');
  await w.waitFor(/waiting for running jobs to finish/);
  w.kill('SIGTERM');
  await w.waitFor(/killing the process group/);
  assert.ok(alive(pid), 'the job ignores SIGTERM');
  w.kill('SIGTERM');
  assert.equal(await w.exited, 143, w.output());
  await until(() => !alive(pid), 'the job\'s process to be killed with the worker', 3000, 20);
});

test('`weft worker --help` lists every setting; HEARTBEAT_SECS above half the ttl is warned about', async (t) => {
  const sb = sandbox(t);
  const help = track(t, spawnWeft(['worker', '--help'], WORKER_DEFAULTS, sb.dir));
  assert.equal(await help.exited, 0, help.output());
  for (const name of ['SERVER_URL', 'WORKER_LABELS', 'WORKER_ID', 'LEASE_TTL_SECS', 'HEARTBEAT_SECS', 'POLL_SECS', 'CONCURRENCY', 'CANCEL_POLL_SECS', 'KILL_GRACE_SECS', 'LOG_LEVEL']) {
    assert.match(help.output(), new RegExp(`^\\s+${name}\\s`, 'm'), `--help lists ${name}`);
  }

  const w = track(
    t,
    spawnWeft(['worker'], { ...WORKER_DEFAULTS, SERVER_URL: 'http://127.0.0.1:9', LEASE_TTL_SECS: '10', HEARTBEAT_SECS: '6' }, sb.dir),
  );
  await w.waitFor(/HEARTBEAT_SECS \(6\) is above half of LEASE_TTL_SECS \(10\)/);
  const quiet = track(t, spawnWeft(['worker'], { ...WORKER_DEFAULTS, SERVER_URL: 'http://127.0.0.1:9', LEASE_TTL_SECS: '10', HEARTBEAT_SECS: '5' }, sb.dir));
  // Logged after the start line, where the warning would be.
  await quiet.waitFor(/could not register with the server/);
  assert.doesNotMatch(quiet.output(), /HEARTBEAT_SECS/);
});

test('the worker survives a server restart on the same port and database', async (t) => {
  const sb = sandbox(t);
  const first = await server(t, sb);
  const api = client(first.url);
  const w = await worker(t, sb, first.url);
  await createAndRun(api, { id: 'before', jobs: { j: { run: 'true' } } });
  assert.equal((await api.settled('before')).status, 'success');
  // The job is settled once its report is durable, a moment before the answer reaches the worker;
  // kill only after the worker has its answer, so that what follows is its claim loop, not a report
  // still being retried.
  await w.waitFor(/job succeeded after .*; reported/, 10_000);

  first.kill('SIGKILL');
  await first.exited;
  // Claims fail while the server is away; the worker keeps trying.
  await w.waitFor(/claim failed; retrying/, 10_000);
  const second = await server(t, sb, { PORT: String(first.port) });
  assert.equal(second.port, first.port, 'the restarted server must get the same port');
  await createAndRun(api, { id: 'after', jobs: { j: { run: 'echo "::set-output again=1"' } } });
  const doc = await api.settled('after', 20_000);
  assert.equal(doc.status, 'success');
  assert.deepEqual(jobOf(doc, 'j').outputs, { again: '1' });
  assert.equal(w.proc.exitCode, null, 'the worker is still running');
});

test('CONCURRENCY=3 runs three jobs at once', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await worker(t, sb, srv.url, { CONCURRENCY: '3' });
  const file = path.join(sb.dir, 'times');
  const run = `echo "$WEFT_JOB_ID start $(date +%s%N)" >> ${file}; sleep 1.5; echo "$WEFT_JOB_ID end $(date +%s%N)" >> ${file}`;
  await createAndRun(api, { id: 'wide', jobs: { a: { run }, b: { run }, c: { run } } });
  const doc = await api.settled('wide');
  assert.equal(doc.status, 'success');
  const events = fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(' '));
  const starts = events.filter((e) => e[1] === 'start').map((e) => BigInt(e[2]!));
  const ends = events.filter((e) => e[1] === 'end').map((e) => BigInt(e[2]!));
  assert.equal(starts.length, 3);
  assert.equal(ends.length, 3);
  const lastStart = starts.reduce((a, b) => (a > b ? a : b));
  const firstEnd = ends.reduce((a, b) => (a < b ? a : b));
  assert.ok(lastStart < firstEnd, 'all three intervals overlap');
  assert.equal(new Set(doc.jobs.map((j: any) => j.worker_id)).size, 1, 'one worker ran them all');
});

test('a bad setting exits 2 with a message naming the variable', async (t) => {
  const sb = sandbox(t);
  const cases: [Record<string, string>, RegExp][] = [
    [{ CONCURRENCY: '0' }, /CONCURRENCY/],
    [{ LEASE_TTL_SECS: 'abc' }, /LEASE_TTL_SECS/],
    [{ LEASE_TTL_SECS: '30', HEARTBEAT_SECS: '30' }, /HEARTBEAT_SECS/],
    [{ POLL_SECS: '-1' }, /POLL_SECS/],
    [{ SERVER_URL: 'ftp://example' }, /SERVER_URL/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
  ];
  await Promise.all(
    cases.map(async ([env, re]) => {
      const p = track(t, spawnWeft(['worker'], { ...WORKER_DEFAULTS, SERVER_URL: 'http://127.0.0.1:9', ...env }, sb.dir));
      assert.equal(await p.exited, 2, `${JSON.stringify(env)}: ${p.output()}`);
      assert.match(p.output(), re);
    }),
  );
});

test('examples/python-worker runs a job through to success with an output', { skip: !hasPython && 'python3 not found' }, async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  const py = spawnPythonWorker(t, { SERVER_URL: srv.url, WORKER_ID: 'py-1', WORKER_LABELS: 'python', POLL_SECS: '0.2' }, sb.dir);
  await createAndRun(api, {
    id: 'py',
    jobs: {
      a: { labels: ['python'], run: 'echo hello from $WEFT_JOB_ID; sleep 0.1; echo warn >&2; sleep 0.1; echo "::set-output answer=42"' },
      b: { needs: 'a', labels: ['python'], run: 'echo "::set-output doubled=$((UPSTREAM_A_ANSWER * 2))"' },
      c: { needs: 'b', labels: ['python'], retries: 0, run: 'echo bad >&2; exit 4' },
    },
  });
  const doc = await api.settled('py', 20_000).catch((err) => {
    throw new Error(`${err.message}\npython worker output:\n${py.output()}`);
  });
  assert.equal(jobOf(doc, 'a').state, 'success', py.output());
  assert.deepEqual(jobOf(doc, 'a').outputs, { answer: '42' });
  assert.deepEqual(jobOf(doc, 'b').outputs, { doubled: '84' });
  assert.equal(jobOf(doc, 'a').worker_id, 'py-1');
  const c = jobOf(doc, 'c');
  assert.equal(c.state, 'failed');
  assert.match(c.error, /exit(ed with)? code 4/);
  assert.ok(c.error.endsWith('bad'), c.error);
  const chunks = await logs(api, 'py', 'a');
  assert.deepEqual(
    chunks.map((ch) => [ch.sequence, ch.stream, ch.data]),
    [
      [0, 'stdout', 'hello from a\n'],
      [1, 'stderr', 'warn\n'],
      [2, 'stdout', '::set-output answer=42\n'],
    ],
  );
  const workers = (await request('GET', `${srv.url}/api/workers`)).body as any[];
  assert.deepEqual(workers.find((w) => w.worker_id === 'py-1')?.labels, ['python']);
});
