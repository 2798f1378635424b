/**
 * The worker protocol over real HTTP against a real server: every state transition of
 * README "How a run works" and docs/api.md "Worker protocol".
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { startInProcess, type InProcessServer } from '../helpers/server.js';

let srv: InProcessServer;
let api: ReturnType<typeof client>;
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

before(async () => {
  srv = await startInProcess();
  api = client(srv.url);
});
after(() => srv.close());

/** Creates a workflow with a unique id and returns that id. */
async function workflow(jobs: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
  const id = uid('wf');
  await api.createWorkflow({ id, jobs, ...extra });
  return id;
}

/** Claims until a job of `wf` comes up (other tests' jobs may be queued too, under other labels). */
async function claimOf(wf: string, labels: string[] = [], ttl = 30, worker = 'w1') {
  const label = [...labels, `wf:${wf}`];
  const c = await api.claim(worker, label, ttl);
  return c;
}

describe('run', () => {
  test('enqueues exactly the root jobs; the others wait as pending', async () => {
    // Every job on the shared server carries a unique label: an unlabelled job would fit any claimer.
    const tag = uid('roots');
    const wf = await workflow({
      a: { run: 'echo a', labels: [tag] },
      b: { run: 'echo b', needs: 'a', labels: [tag] },
      c: { run: 'echo c', labels: [tag] },
    });
    const doc = await api.run(wf);
    assert.equal(doc.run_number, 1);
    assert.equal(doc.status, 'running');
    const states = Object.fromEntries(doc.jobs.map((j: any) => [j.id, j.state]));
    assert.deepEqual(states, { a: 'queued', b: 'pending', c: 'queued' });
  });

  test('unknown workflow: 404', async () => {
    const r = await api.post('/api/workflows/nope-nope/run');
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'workflow_not_found');
  });
});

describe('claim', () => {
  test('returns the job with its lease; ttl is the requested one', async () => {
    const wf = uid('wf');
    await api.createWorkflow({
      id: wf,
      env: { A: '1' },
      jobs: {
        only: {
          run: 'echo hi',
          labels: [`wf:${wf}`],
          retries: 2,
          backoff: { fixed: { delay_secs: 3 } },
          env: { B: '2' },
        },
      },
    });
    await api.run(wf);
    const before = Date.now();
    const c = await claimOf(wf, [], 45, 'claimer-1');
    const roundTrip = Date.now() - before;
    assert.ok(c);
    const { job, lease } = c;
    assert.equal(job.job_id, 'only');
    assert.equal(job.workflow_id, wf);
    assert.equal(job.command, 'echo hi');
    assert.deepEqual(job.required_labels, [`wf:${wf}`]);
    assert.deepEqual(job.retry_policy, { max_retries: 2, backoff: { Fixed: { delay_secs: 3 } } });
    assert.equal(job.attempt, 0);
    assert.deepEqual(job.upstream_outputs, {});
    assert.equal(job.delayed_until_ms, 0);
    assert.ok(job.enqueued_at_ms >= before - 5000 && job.enqueued_at_ms <= Date.now());
    assert.deepEqual(job.env, { A: '1', B: '2' });
    assert.equal(job.timeout_secs, null);
    assert.equal(job.run_number, 1);
    assert.equal(job.name, 'only');
    // The whole answer, so that a field the serializer dropped is caught (the response schemas of src/protocol/jobs-wire.ts and batches-wire.ts).
    assert.deepEqual(Object.keys(c).sort(), ['job', 'lease']);
    assert.deepEqual(Object.keys(job).sort(), [
      'attempt', 'command', 'delayed_until_ms', 'enqueued_at_ms', 'env', 'job_id', 'name', 'required_labels',
      'retry_policy', 'run_number', 'timeout_secs', 'upstream_outputs', 'workflow_id',
    ]);
    assert.deepEqual(Object.keys(lease).sort(), ['expires_at_ms', 'granted_at_ms', 'job_id', 'lease_id', 'ttl_secs', 'waited_ms', 'worker_id', 'workflow_id']);
    // A job was there at once, so the claim did not wait for one: waited_ms is only the time the server
    // took to grant it (a write batch on a busy machine can take milliseconds), never more than the
    // whole round trip this client saw. long-poll.test.ts checks a real wait with an injected clock.
    assert.ok(Number.isInteger(lease.waited_ms) && lease.waited_ms >= 0 && lease.waited_ms <= roundTrip,
      `waited_ms ${lease.waited_ms} is within the claim's round trip of ${roundTrip} ms`);
    assert.equal(typeof lease.lease_id, 'string');
    assert.equal(lease.job_id, 'only');
    assert.equal(lease.workflow_id, wf);
    assert.equal(lease.worker_id, 'claimer-1');
    assert.equal(lease.ttl_secs, 45);
    assert.ok(lease.granted_at_ms >= before);
    const s = await api.jobState(wf, 'only');
    assert.equal(s.state, 'running');
    assert.equal(s.worker_id, 'claimer-1');
    // Nothing else is claimable for this workflow.
    assert.equal(await claimOf(wf), null);
  });

  test('labels: a job is claimable only by a worker whose labels include all required labels', async () => {
    const tag = uid('lbl');
    const wf = await workflow({ gpu: { run: 'x', labels: [tag, 'gpu', 'linux'] } });
    await api.run(wf);
    assert.equal(await api.claim('w', [tag, 'gpu']), null);
    assert.equal(await api.claim('w', [tag, 'linux']), null);
    const c = await api.claim('w', ['arm', tag, 'linux', 'gpu']);
    assert.equal(c?.job.job_id, 'gpu');
  });

  test('a job without labels fits every worker', async () => {
    // Use a dedicated server so no other test's unlabelled jobs interfere.
    const own = await startInProcess();
    try {
      const o = client(own.url);
      await o.createWorkflow({ id: 'free', jobs: { j: { run: 'x' } } });
      await o.run('free');
      const c = await o.claim('w', ['anything', 'at-all']);
      assert.equal(c?.job.job_id, 'j');
    } finally {
      await own.close();
    }
  });

  test('order: oldest enqueued first', async () => {
    const tag = uid('order');
    const wfs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const wf = await workflow({ j: { run: 'x', labels: [tag] } });
      await api.run(wf);
      wfs.push(wf);
    }
    const got: string[] = [];
    for (let i = 0; i < 3; i++) got.push((await api.claim('w', [tag]))!.job.workflow_id);
    assert.deepEqual(got, wfs);
  });

  test('race: many concurrent claimers never get the same job', async () => {
    const tag = uid('race');
    const jobs: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) jobs[`j${i}`] = { run: 'true', labels: [tag] };
    const wf = await workflow(jobs);
    await api.run(wf);
    const claimed: string[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (;;) {
          const c = await api.claim(`racer-${w}`, [tag]);
          if (!c) return;
          claimed.push(c.job.job_id);
        }
      }),
    );
    assert.equal(claimed.length, 60);
    assert.equal(new Set(claimed).size, 60);
  });
});

describe('heartbeat', () => {
  test('renews the lease by its own ttl from now', async () => {
    const wf = await workflow({ j: { run: 'x', labels: [uid('hb')] } });
    await api.run(wf);
    const tag = (await api.status(wf)).jobs[0].required_labels;
    const c = (await api.claim('w', tag, 2))!;
    const r = await api.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
    assert.equal(r.status, 200);
    assert.equal(r.body.ttl_secs, 2);
    assert.ok(r.body.expires_at_ms >= c.lease.expires_at_ms);
    // Heartbeats keep a lease alive past its original expiry.
    await until(async () => {
      const h = await api.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
      assert.equal(h.status, 200);
      return Date.now() > c.lease.expires_at_ms + 500;
    }, 'time to pass the original expiry', 5000, 300);
    assert.equal((await api.jobState(wf, 'j')).state, 'running');
  });

  test('on an expired lease: 409 at once (no reaper running), and the job is re-queued', async () => {
    const tag = uid('exp');
    const wf = await workflow({ j: { run: 'x', labels: [tag], retries: 1 } });
    await api.run(wf);
    const c = (await api.claim('w', [tag], 1))!;
    await until(() => Date.now() > c.lease.expires_at_ms + 20, 'lease expiry', 3000);
    const r = await api.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'lease_expired');
    const s = await api.jobState(wf, 'j');
    assert.equal(s.state, 'queued');
    assert.equal(s.attempt, 1);
    assert.equal(s.error, 'lease expired');
    // The old lease stays dead for every call.
    for (const call of ['heartbeat', 'complete', 'fail', 'logs']) {
      const body = call === 'fail' ? { error: 'x' } : call === 'logs' ? { chunks: [] } : call === 'complete' ? { outputs: {} } : undefined;
      const rr = await api.post(`/api/jobs/${c.lease.lease_id}/${call}`, body);
      assert.equal(rr.status, 409, `${call} on a dead lease`);
    }
    // The re-run gets attempt 1.
    const again = (await api.claim('w', [tag]))!;
    assert.equal(again.job.attempt, 1);
  });

  test('unknown lease: 409', async () => {
    const r = await api.post('/api/jobs/00000000-0000-0000-0000-000000000000/heartbeat');
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'lease_not_found');
  });
});

describe('complete', () => {
  test('stores outputs and hands them downstream as upstream_outputs, in one step', async () => {
    const tag = uid('out');
    const wf = await workflow({
      build: { run: 'b', labels: [tag] },
      lint: { run: 'l', labels: [tag] },
      deploy: { run: 'd', labels: [tag], needs: ['build', 'lint'] },
      after: { run: 'a', labels: [tag], needs: 'deploy' },
    });
    await api.run(wf);
    const first = (await api.claim('w', [tag]))!;
    const second = (await api.claim('w', [tag]))!;
    const byId = new Map([first, second].map((c) => [c.job.job_id, c]));
    const r1 = await api.post(`/api/jobs/${byId.get('build')!.lease.lease_id}/complete`, {
      outputs: { artifact: 'app.tar.gz', version: '1.2.3' },
    });
    assert.equal(r1.status, 200);
    assert.equal((await api.jobState(wf, 'deploy')).state, 'pending', 'deploy still needs lint');
    assert.equal(await api.claim('w', [tag]), null);
    const r2 = await api.post(`/api/jobs/${byId.get('lint')!.lease.lease_id}/complete`, { outputs: {} });
    assert.equal(r2.status, 200);
    assert.deepEqual(r2.body, { ok: true, status: 'success', enqueued: ['deploy'] });
    const d = (await api.claim('w', [tag]))!;
    assert.equal(d.job.job_id, 'deploy');
    assert.deepEqual(d.job.upstream_outputs, { build: { artifact: 'app.tar.gz', version: '1.2.3' }, lint: {} });
    await api.post(`/api/jobs/${d.lease.lease_id}/complete`, { outputs: { url: 'https://x' } });
    const a = (await api.claim('w', [tag]))!;
    // Only direct needs are handed down.
    assert.deepEqual(a.job.upstream_outputs, { deploy: { url: 'https://x' } });
    await api.post(`/api/jobs/${a.lease.lease_id}/complete`, { outputs: {} });
    const doc = await api.status(wf);
    assert.equal(doc.status, 'success');
    const build = doc.jobs.find((j: any) => j.id === 'build');
    assert.deepEqual(build.outputs, { artifact: 'app.tar.gz', version: '1.2.3' });
    assert.equal(build.state, 'success');
    assert.ok(build.started_at && build.finished_at_ms);
    assert.ok(Number.isInteger(build.duration_secs));
  });

  test('a second complete on the same lease: 409', async () => {
    const tag = uid('twice');
    const wf = await workflow({ j: { run: 'x', labels: [tag] } });
    await api.run(wf);
    const c = (await api.claim('w', [tag]))!;
    assert.equal((await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} })).status, 200);
    const again = await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'lease_completed');
  });

  test('on an expired lease: 409 and the outputs are not stored', async () => {
    const tag = uid('late');
    const wf = await workflow({ j: { run: 'x', labels: [tag] } });
    await api.run(wf);
    const c = (await api.claim('w', [tag], 1))!;
    await until(() => Date.now() > c.lease.expires_at_ms + 20, 'lease expiry', 3000);
    const r = await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: { k: 'v' } });
    assert.equal(r.status, 409);
    const s = await api.jobState(wf, 'j');
    // max_retries 0: an expired lease with no budget left fails the job.
    assert.equal(s.state, 'failed');
    assert.deepEqual(s.outputs, {});
  });
});

describe('fail', () => {
  test('retryable within budget: re-queued, attempt grows; budget spent: failed, downstream skipped', async () => {
    const tag = uid('retry');
    const wf = await workflow({
      flaky: { run: 'x', labels: [tag], retries: 2 },
      next: { run: 'y', labels: [tag], needs: 'flaky' },
      last: { run: 'z', labels: [tag], needs: 'next' },
      side: { run: 's', labels: [tag] },
    });
    await api.run(wf);
    // Settle the independent job first so it is out of the way.
    let c = (await api.claim('w', [tag]))!;
    const side = c.job.job_id === 'side' ? c : (await api.claim('w', [tag]))!;
    const flakyClaim = c.job.job_id === 'flaky' ? c : (await api.claim('w', [tag]))!;
    await api.post(`/api/jobs/${side.lease.lease_id}/complete`, { outputs: {} });
    c = flakyClaim;
    for (let attempt = 0; attempt < 3; attempt++) {
      assert.equal(c.job.job_id, 'flaky');
      assert.equal(c.job.attempt, attempt);
      const r = await api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: `boom ${attempt}`, retryable: true });
      assert.equal(r.status, 200);
      if (attempt < 2) {
        assert.equal(r.body.status, 'queued');
        assert.equal(r.body.attempt, attempt + 1);
        assert.equal(r.body.delayed_until_ms, 0);
        c = (await api.claim('w', [tag]))!;
      } else {
        assert.equal(r.body.status, 'failed');
      }
    }
    const doc = await api.status(wf);
    const st = Object.fromEntries(doc.jobs.map((j: any) => [j.id, j.state]));
    assert.deepEqual(st, { flaky: 'failed', next: 'skipped', last: 'skipped', side: 'success' });
    const flaky = doc.jobs.find((j: any) => j.id === 'flaky');
    assert.equal(flaky.error, 'boom 2');
    assert.equal(flaky.output, 'boom 2');
    assert.equal(doc.status, 'failed');
    assert.equal(await api.claim('w', [tag]), null);
  });

  test('retryable false fails at once despite budget; retryable omitted means false', async () => {
    for (const body of [{ error: 'fatal', retryable: false }, { error: 'fatal' }]) {
      const tag = uid('perm');
      const wf = await workflow({ j: { run: 'x', labels: [tag], retries: 5 } });
      await api.run(wf);
      const c = (await api.claim('w', [tag]))!;
      const r = await api.post(`/api/jobs/${c.lease.lease_id}/fail`, body);
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'failed');
      assert.equal((await api.jobState(wf, 'j')).state, 'failed');
    }
  });

  test('Fixed backoff sets delayed_until_ms and the job is not claimable before it', async () => {
    // The server's clock is the test's, so "before the delay" holds however slow the machine is.
    let clock = 1_700_000_000_000;
    const own = await startInProcess({ now: () => clock });
    try {
      const o = client(own.url);
      await o.createWorkflow({ id: 'fixed', jobs: { j: { run: 'x', retries: 1, backoff: { fixed: { delay_secs: 1 } } } } });
      await o.run('fixed');
      const c = (await o.claim('w', []))!;
      const r = await o.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'e', retryable: true });
      assert.equal(r.body.delayed_until_ms, clock + 1000, JSON.stringify(r.body));
      const s = await o.jobState('fixed', 'j');
      assert.equal(s.state, 'queued');
      assert.equal(s.delayed_until_ms, clock + 1000);
      clock += 999;
      assert.equal(await o.claim('w', []), null, 'claimable 1 ms before its delay ends');
      clock += 1;
      const later = (await o.claim('w', []))!;
      assert.equal(later.job.attempt, 1);
      assert.equal(later.job.delayed_until_ms, r.body.delayed_until_ms);
    } finally {
      await own.close();
    }
  });

  test('Exponential backoff: base_secs * 2^attempt capped at max_secs', async () => {
    const tag = uid('exp');
    const wf = await workflow({
      j: { run: 'x', labels: [tag], retries: 3, backoff: { exponential: { base_secs: 1, max_secs: 3 } } },
    });
    await api.run(wf);
    const c = (await api.claim('w', [tag]))!;
    const t0 = Date.now();
    const r = await api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'e', retryable: true });
    const t1 = Date.now();
    // First retry is attempt 1: 1 * 2^1 = 2 s.
    assert.ok(r.body.delayed_until_ms >= t0 + 2000 && r.body.delayed_until_ms <= t1 + 2000, JSON.stringify(r.body));
    assert.equal((await api.status(wf)).jobs[0].backoff.Exponential.max_secs, 3);
  });
});

describe('lease expiry with the reaper', () => {
  test('the reaper re-queues a job whose lease expired, as a retryable failure', async () => {
    const own = await startInProcess({ reapIntervalMs: 100 });
    try {
      const o = client(own.url);
      await o.createWorkflow({ id: 'r', jobs: { j: { run: 'x', retries: 1, backoff: { fixed: { delay_secs: 0 } } } } });
      await o.run('r');
      const c = (await o.claim('w', [], 1))!;
      const s = await until(async () => {
        const j = await o.jobState('r', 'j');
        return j.state === 'queued' ? j : null;
      }, 'the reaper to re-queue the job', 5000);
      assert.equal(s.attempt, 1);
      assert.equal(s.error, 'lease expired');
      const h = await o.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
      assert.equal(h.status, 409);
      // Budget spent on the second expiry: failed, never dropped.
      await o.claim('w', [], 1);
      const f = await until(async () => {
        const j = await o.jobState('r', 'j');
        return j.state === 'failed' ? j : null;
      }, 'the second expiry to fail the job', 5000);
      assert.equal(f.error, 'lease expired');
      assert.equal((await o.status('r')).status, 'failed');
    } finally {
      await own.close();
    }
  });

  test('timeout_secs: a running attempt older than the timeout is failed (retryable)', async () => {
    const own = await startInProcess({ reapIntervalMs: 100 });
    try {
      const o = client(own.url);
      await o.createWorkflow({ id: 't', jobs: { j: { run: 'sleep 100', retries: 1, timeout_secs: 1 } } });
      await o.run('t');
      const c = (await o.claim('w', [], 60))!;
      const s = await until(async () => {
        const j = await o.jobState('t', 'j');
        return j.state === 'queued' ? j : null;
      }, 'the timeout to re-queue the job', 5000);
      assert.match(s.error, /timed out after 1s/);
      const h = await o.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
      assert.equal(h.status, 409);
    } finally {
      await own.close();
    }
  });

  test('timeout found at access: heartbeat past the deadline answers 409', async () => {
    const tag = uid('tmo');
    const wf = await workflow({ j: { run: 'x', labels: [tag], timeout_secs: 1 } });
    await api.run(wf);
    const c = (await api.claim('w', [tag], 60))!;
    await until(() => Date.now() > c.lease.granted_at_ms + 1100, 'the timeout to pass', 3000);
    const h = await api.post(`/api/jobs/${c.lease.lease_id}/heartbeat`);
    assert.equal(h.status, 409);
    const s = await api.jobState(wf, 'j');
    assert.equal(s.state, 'failed');
    assert.match(s.error, /timed out/);
  });
});

describe('cancel', () => {
  test('cancels pending, queued and running jobs; cancelled endpoint says true; nothing is handed out again', async () => {
    const tag = uid('cancel');
    const wf = await workflow({
      a: { run: 'x', labels: [tag] },
      b: { run: 'x', labels: [tag] },
      c: { run: 'x', labels: [tag], needs: 'a' },
    });
    await api.run(wf);
    const running = (await api.claim('w', [tag]))!;
    assert.equal((await api.get(`/api/jobs/${wf}/${running.job.job_id}/cancelled`)).body, false);
    const r = await api.post(`/api/workflows/${wf}/cancel`);
    assert.equal(r.status, 202);
    assert.deepEqual([...r.body.cancelled_jobs].sort(), ['a', 'b', 'c']);
    for (const j of ['a', 'b', 'c']) {
      const cc = await api.get(`/api/jobs/${wf}/${j}/cancelled`);
      assert.equal(cc.status, 200);
      assert.equal(cc.body, true);
    }
    const doc = await api.status(wf);
    assert.equal(doc.status, 'cancelled');
    assert.ok(doc.jobs.every((j: any) => j.state === 'cancelled'));
    assert.equal(await api.claim('w', [tag]), null);
    // The worker learns through its heartbeat, and a late complete changes nothing.
    const hb = await api.post(`/api/jobs/${running.lease.lease_id}/heartbeat`);
    assert.equal(hb.status, 409);
    assert.equal(hb.body.error, 'job_cancelled');
    const late = await api.post(`/api/jobs/${running.lease.lease_id}/complete`, { outputs: { k: 'v' } });
    assert.equal(late.status, 200);
    const lateFail = await api.post(`/api/jobs/${running.lease.lease_id}/fail`, { error: 'killed', retryable: true });
    assert.equal(lateFail.status, 200);
    assert.equal((await api.jobState(wf, running.job.job_id)).state, 'cancelled');
    // A new run may start after a cancel.
    const again = await api.run(wf);
    assert.equal(again.run_number, 2);
    assert.equal((await api.get(`/api/jobs/${wf}/a/cancelled`)).body, false);
  });

  test('cancel with no active run: 202 and nothing changes', async () => {
    const wf = await workflow({ j: { run: 'x', labels: [uid('idle')] } });
    const r = await api.post(`/api/workflows/${wf}/cancel`);
    assert.equal(r.status, 202);
    assert.deepEqual(r.body.cancelled_jobs, []);
    assert.equal(r.body.status, 'idle');
  });
});

describe('workers', () => {
  test('register, then status follows claims: busy with current_job, then idle', async () => {
    const tag = uid('wk');
    const wid = uid('worker');
    const reg = await api.post('/api/workers/register', { worker_id: wid, labels: [tag, 'linux'] });
    assert.equal(reg.status, 200);
    assert.equal(reg.body.worker_id, wid);
    assert.deepEqual(reg.body.labels, ['linux', tag].sort());
    assert.equal(reg.body.status, 'idle');
    const wf = await workflow({ j: { run: 'x', labels: [tag] } });
    await api.run(wf);
    const c = (await api.claim(wid, [tag, 'linux']))!;
    const list = (await api.get('/api/workers')).body as any[];
    const me = list.find((w) => w.worker_id === wid);
    assert.equal(me.status, 'busy');
    assert.deepEqual(
      { workflow_id: me.current_lease.workflow_id, job_id: me.current_job, lease_id: me.current_lease.lease_id },
      { workflow_id: wf, job_id: 'j', lease_id: c.lease.lease_id },
    );
    assert.ok(me.last_seen_ms >= reg.body.last_seen_ms);
    await api.post(`/api/jobs/${c.lease.lease_id}/complete`, { outputs: {} });
    const after = ((await api.get('/api/workers')).body as any[]).find((w) => w.worker_id === wid);
    assert.equal(after.status, 'idle');
    assert.equal(after.current_job, null);
  });
});

describe('text that PostgreSQL cannot store', () => {
  test('NUL in log data and in a failure error is kept as U+FFFD; a worker id with NUL is a 400', async () => {
    const tag = uid('nul');
    const wf = await workflow({ j: { run: 'x', labels: [tag] } });
    await api.run(wf);
    const c = (await api.claim('w', [tag]))!;
    const pushed = await api.post(`/api/jobs/${c.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'a\u0000b\n' }] });
    assert.equal(pushed.status, 200);
    const logs = await api.get(`/api/workflows/${wf}/jobs/j/logs`);
    assert.equal(logs.body[0].data, 'a\uFFFDb\n');
    await api.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'bad\u0000byte' });
    assert.equal((await api.jobState(wf, 'j')).error, 'bad\uFFFDbyte');
    const r = await api.post('/api/jobs/claim', { worker_id: 'w\u0000x', labels: [] });
    assert.equal(r.status, 400);
  });
});
