/**
 * The client commands of `bin/weft` (validate, apply, run, status, logs, workers) as real processes
 * against a spawned server. The test itself plays the worker over HTTP (claim, logs, complete, fail).
 * Needs `npm run build` first (bin/weft runs dist/).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { until } from '../helpers/http.js';
import { fileServer, runCli, startCli, type Finished } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

const server = fileServer('weft-cli-');

/** Starts `weft <args>` against the shared server (or `env`), collecting stdout and stderr apart. */
function start(t: TestContext, args: string[], env: Record<string, string | undefined> = {}) {
  return startCli(t, server, args, env);
}

/** Runs `weft <args>` to completion. */
function weft(t: TestContext, args: string[], env: Record<string, string | undefined> = {}): Promise<Finished> {
  return runCli(t, server, args, env);
}

/** Writes `name` into a fresh directory of the test and returns its path. */
function file(t: TestContext, name: string, text: string): string {
  const d = tempDir('weft-cli-files-');
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  const p = path.join(d, name);
  fs.writeFileSync(p, text);
  return p;
}

let counter = 0;
/** A unique workflow id per test, so tests share the server without sharing state. */
const uniqueId = (stem: string) => `${stem}-${++counter}`;

const TWO_JOBS = `name: Two jobs
jobs:
  a:
    run: echo a
  b:
    needs: a
    run: echo b
`;

/**
 * Creates a workflow for one test. Tests share the server and a claim takes the oldest job that fits,
 * so each test cancels its runs when it ends: nothing it leaves behind can be claimed by the next.
 */
async function createWorkflow(t: TestContext, id: string, jobs: Record<string, unknown>): Promise<void> {
  await server.api.createWorkflow({ id, jobs });
  t.after(async () => {
    await server.api.post(`/api/workflows/${id}/cancel`);
  });
}

/** Claims the next job (waiting for one to become claimable) and checks it is `jobId` of `wf`. */
async function claim(wf: string, jobId: string, worker = 'cli-test-worker') {
  const c = await until(() => server.api.claim(worker, [], 30), `a claimable job (${wf}/${jobId})`);
  assert.equal(c.job.workflow_id, wf);
  assert.equal(c.job.job_id, jobId);
  return c.lease.lease_id as string;
}

async function pushLog(lease: string, sequence: number, data: string, stream: 'stdout' | 'stderr' = 'stdout') {
  const r = await server.api.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence, data, stream }] });
  assert.equal(r.status, 200, r.text);
}

async function complete(lease: string) {
  const r = await server.api.post(`/api/jobs/${lease}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

async function fail(lease: string, error: string, retryable: boolean) {
  const r = await server.api.post(`/api/jobs/${lease}/fail`, { error, retryable });
  assert.equal(r.status, 200, r.text);
}

/**
 * An HTTP proxy in front of the shared server, standing in for a load balancer: it can hold requests
 * (until `pass()`), or answer every request with an HTML 502 as a proxy does while the server behind it
 * restarts (open connections are cut, so a log stream has to reconnect through it).
 */
async function proxy(t: TestContext) {
  let mode: 'pass' | 'hold' | 'down' = 'pass';
  let holdIf: (req: http.IncomingMessage) => boolean = () => true;
  const held: (() => void)[] = [];
  /** Requests held, and 502s answered to log streams and to other requests (status polls, PUTs). */
  const stats = { held: 0, streams502: 0, others502: 0 };
  const srv = http.createServer((req, res) => {
    const forward = () => {
      const up = http.request(server.url + req.url!, { method: req.method, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.statusMessage, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    };
    if (mode === 'down') {
      if (/\/logs\/stream$/.test(req.url ?? '')) stats.streams502++;
      else stats.others502++;
      res.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' });
      res.end('<html><body>502 Bad Gateway</body></html>');
    } else if (mode === 'hold' && holdIf(req)) {
      stats.held++;
      held.push(forward);
    } else forward();
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    srv.closeAllConnections();
    await new Promise((resolve) => srv.close(resolve));
  });
  return {
    url: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`,
    stats,
    hold(pred: (req: http.IncomingMessage) => boolean) {
      holdIf = pred;
      mode = 'hold';
    },
    down() {
      mode = 'down';
      srv.closeAllConnections();
    },
    pass() {
      mode = 'pass';
      for (const f of held.splice(0)) f();
    },
  };
}

/** The status polls of `weft run --follow`. */
/** `weft run --follow` polls its run's document (`/runs/{n}`); other commands read `/status`. */
const isStatusPoll = (req: http.IncomingMessage) => req.method === 'GET' && /\/(status|runs\/\d+)$/.test(req.url ?? '');

/** Index of the line `line` in `text`, checking it occurs exactly once. */
function onceAt(text: string, line: string): number {
  const all = text.split('\n');
  const at = all.indexOf(line);
  assert.notEqual(at, -1, `missing line ${JSON.stringify(line)} in:\n${text}`);
  assert.equal(all.lastIndexOf(line), at, `line ${JSON.stringify(line)} printed more than once in:\n${text}`);
  return at;
}

// ------------------------------------------------------------------------------------------ validate

test('validate: a good file exits 0 and names its job count', async (t) => {
  const good = file(t, 'pipeline.yml', TWO_JOBS);
  const json = file(t, 'single.json', JSON.stringify({ jobs: { only: { run: 'true' } } }));
  const r = await weft(t, ['validate', good, json], { SERVER_URL: 'http://127.0.0.1:9' });
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, new RegExp(`^ok ${escape(good)} \\(2 jobs\\)$`, 'm'));
  assert.match(r.stdout, new RegExp(`^ok ${escape(json)} \\(1 job\\)$`, 'm'));

  // One file named twice (a relative path from weft's working directory, and its directory) is no id clash.
  const twice = await weft(t, ['validate', path.relative(server.dir, good), path.dirname(good)]);
  assert.equal(twice.code, 0, twice.output);
});

test('validate: broken files exit 1 naming file, job and field; a missing file is an error', async (t) => {
  const unknownNeeds = file(t, 'unknown.yml', 'jobs:\n  a:\n    run: x\n    needs: [ghost]\n');
  const cycle = file(t, 'cycle.yaml', 'jobs:\n  a:\n    run: x\n    needs: b\n  b:\n    run: y\n    needs: a\n');
  const typo = file(t, 'typo.yml', 'jobs:\n  a:\n    run: x\n  b:\n    run: y\n    need: a\n');
  const good = file(t, 'fine.yml', TWO_JOBS);
  const missing = path.join(server.dir, 'does-not-exist.yml');
  const r = await weft(t, ['validate', unknownNeeds, cycle, typo, good, missing]);
  assert.equal(r.code, 1, r.output);
  assert.match(r.output, new RegExp(`${escape(unknownNeeds)}: job 'a', field 'needs': .*ghost`));
  assert.match(r.output, new RegExp(`${escape(cycle)}: job '[ab]', field 'needs': .*cycle`));
  assert.match(r.output, new RegExp(`${escape(typo)}: job 'b', field 'need': .*needs`));
  assert.match(r.output, new RegExp(`ok ${escape(good)} \\(2 jobs\\)`));
  assert.match(r.output, new RegExp(`${escape(missing)}: .*no such file`));

  const onlyMissing = await weft(t, ['validate', missing]);
  assert.equal(onlyMissing.code, 1);
  assert.match(onlyMissing.output, /does-not-exist\.yml/);
});

// ------------------------------------------------------------------------------------------ apply, status

test('apply: created, then updated in place, then status shows it; an invalid file sends nothing', async (t) => {
  const id = uniqueId('applied');
  const f = file(t, `${id}.yml`, TWO_JOBS);
  const first = await weft(t, ['apply', f]);
  assert.equal(first.code, 0, first.output);
  assert.equal(first.stdout.trim(), `created ${id}`);

  fs.writeFileSync(f, `${TWO_JOBS}  c:\n    needs: [a, b]\n    run: echo c\n`);
  const second = await weft(t, ['apply', f]);
  assert.equal(second.code, 0, second.output);
  assert.equal(second.stdout.trim(), `updated ${id}`);

  // The same definition again, even spelt differently, changes nothing and says so.
  fs.appendFileSync(f, '# a comment\n');
  const again = await weft(t, ['apply', f]);
  assert.equal(again.code, 0, again.output);
  assert.equal(again.stdout.trim(), `unchanged ${id}`);
  const other = uniqueId('applied');
  const both = await weft(t, ['apply', f, file(t, `${other}.yml`, TWO_JOBS)]);
  assert.equal(both.code, 0, both.output);
  assert.deepEqual(both.stdout.trim().split('\n'), [`unchanged ${id}`, `created ${other}`]);
  // The HTTP answer says it too, beside the status document (docs/server.api.md).
  const same = await server.api.put(`/api/workflows/${other}`, { name: 'Two jobs', jobs: { a: { run: 'echo a' }, b: { needs: 'a', run: 'echo b' } } });
  assert.equal(same.status, 200, same.text);
  assert.equal(same.body.outcome, 'unchanged');
  assert.equal(same.body.id, other);
  const changed = await server.api.put(`/api/workflows/${other}`, { name: 'Two jobs', jobs: { a: { run: 'echo A' } } });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.outcome, 'updated');

  const status = await weft(t, ['status', id]);
  assert.equal(status.code, 0, status.output);
  assert.match(status.stdout, new RegExp(`workflow ${id} \\(Two jobs\\): idle, never run`));
  assert.match(status.stdout, /^JOB\s+STATUS\s+ATTEMPT\s+DURATION\s+WORKER\s+ERROR$/m);
  for (const job of ['a', 'b', 'c']) assert.match(status.stdout, new RegExp(`^${job}\\s+pending\\b`, 'm'));

  const badId = uniqueId('never');
  const bad = file(t, `${badId}.yml`, 'jobs:\n  a:\n    run: x\n    needs: nope\n');
  const refused = await weft(t, ['apply', bad]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /job 'a', field 'needs'/);
  assert.equal((await server.api.get(`/api/workflows/${badId}/status`)).status, 404);
});

test('apply against a server whose PUT answer has no `outcome`: created and updated come from 201 and 200', async (t) => {
  const seen: string[] = [];
  const old = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(seen.length === 1 ? 201 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'old', name: 'old', trigger: '', jobs: [] }));
  });
  await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => old.close(resolve)));
  const f = file(t, 'old.yml', TWO_JOBS);
  const env = { SERVER_URL: `http://127.0.0.1:${(old.address() as net.AddressInfo).port}` };
  assert.equal((await weft(t, ['apply', f], env)).stdout.trim(), 'created old');
  assert.equal((await weft(t, ['apply', f], env)).stdout.trim(), 'updated old');
  assert.deepEqual(seen, ['PUT /api/workflows/old', 'PUT /api/workflows/old']);
});

test('apply: one id in two directories is refused before anything is sent; a file named twice is applied once', async (t) => {
  const id = uniqueId('dup');
  const a = file(t, `${id}.yml`, TWO_JOBS);
  const b = file(t, `${id}.yml`, 'jobs:\n  other:\n    run: echo other\n');
  assert.notEqual(path.dirname(a), path.dirname(b));
  const r = await weft(t, ['apply', a, b]);
  assert.equal(r.code, 1, r.output);
  assert.equal(r.stdout, '', 'nothing created or updated');
  assert.match(r.stderr, new RegExp(`^${escape(b)}: workflow id '${id}' is also given by ${escape(a)}`, 'm'));
  assert.match(r.stderr, /^weft: nothing applied/m);
  assert.equal((await server.api.get(`/api/workflows/${id}/status`)).status, 404);

  // The same file, once by a relative path (weft runs in `server.dir`) and once through its directory.
  const twice = await weft(t, ['apply', path.relative(server.dir, a), path.dirname(a)]);
  assert.equal(twice.code, 0, twice.output);
  assert.equal(twice.stdout, `created ${id}\n`);
});

test("apply: a PUT the server refuses is reported with the file's name", async (t) => {
  const p = await proxy(t);
  p.down();
  const id = uniqueId('put-fails');
  const f = file(t, `${id}.yml`, TWO_JOBS);
  const r = await weft(t, ['apply', f], { SERVER_URL: p.url });
  assert.equal(r.code, 1, r.output);
  assert.match(r.stderr, new RegExp(`^weft: ${escape(f)}: 502 Bad Gateway: `, 'm'));
});

// ------------------------------------------------------------------------------------------ run

test('run prints the run number; a second run while active is a 409', async (t) => {
  const id = uniqueId('runner');
  await createWorkflow(t, id, { only: { run: 'true' } });
  const r = await weft(t, ['run', id]);
  assert.equal(r.code, 0, r.output);
  assert.equal(r.stdout.trim(), `started run 1 of ${id}`);
  assert.equal((await server.api.status(id)).run_number, 1);

  const again = await weft(t, ['run', id]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /^weft: 409 Conflict: /);
});

test('run --follow streams logs and job states and exits 0 when every job succeeds', async (t) => {
  const id = uniqueId('follow-ok');
  await createWorkflow(t, id, { a: { run: 'echo a' }, b: { run: 'echo b', needs: ['a'] } });
  const p = start(t, ['run', id, '--follow']);
  await p.waitFor(/started run 1 of/);

  const leaseA = await claim(id, 'a');
  await pushLog(leaseA, 0, 'hello from a\n');
  // Shown while the job is still running: the log is streamed live, not fetched at the end.
  await p.waitFor(/^a \| hello from a$/m);
  await pushLog(leaseA, 1, 'a to stderr\n', 'stderr');
  await p.waitFor(/^a \| a to stderr$/m);
  await complete(leaseA);

  const leaseB = await claim(id, 'b');
  await pushLog(leaseB, 0, 'b says hi\n');
  await complete(leaseB);

  const r = await p.finished;
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, /^b \| b says hi$/m);
  assert.match(r.stderr, /^a \| a to stderr$/m, 'stderr chunks go to stderr');
  // Tries are counted from 1, of how many the job may have: no retries makes `1/1`.
  assert.match(r.stdout, /^a\s+running\s+attempt 1\/1\b/m);
  assert.match(r.stdout, /^b\s+success\s+attempt 1\/1\b/m);
  assert.match(r.stdout, new RegExp(`^run 1 of ${id}: success`, 'm'));
  assert.doesNotMatch(r.stdout, /\x1b\[/, 'no ANSI codes when stdout is not a terminal');
});

test('run --follow exits 1 when a job fails for good', async (t) => {
  const id = uniqueId('follow-fail');
  await createWorkflow(t, id, { a: { run: 'false' }, b: { run: 'echo b', needs: 'a' } });
  const p = start(t, ['run', id, '--follow']);
  await p.waitFor(/started run 1 of/);
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'about to fail\n');
  const r1 = await server.api.post(`/api/jobs/${lease}/fail`, { error: 'exit code 1: boom', retryable: false });
  assert.equal(r1.status, 200, r1.text);

  const r = await p.finished;
  assert.equal(r.code, 1, r.output);
  assert.match(r.stdout, /^a \| about to fail$/m);
  assert.match(r.stdout, /^a\s+failed\s+attempt 1\/1\s.*exit code 1: boom/m);
  assert.match(r.stdout, /^b\s+skipped/m);
  assert.match(r.stdout, new RegExp(`^run 1 of ${id}: failed`, 'm'));
});

test('run --follow on a run cancelled meanwhile prints the job\'s last lines, those the worker sends after the cancel too, and exits 1', async (t) => {
  const id = uniqueId('follow-cancel');
  await createWorkflow(t, id, { a: { run: 'echo one; echo two; sleep 30' }, b: { run: 'echo b', needs: 'a' } });
  const p = start(t, ['run', id, '--follow']);
  await p.waitFor(/started run 1 of/);
  // The test is the worker: the job prints two lines, then sleeps.
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'one\ntwo\n');
  await p.waitFor(/^a \| two$/m);
  const cancel = await server.api.post(`/api/workflows/${id}/cancel`);
  assert.equal(cancel.status, 202, cancel.text);
  await p.waitFor(/^a\s+cancelled/m);
  // A worker learns of the cancel at its next heartbeat and stops the job; what the job said until then
  // (here, to its SIGTERM) is still stored (docs/server.api.md), after the server has ended the log stream.
  await pushLog(lease, 1, 'stopping on SIGTERM\n');

  const r = await p.finished;
  assert.equal(r.code, 1, r.output);
  const order = ['a | one', 'a | two', 'a | stopping on SIGTERM', `run 1 of ${id}: cancelled`].map((l) => r.stdout.split('\n').findIndex((x) => x.startsWith(l)));
  assert.ok(order.every((i) => i >= 0), r.stdout);
  assert.deepEqual([...order].sort((x, y) => x - y), order, `out of order:\n${r.stdout}`);
  assert.match(r.stdout, /^b\s+cancelled/m);
});

test('run --follow shows every attempt once, even those that came and went between two polls', async (t) => {
  const id = uniqueId('follow-retries');
  await createWorkflow(t, id, { a: { run: 'x', retries: 2 } });
  const p = await proxy(t);
  // The first status poll after the start is held until the job is on its third try and has logged:
  // the server's log stream then starts at that attempt, so the first two must be fetched.
  p.hold(isStatusPoll);
  const f = start(t, ['run', id, '--follow'], { SERVER_URL: p.url });
  await f.waitFor(/started run 1 of/);
  await until(() => p.stats.held > 0, 'the first status poll');
  const error = (n: number) => `command exited with code 1; stderr:\nsetup ok\ntest_fetch_remote FAILED: try ${n} timed out\n`;
  for (const n of [0, 1]) {
    const lease = await claim(id, 'a');
    await pushLog(lease, 0, `try ${n}\n`);
    await fail(lease, error(n), true);
  }
  const last = await claim(id, 'a');
  await pushLog(last, 0, 'try 2\n');
  p.pass();
  await f.waitFor(/^a \| try 2$/m);
  await fail(last, error(2), true);

  const r = await f.finished;
  assert.equal(r.code, 1, r.output);
  const order = ['a | try 0', 'a | --- attempt 2/3 ---', 'a | try 1', 'a | --- attempt 3/3 ---', 'a | try 2'].map((l) => onceAt(r.stdout, l));
  assert.deepEqual([...order].sort((x, y) => x - y), order, `attempts out of order:\n${r.stdout}`);
  // The error in one line: what failed and the last thing it said.
  assert.match(r.stdout, /^a\s+failed\s+attempt 3\/3\s.*\scommand exited with code 1: test_fetch_remote FAILED: try 2 timed out$/m);
});

test('run --follow shows each step of a steps: job as a heading, by name or by command', async (t) => {
  const id = uniqueId('follow-steps');
  await createWorkflow(t, id, { a: { steps: [{ name: 'Fetch deps', run: 'echo fetched' }, { run: 'echo built' }] } });
  const p = start(t, ['run', id, '--follow']);
  await p.waitFor(/started run 1 of/);
  const c = await until(() => server.api.claim('cli-test-worker', [], 30), 'the steps job');
  // The job's own command, run by sh as a worker would, prints the step lines itself.
  const ran = spawnSync('sh', ['-c', c.job.command], { encoding: 'utf8' });
  assert.equal(ran.status, 0, ran.stderr);
  await pushLog(c.lease.lease_id, 0, ran.stdout);
  await complete(c.lease.lease_id);

  const r = await p.finished;
  assert.equal(r.code, 0, r.output);
  const order = ['a | --- step 1/2: Fetch deps ---', 'a | fetched', 'a | --- step 2/2: echo built ---', 'a | built'].map((l) => onceAt(r.stdout, l));
  assert.deepEqual([...order].sort((x, y) => x - y), order, r.stdout);
});

test('run --follow shows why a retry is waiting while it waits', async (t) => {
  const id = uniqueId('follow-waiting');
  await createWorkflow(t, id, { a: { run: 'x', retries: 1, backoff: { fixed: { delay_secs: 60 } } } });
  const p = await proxy(t);
  // Held so that no poll sees the attempt running: the next one sees a queued retry that never ran.
  p.hold(isStatusPoll);
  const f = start(t, ['run', id, '--follow'], { SERVER_URL: p.url });
  await f.waitFor(/started run 1 of/);
  await until(() => p.stats.held > 0, 'the first status poll');
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'connecting to db\n');
  await pushLog(lease, 1, 'db unreachable\n', 'stderr');
  await fail(lease, 'command exited with code 1; stderr:\ndb unreachable\n', true);
  p.pass();
  await f.waitFor(/^a \| connecting to db$/m);
  await f.waitFor(/^a \| db unreachable$/m);
  // How long the backoff still holds it (60 s, less the moments the test took since the failure).
  await f.waitFor(/^a\s+queued\s+attempt 2\/2\s+retry in (5\d|60)s\s+command exited with code 1: db unreachable$/m);

  await server.api.post(`/api/workflows/${id}/cancel`);
  const r = await f.finished;
  assert.equal(r.code, 1, r.output);
  assert.match(r.stdout, new RegExp(`^run 1 of ${id}: cancelled`, 'm'));
});

// ------------------------------------------------------------------------------------------ status, logs

test('status: a table of the latest run, and --json prints the status document', async (t) => {
  const id = uniqueId('status');
  await createWorkflow(t, id, { a: { run: 'x' }, b: { run: 'y', needs: 'a', retries: 2 } });
  await server.api.run(id);
  const lease = await claim(id, 'a', 'status-worker');
  await complete(lease);
  const leaseB = await claim(id, 'b', 'status-worker');
  await server.api.post(`/api/jobs/${leaseB}/fail`, { error: 'flaky network\nmore detail', retryable: true });

  const r = await weft(t, ['status', id]);
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, new RegExp(`^workflow ${id}: running, run 1$`, 'm'));
  assert.match(r.stdout, /^a\s+success\s+1\/1\s+\d+\.\ds\s+status-worker\s*$/m);
  // The second of three tries waits; the error shows its first and last lines.
  assert.match(r.stdout, /^b\s+queued\s+2\/3\s.*\sflaky network: more detail$/m);

  const j = await weft(t, ['status', id, '--json']);
  assert.equal(j.code, 0, j.output);
  const doc = JSON.parse(j.stdout);
  assert.equal(doc.id, id);
  assert.equal(doc.run_number, 1);
  assert.deepEqual(
    doc.jobs.map((x: any) => [x.id, x.state, x.attempt]),
    [
      ['a', 'success', 0],
      ['b', 'queued', 1],
    ],
  );
});

test('logs: history (stderr chunks to stderr), --run and --attempt; --follow ends when the job ends', async (t) => {
  const id = uniqueId('logs');
  await createWorkflow(t, id, { a: { run: 'x', retries: 1 } });
  await server.api.run(id);
  const first = await claim(id, 'a');
  await pushLog(first, 0, 'attempt zero\n');
  await server.api.post(`/api/jobs/${first}/fail`, { error: 'try again', retryable: true });
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'line one\n');
  await pushLog(lease, 1, 'warning two\n', 'stderr');

  const hist = await weft(t, ['logs', id, 'a']);
  assert.equal(hist.code, 0, hist.output);
  assert.equal(hist.stdout, 'line one\n');
  assert.equal(hist.stderr, 'warning two\n');
  const older = await weft(t, ['logs', id, 'a', '--run', '1', '--attempt', '0']);
  assert.equal(older.stdout, 'attempt zero\n');

  const f = start(t, ['logs', id, 'a', '--follow']);
  await f.waitFor(/warning two/);
  await pushLog(lease, 2, 'line three\n');
  await f.waitFor(/line three/);
  assert.equal(f.proc.exitCode, null, 'still following while the job runs');
  await complete(lease);
  const r = await f.finished;
  assert.equal(r.code, 0, r.output);
  assert.equal(r.stdout, 'line one\nline three\n');
  assert.match(r.stderr, /warning two/);
});

test('logs: nothing to show is said on stderr (exit 0); an unknown job is still a 404', async (t) => {
  const id = uniqueId('logs-empty');
  await createWorkflow(t, id, { a: { run: 'x' } });
  const never = await weft(t, ['logs', id, 'a']);
  assert.equal(never.code, 0, never.output);
  assert.equal(never.stdout, '');
  assert.match(never.stderr, new RegExp(`^weft: no output for ${id}/a: the workflow has never run$`, 'm'));

  await server.api.run(id);
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'only line\n');
  const beyond = await weft(t, ['logs', id, 'a', '--attempt', '5']);
  assert.equal(beyond.code, 0, beyond.output);
  assert.equal(beyond.stdout, '');
  assert.match(beyond.stderr, new RegExp(`^weft: no output for ${id}/a attempt 5: its latest attempt is 0`, 'm'));
  const some = await weft(t, ['logs', id, 'a', '--attempt', '0']);
  assert.equal(some.stdout, 'only line\n');
  assert.equal(some.stderr, '');

  const unknown = await weft(t, ['logs', id, 'no-such-job']);
  assert.equal(unknown.code, 1, unknown.output);
  assert.match(unknown.stderr, /^weft: 404 Not Found: /m);

  const help = await weft(t, ['logs', '--help']);
  assert.match(help.stdout.replace(/\s+/g, ' '), /--attempt <n> attempt number as the server counts it, from 0/);
  await complete(lease);
});

// ------------------------------------------------------------------------------------------ workers

test('workers: a table of id, labels, status, current job and last seen; --json', async (t) => {
  const id = uniqueId('workers');
  await createWorkflow(t, id, { a: { run: 'x', labels: ['gpu'] } });
  const reg = await server.api.post('/api/workers/register', { worker_id: 'cli-gpu-box', labels: ['gpu', 'linux'] });
  assert.equal(reg.status, 200, reg.text);
  await server.api.run(id);
  const c = await until(() => server.api.claim('cli-gpu-box', ['gpu', 'linux'], 30), 'the gpu job');
  assert.equal(c.job.workflow_id, id);

  const r = await weft(t, ['workers']);
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, /^ID\s+LABELS\s+STATUS\s+CURRENT JOB\s+LAST SEEN$/m);
  assert.match(r.stdout, new RegExp(`^cli-gpu-box\\s+gpu,linux\\s+busy\\s+${id}/a \\(run 1\\)\\s+\\d+s ago$`, 'm'));

  const j = await weft(t, ['workers', '--json']);
  const list = JSON.parse(j.stdout) as any[];
  assert.ok(list.some((w) => w.worker_id === 'cli-gpu-box' && w.status === 'busy'));
  await complete(c.lease.lease_id);
});

// ------------------------------------------------------------------------------------------ errors

test('an unknown workflow or job exits 1 with the 404 and the server message', async (t) => {
  for (const args of [['status', 'no-such-wf'], ['run', 'no-such-wf'], ['logs', 'no-such-wf', 'a']]) {
    const r = await weft(t, args);
    assert.equal(r.code, 1, r.output);
    assert.match(r.stderr, /^weft: 404 Not Found: .*no-such-wf/m);
    assert.equal(r.stdout, '');
  }
});

test('following rides out 502s from a proxy like a network outage (logs --follow and run --follow)', async (t) => {
  const id = uniqueId('behind-proxy');
  await createWorkflow(t, id, { a: { run: 'x' } });
  const p = await proxy(t);
  const follow = start(t, ['run', id, '--follow'], { SERVER_URL: p.url });
  await follow.waitFor(/started run 1 of/);
  const lease = await claim(id, 'a');
  await pushLog(lease, 0, 'before\n');
  const logs = start(t, ['logs', id, 'a', '--follow'], { SERVER_URL: p.url });
  await logs.waitFor(/^before$/m);
  await follow.waitFor(/^a \| before$/m);

  p.down();
  // Each follower gets more than one 502 (two log streams, the status poll) and keeps waiting; a 502
  // used to end them at once.
  const bothGone = () => logs.proc.exitCode !== null && follow.proc.exitCode !== null;
  await until(() => (p.stats.streams502 >= 4 && p.stats.others502 >= 2) || bothGone(), 'repeated 502s');
  assert.equal(logs.proc.exitCode, null, `logs --follow gave up:\n${logs.output()}`);
  assert.equal(follow.proc.exitCode, null, `run --follow gave up:\n${follow.output()}`);
  await pushLog(lease, 1, 'after\n');
  p.pass();
  await logs.waitFor(/^after$/m);
  await follow.waitFor(/^a \| after$/m);
  await complete(lease);

  const l = await logs.finished;
  assert.equal(l.code, 0, l.output);
  assert.equal(l.stdout, 'before\nafter\n');
  assert.match(l.stderr, /lost the log stream .*; reconnecting/);
  const r = await follow.finished;
  assert.equal(r.code, 0, r.output);
  assert.equal(r.stdout.split('\n').filter((x) => x === 'a | after').length, 1);
  assert.match(r.stderr, /^weft: lost the log stream of a \(.*\); reconnecting$/m);
  assert.match(r.stderr, /^weft: (the server answered 502 Bad Gateway|cannot reach the server \(.*\)); retrying$/m);
});

test('an unreachable server exits 1 with "cannot reach"', async (t) => {
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}`;
  const viaFlag = await weft(t, ['status', 'x', '--server', url], { SERVER_URL: 'http://127.0.0.1:9' });
  assert.equal(viaFlag.code, 1);
  assert.match(viaFlag.stderr, new RegExp(`^weft: cannot reach the server at ${escape(url)}: .*ECONNREFUSED`, 'm'));
  const viaEnv = await weft(t, ['workers'], { SERVER_URL: url });
  assert.equal(viaEnv.code, 1);
  assert.match(viaEnv.stderr, new RegExp(`cannot reach the server at ${escape(url)}`));
});

/** A port nothing listens on: bound once by us to find it, then released. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
