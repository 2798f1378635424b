/**
 * `bin/weft` as real processes: the start line, PORT fall-forward, WORKFLOWS_DIR loading, restarts
 * (graceful and `kill -9` under load), the API_ONLY + `weft scheduler` split, and bad configuration.
 * Every test has its own temp directory, SQLite file and WORKFLOWS_DIR, and kills what it starts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { client, request, until } from '../helpers/http.js';
import { sandbox, serverProcess as server, spawnWeft, track, type SpawnedProcess } from '../helpers/server.js';

// ------------------------------------------------------------------------------------------ helpers


/** Stops a server gracefully and returns its exit code. */
async function stop(p: SpawnedProcess): Promise<number | string> {
  p.kill('SIGTERM');
  return p.exited;
}

/** A free TCP port on this machine, found by binding port 0 and reading it back. */
async function occupyFreePort(t: TestContext): Promise<{ port: number; socket: net.Server }> {
  const socket = net.createServer();
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.listen(0, '0.0.0.0', () => resolve());
  });
  t.after(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const addr = socket.address();
  assert.ok(addr && typeof addr === 'object');
  return { port: addr.port, socket };
}

const is2xx = (status: number) => status >= 200 && status < 300;

// --------------------------------------------------------------------------------------- the tests

test('start line: `weft server` prints "listening on http://HOST:PORT" with the port it bound', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  assert.equal(srv.url, `http://127.0.0.1:${srv.port}`);
  assert.ok(srv.port > 0, 'PORT=0 must print the port the OS gave, not 0');
  const lines = srv.output().split('\n').filter((l) => l.includes('listening on http://'));
  assert.equal(lines.length, 1, `exactly one listening line expected; output:\n${srv.output()}`);
  const h = await request('GET', `${srv.url}/healthz`);
  assert.equal(h.status, 200);
  assert.equal(h.body.ok, true);
  // The API is served on the same port.
  const list = await request('GET', `${srv.url}/api/workflows`);
  assert.equal(list.status, 200);
  assert.deepEqual(list.body, []);
  assert.equal(await stop(srv), 0);
});

test('PORT fall-forward: a taken port makes the server bind a later one and say so', async (t) => {
  const sb = sandbox(t);
  const { port: taken } = await occupyFreePort(t);
  const srv = await server(t, sb, { PORT: String(taken) });
  assert.ok(srv.port > taken && srv.port <= taken + 100, `expected a port after ${taken}, got ${srv.port}`);
  assert.match(srv.output(), new RegExp(`listening on http://127\\.0\\.0\\.1:${srv.port}\\b`));
  // At warn level: a second server on the same store is easy to start by mistake.
  assert.match(srv.output(), new RegExp(`"level":40[^\\n]*port ${taken} is taken; listening on ${srv.port} instead`));
  const h = await request('GET', `http://127.0.0.1:${srv.port}/healthz`);
  assert.equal(h.status, 200);
  // The taken port is still ours: the server did not steal or share it.
  const probe = net.connect(taken, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    probe.once('connect', () => resolve());
    probe.once('error', reject);
  });
  probe.destroy();
  assert.equal(await stop(srv), 0);
});

test('WORKFLOWS_DIR: a broken file is reported and skipped; a changed file is updated in place, history kept', async (t) => {
  const sb = sandbox(t);
  const good = path.join(sb.workflowsDir, 'good.yml');
  fs.writeFileSync(good, 'name: Good\njobs:\n  build:\n    run: echo one\n');
  // `runn` is a typo: unknown keys must not pass silently.
  fs.writeFileSync(path.join(sb.workflowsDir, 'broken.yml'), 'jobs:\n  build:\n    runn: echo one\n');

  const first = await server(t, sb);
  const out = first.output();
  assert.match(out, /broken\.yml/, `the broken file must be named in the output:\n${out}`);
  assert.match(out, /runn/, `the reason (the unknown key) must be reported:\n${out}`);
  const api = client(first.url);
  const list = await api.get('/api/workflows');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.map((w: any) => w.id),
    ['good'],
  );
  assert.equal((await api.get('/api/workflows/broken/status')).status, 404);

  // One full run of the file-defined workflow.
  const doc = await api.run('good');
  assert.equal(doc.run_number, 1);
  const c = (await api.claim('w1', [], 30))!;
  assert.equal(c.job.command, 'echo one');
  assert.equal((await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: { v: '1' } })).status, 200);
  assert.equal((await api.status('good')).status, 'success');
  assert.equal(await stop(first), 0);

  // The file changes while the server is down.
  fs.writeFileSync(good, 'name: Good\njobs:\n  build:\n    run: echo two\n');
  const second = await server(t, sb);
  const api2 = client(second.url);
  assert.deepEqual(
    (await api2.get('/api/workflows')).body.map((w: any) => w.id),
    ['good'],
  );
  const kept = await api2.status('good');
  assert.equal(kept.run_number, 1, 'the run history must survive the update');
  assert.equal(kept.status, 'success');
  const build = kept.jobs.find((j: any) => j.id === 'build');
  assert.equal(build.state, 'success');
  assert.deepEqual(build.outputs, { v: '1' });

  const next = await api2.run('good');
  assert.equal(next.run_number, 2, 'the next run counts on from the kept history');
  const c2 = (await api2.claim('w1', [], 30))!;
  assert.equal(c2.job.command, 'echo two', 'the new run uses the updated definition');
  assert.equal(c2.job.job_id, 'build');
  assert.equal(await stop(second), 0);
});

test('restart (SIGTERM, exit 0) keeps workflows, runs, job states, outputs, leases, logs and workers', async (t) => {
  const sb = sandbox(t);
  const first = await server(t, sb);
  const api = client(first.url);
  await api.createWorkflow({
    id: 'pipeline',
    name: 'Pipeline',
    jobs: {
      build: { run: 'make build', labels: ['linux'] },
      deploy: { run: 'make deploy', needs: 'build', labels: ['linux'] },
    },
  });
  assert.equal((await api.run('pipeline')).run_number, 1);
  const reg = await api.post('/api/workers/register', { worker_id: 'wk-1', labels: ['linux', 'x86'] });
  assert.equal(reg.status, 200);

  const b = (await api.claim('wk-1', ['linux', 'x86'], 300))!;
  assert.equal(b.job.job_id, 'build');
  const logs = await api.post(`/api/jobs/${b.lease.lease_id}/logs`, {
    chunks: [
      { workflow_id: 'pipeline', job_id: 'build', sequence: 0, data: 'compiling\n', timestamp_ms: 1000, stream: 'stdout' },
      { workflow_id: 'pipeline', job_id: 'build', sequence: 1, data: 'warning: x\n', timestamp_ms: 1001, stream: 'stderr' },
    ],
  });
  assert.equal(logs.status, 200);
  const done = await api.post(`/api/jobs/${b.lease.lease_id}/complete`, { outputs: { artifact: 'app.tgz', sha: 'abc' } });
  assert.equal(done.status, 200);

  const d = (await api.claim('wk-1', ['linux', 'x86'], 300))!;
  assert.equal(d.job.job_id, 'deploy');
  assert.deepEqual(d.job.upstream_outputs, { build: { artifact: 'app.tgz', sha: 'abc' } });
  assert.equal(
    (await api.post(`/api/jobs/${d.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'deploying\n' }] })).status,
    200,
  );
  const before = await api.status('pipeline');
  const workersBefore = (await api.get('/api/workers')).body;

  assert.equal(await stop(first), 0, `graceful stop must exit 0; output:\n${first.output()}`);

  const second = await server(t, sb);
  const api2 = client(second.url);
  // Workflows.
  assert.deepEqual(
    (await api2.get('/api/workflows')).body.map((w: any) => w.id),
    ['pipeline'],
  );
  // Run number, job states, outputs.
  const after = await api2.status('pipeline');
  assert.equal(after.run_number, 1);
  assert.equal(after.status, 'running');
  assert.equal(after.name, 'Pipeline');
  const byId = (doc: any) => Object.fromEntries(doc.jobs.map((j: any) => [j.id, j]));
  const jb = byId(after);
  assert.equal(jb.build.state, 'success');
  assert.deepEqual(jb.build.outputs, { artifact: 'app.tgz', sha: 'abc' });
  assert.equal(jb.deploy.status, 'running');
  assert.equal(jb.deploy.worker_id, 'wk-1');
  assert.deepEqual(after.jobs, before.jobs, 'the status document is the same as before the restart');
  // The lease is still valid: a heartbeat renews it.
  const hb = await api2.post(`/api/jobs/${d.lease.lease_id}/heartbeat`);
  assert.equal(hb.status, 200, hb.text);
  assert.equal(hb.body.lease_id, d.lease.lease_id);
  assert.equal(hb.body.ttl_secs, 300);
  // Logs.
  const bl = await api2.get('/api/workflows/pipeline/jobs/build/logs');
  assert.equal(bl.status, 200);
  assert.deepEqual(
    bl.body.map((c: any) => [c.sequence, c.data, c.stream, c.timestamp_ms]),
    [
      [0, 'compiling\n', 'stdout', 1000],
      [1, 'warning: x\n', 'stderr', 1001],
    ],
  );
  const dl = await api2.get('/api/workflows/pipeline/jobs/deploy/logs');
  assert.deepEqual(
    dl.body.map((c: any) => c.data),
    ['deploying\n'],
  );
  // Workers.
  const workers = (await api2.get('/api/workers')).body as any[];
  const w = workers.find((x) => x.worker_id === 'wk-1');
  assert.ok(w, `worker wk-1 must survive the restart: ${JSON.stringify(workers)}`);
  const wb = (workersBefore as any[]).find((x) => x.worker_id === 'wk-1');
  assert.deepEqual([...w.labels].sort(), ['linux', 'x86']);
  assert.equal(w.registered_at_ms, wb.registered_at_ms);
  assert.equal(w.status, 'busy');
  assert.equal(w.current_job, 'deploy');
  assert.equal(w.current_lease?.lease_id, d.lease.lease_id);

  // And the run finishes on the new process with the old lease.
  assert.equal((await api2.post(`/api/jobs/${d.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  assert.equal((await api2.status('pipeline')).status, 'success');
  assert.equal(await stop(second), 0);
});

test('SIGTERM with a live log stream open still shuts down promptly with exit 0', async (t) => {
  const sb = sandbox(t);
  const srv = await server(t, sb);
  const api = client(srv.url);
  await api.createWorkflow({ id: 'tail', jobs: { j: { run: 'sleep 100' } } });
  await api.run('tail');
  const c = (await api.claim('w1', [], 300))!;
  // A stored chunk, so the stream has something to replay (and its headers go out with it).
  assert.equal((await api.post(`/api/jobs/${c.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'hi\n' }] })).status, 200);

  const abort = new AbortController();
  t.after(() => abort.abort());
  const res = await fetch(`${srv.url}/api/workflows/tail/jobs/j/logs/stream`, { signal: abort.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let seen = '';
  while (!seen.includes('"data":"hi\\n"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, `stream ended before the replayed chunk: ${seen}`);
    seen += dec.decode(value);
  }
  // The job is still running, so the stream would stay open forever: a graceful stop must end it.
  const t0 = Date.now();
  srv.kill('SIGTERM');
  const code = await Promise.race([srv.exited, new Promise<string>((r) => setTimeout(() => r('still running'), 5000).unref())]);
  assert.equal(code, 0, `SIGTERM must stop the server within 5 s even with a log stream open (${Date.now() - t0} ms); output:\n${srv.output()}`);
  // The follower sees its stream end rather than hang.
  const rest = await Promise.race([
    (async () => {
      for (;;) {
        const { done } = await reader.read().catch(() => ({ done: true }));
        if (done) return 'ended';
      }
    })(),
    new Promise<string>((r) => setTimeout(() => r('still open'), 2000).unref()),
  ]);
  assert.equal(rest, 'ended');

  // And nothing was lost by the shutdown.
  const again = await server(t, sb);
  const logs = await client(again.url).get('/api/workflows/tail/jobs/j/logs');
  assert.deepEqual(
    logs.body.map((x: any) => x.data),
    ['hi\n'],
  );
  assert.equal(await stop(again), 0);
});

test('kill -9 under load: no acknowledged completion is lost; held leases are re-queued by the reaper', async (t) => {
  const sb = sandbox(t);
  const JOBS = 200;
  const env = { REAP_INTERVAL_SECS: '0.2' };
  const first = await server(t, sb, env);
  const api = client(first.url);
  const jobs: Record<string, unknown> = {};
  // retries: lease expiry spends the retry budget like any retryable failure.
  for (let i = 0; i < JOBS; i++) jobs[`j${String(i).padStart(3, '0')}`] = { run: 'true', retries: 3 };
  await api.createWorkflow({ id: 'load', jobs });
  await api.run('load');

  const acked = new Map<string, number>(); // job id -> number of 2xx completes
  const claimedUnacked = new Set<string>(); // claimed (2xx) but its complete got no 2xx
  const unexpected: string[] = [];
  let stopLoops = false;
  const loop = async (worker: string) => {
    while (!stopLoops) {
      let claim: { job: any; lease: any } | null;
      try {
        const r = await request('POST', `${first.url}/api/jobs/claim`, { worker_id: worker, labels: [], lease_ttl_secs: 2 });
        if (r.status !== 200) {
          unexpected.push(`claim ${r.status} ${r.text}`);
          return;
        }
        claim = r.body;
      } catch {
        return; // the server is gone
      }
      if (!claim) return;
      const id = claim.job.job_id as string;
      claimedUnacked.add(id);
      try {
        const r = await request('POST', `${first.url}/api/jobs/${claim.lease.lease_id}/complete`, { outputs: { by: worker } });
        if (is2xx(r.status)) {
          acked.set(id, (acked.get(id) ?? 0) + 1);
          claimedUnacked.delete(id);
        } else {
          unexpected.push(`complete ${id} ${r.status} ${r.text}`);
        }
      } catch {
        return;
      }
    }
  };
  // The batched paths: claim several, report them all and claim the next ones in one round trip.
  const batchLoop = async (worker: string) => {
    const claim = { worker_id: worker, labels: [], lease_ttl_secs: 2, max_jobs: 4 };
    let claims: Array<{ job: any; lease: any }>;
    try {
      const r = await request('POST', `${first.url}/api/jobs/claim-batch`, claim);
      if (r.status !== 200) return void unexpected.push(`claim-batch ${r.status} ${r.text}`);
      claims = r.body.claims;
    } catch {
      return;
    }
    while (!stopLoops && claims.length > 0) {
      for (const c of claims) claimedUnacked.add(c.job.job_id);
      const reports = claims.map((c) => ({ lease_id: c.lease.lease_id, outcome: 'complete', outputs: { by: worker } }));
      let r;
      try {
        r = await request('POST', `${first.url}/api/jobs/report-batch`, { reports, claim });
      } catch {
        return;
      }
      if (r.status !== 200) return void unexpected.push(`report-batch ${r.status} ${r.text}`);
      r.body.results.forEach((res: any, i: number) => {
        const id = claims[i]!.job.job_id as string;
        if (res.status !== 200) return void unexpected.push(`batched complete ${id} ${res.status} ${JSON.stringify(res.error)}`);
        acked.set(id, (acked.get(id) ?? 0) + 1);
        claimedUnacked.delete(id);
      });
      claims = r.body.claims;
    }
  };
  const loops = [
    ...Array.from({ length: 3 }, (_, i) => loop(`loader-${i}`)),
    ...Array.from({ length: 3 }, (_, i) => batchLoop(`batcher-${i}`)),
  ];
  await until(() => acked.size >= 50 || unexpected.length > 0, '50 acknowledged completions', 15_000, 2);
  // Three leases that nobody will ever complete, taken while the loops are still running.
  const held: string[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await api.claim('holder', [], 2);
    assert.ok(c, 'a job to hold');
    held.push(c.job.job_id);
  }
  first.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');
  stopLoops = true;
  await Promise.all(loops);
  assert.deepEqual(unexpected, []);
  for (const [id, n] of acked) assert.equal(n, 1, `job ${id} was acknowledged complete ${n} times`);
  const ackedBefore = new Set(acked.keys());
  t.diagnostic(`acknowledged before the kill: ${ackedBefore.size}; claimed without an ack: ${claimedUnacked.size}`);

  const second = await server(t, sb, env);
  const api2 = client(second.url);
  const afterRestart = await api2.status('load');
  assert.equal(afterRestart.jobs.length, JOBS);
  const state = (doc: any) => new Map<string, any>(doc.jobs.map((j: any) => [j.id, j]));
  const s1 = state(afterRestart);
  for (const id of ackedBefore) {
    assert.equal(s1.get(id).state, 'success', `job ${id} was acknowledged complete before the kill`);
  }

  // The reaper (not a worker call) puts every lost lease back in the queue.
  const settled = await until(
    async () => {
      const doc = await api2.status('load');
      return doc.jobs.every((j: any) => j.state !== 'running') ? doc : null;
    },
    'no job left running',
    10_000,
    100,
  );
  const s2 = state(settled);
  for (const id of held) {
    const j = s2.get(id);
    assert.equal(j.state, 'queued', `held job ${id}: ${JSON.stringify(j)}`);
    assert.equal(j.attempt, 1);
    assert.equal(j.error, 'lease expired');
  }
  for (const id of claimedUnacked) {
    const j = s2.get(id);
    // Its complete may have committed before the kill without the answer reaching us.
    assert.ok(['queued', 'success'].includes(j.state), `claimed job ${id} is ${j.state}`);
    if (j.state === 'queued') assert.equal(j.error, 'lease expired');
  }
  for (const j of settled.jobs) assert.ok(['queued', 'success'].includes(j.state), `${j.id} is ${j.state}`);
  const successAfterRestart = new Map<string, number>(
    settled.jobs.filter((j: any) => j.state === 'success').map((j: any) => [j.id, j.finished_at_ms]),
  );

  // Drain the rest.
  const drained = new Map<string, number>();
  const drain = async (worker: string) => {
    for (;;) {
      const c = await api2.claim(worker, [], 30);
      if (!c) return;
      const id = c.job.job_id as string;
      assert.ok(!successAfterRestart.has(id), `job ${id} was already a success but was handed out again`);
      const r = await api2.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: { by: worker } });
      assert.equal(r.status, 200, r.text);
      drained.set(id, (drained.get(id) ?? 0) + 1);
    }
  };
  await Promise.all([drain('drain-a'), drain('drain-b'), drain('drain-c')]);

  const final = await api2.status('load');
  assert.equal(final.status, 'success');
  assert.ok(final.jobs.every((j: any) => j.state === 'success'));
  for (const [id, n] of drained) assert.equal(n, 1, `job ${id} completed ${n} times after the restart`);
  // Each job completed exactly once: the successes found after the restart plus the drained ones.
  assert.equal(successAfterRestart.size + drained.size, JOBS);
  for (const id of drained.keys()) assert.ok(!ackedBefore.has(id));
  // Successes from before the kill were not touched again.
  const s3 = state(final);
  for (const [id, finished] of successAfterRestart) assert.equal(s3.get(id).finished_at_ms, finished, id);
  assert.equal(await stop(second), 0);
});

test('API_ONLY server + `weft scheduler`: no reaping without the scheduler; the scheduler re-queues', async (t) => {
  const sb = sandbox(t);
  const env = { API_ONLY: '1', REAP_INTERVAL_SECS: '0.2' };
  const srv = await server(t, sb, env);
  const api = client(srv.url);
  await api.createWorkflow({
    id: 'split',
    jobs: { reaped: { run: 'true', retries: 2 }, touched: { run: 'true', retries: 2 } },
  });
  await api.run('split');
  const a = (await api.claim('w1', [], 1))!;
  const b = (await api.claim('w2', [], 1))!;
  assert.deepEqual([a.job.job_id, b.job.job_id].sort(), ['reaped', 'touched']);
  const reapedLease = a.job.job_id === 'reaped' ? a : b;
  const touchedLease = a.job.job_id === 'reaped' ? b : a;
  const expiry = Math.max(a.lease.expires_at_ms, b.lease.expires_at_ms);

  // ~1.5 s past expiry with REAP_INTERVAL_SECS=0.2: an API_ONLY server alone reaps nothing.
  await until(
    async () => {
      const doc = await api.status('split');
      for (const j of doc.jobs) assert.equal(j.state, 'running', `no reaper runs under API_ONLY: ${JSON.stringify(j)}`);
      return Date.now() > expiry + 1500;
    },
    '1.5 s past lease expiry',
    6000,
    100,
  );

  // A heartbeat on the expired lease answers 409 (with no reaper, nothing else would ever end it),
  // and settles that one job.
  const hb = await api.post(`/api/jobs/${touchedLease.lease.lease_id}/heartbeat`);
  assert.equal(hb.status, 409, hb.text);
  const touched = await api.jobState('split', 'touched');
  assert.equal(touched.state, 'queued');
  assert.equal(touched.attempt, 1);
  assert.equal(touched.error, 'lease expired');
  assert.equal((await api.jobState('split', 'reaped')).state, 'running', 'the untouched job still waits for a reaper');

  // `weft scheduler` always reaps, even with API_ONLY set in its environment.
  const sched = track(t, spawnWeft(['scheduler'], { ...sb.env, ...env }, sb.dir));
  const reaped = await until(
    async () => {
      const j = await api.jobState('split', 'reaped');
      return j.state === 'running' ? null : j;
    },
    'the scheduler to re-queue the expired job',
    10_000,
    50,
  );
  assert.equal(reaped.status, 'queued');
  assert.equal(reaped.attempt, 1);
  assert.equal(reaped.error, 'lease expired');
  const late = await api.post(`/api/jobs/${reapedLease.lease.lease_id}/complete`, { outputs: {} });
  assert.equal(late.status, 409);

  // The split deployment keeps working: both jobs run to the end through the API_ONLY server.
  for (let i = 0; i < 2; i++) {
    const c = (await api.claim('w3', [], 30))!;
    assert.equal(c.job.attempt, 1);
    assert.equal((await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
  }
  assert.equal((await api.status('split')).status, 'success');
  assert.equal(await stop(sched), 0);
  assert.equal(await stop(srv), 0);
});

test('bad configuration stops the process with a non-zero exit and a message naming the setting', async (t) => {
  const sb = sandbox(t);
  const badPort = track(t, spawnWeft(['server'], { ...sb.env, PORT: 'abc' }, sb.dir));
  const badDb = track(t, spawnWeft(['server'], { ...sb.env, PORT: '0', DATABASE_URL: 'mysql://x' }, sb.dir));
  const [portCode, dbCode] = await Promise.all([badPort.exited, badDb.exited]);
  assert.equal(typeof portCode, 'number');
  assert.notEqual(portCode, 0, badPort.output());
  assert.match(badPort.output(), /PORT/);
  assert.match(badPort.output(), /abc/);
  assert.doesNotMatch(badPort.output(), /listening on/);
  assert.equal(typeof dbCode, 'number');
  assert.notEqual(dbCode, 0, badDb.output());
  assert.match(badDb.output(), /DATABASE_URL/);
  assert.match(badDb.output(), /mysql:\/\/x/);
  assert.doesNotMatch(badDb.output(), /listening on/);
  // Neither left a database behind.
  assert.ok(!fs.existsSync(path.join(sb.dir, 'data')));

  // The scheduler checks its settings the same way.
  const badReap = track(t, spawnWeft(['scheduler'], { ...sb.env, REAP_INTERVAL_SECS: 'often' }, sb.dir));
  const reapCode = await badReap.exited;
  assert.equal(typeof reapCode, 'number');
  assert.notEqual(reapCode, 0, badReap.output());
  assert.match(badReap.output(), /REAP_INTERVAL_SECS/);
});
