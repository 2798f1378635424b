/**
 * A spawned `weft server` on a PostgreSQL cluster of the test's own (test/helpers/pg-cluster.ts), with
 * claims and reports flowing over real HTTP while the cluster restarts and then stays down for a
 * while. The server must stay up, answer 503 `store_unavailable` as JSON, promptly, while the database
 * is away, serve again by itself once it is back, and keep every completion it acknowledged. A live
 * log stream and a long-polling claimer stay connected through both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../helpers/http.js';
import { startPrivateCluster } from '../helpers/pg-cluster.js';
import { sandbox, serverProcess } from '../helpers/server.js';
import { json, openSse } from '../helpers/sse.js';

const JOBS = 3000;
const LOOPS = 4;
/** An answer slower than this counts as a hang. */
const HANG_MS = 10_000;
/** How fast a 503 must come while the database is down (the connect timeout below is 2 s). */
const PROMPT_503_MS = 5_000;
const RECOVERY_LIMIT_MS = 15_000;
const OUTAGE_MS = 2_000;

interface Answer {
  what: 'claim' | 'complete' | 'long-poll' | 'other';
  startedAt: number;
  endedAt: number;
  status: number | null;
  body: any;
  text: string;
}

async function call(what: Answer['what'], method: string, url: string, body?: unknown): Promise<Answer> {
  const startedAt = Date.now();
  try {
    const res = await fetch(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { what, startedAt, endedAt: Date.now(), status: res.status, body: parsed, text };
  } catch (err) {
    return { what, startedAt, endedAt: Date.now(), status: null, body: undefined, text: String(err) };
  }
}

const describe = (a: Answer) => `${a.what} ${a.status ?? 'no answer'} after ${a.endedAt - a.startedAt} ms: ${a.text.slice(0, 300)}`;

test('a server on PostgreSQL rides out a database restart and an outage: 503 JSON meanwhile, recovery on its own, nothing acknowledged lost', async (t) => {
  const pg = await startPrivateCluster();
  t.after(() => pg.destroy());
  const sb = sandbox(t, 'weft-pg-restart-');
  const server = await serverProcess(t, sb, {
    DATABASE_URL: pg.url,
    REAP_INTERVAL_SECS: '0.5',
    LOG_STREAM_POLL_MS: '200',
    PG_POOL_MAX: '5',
    PG_CONNECT_TIMEOUT_MS: '2000',
    PG_STATEMENT_TIMEOUT_MS: '5000',
  });
  const base = server.url;

  const jobs: Record<string, { run: string; labels?: string[] }> = { follow: { run: 'true', labels: ['later'] } };
  for (let i = 0; i < JOBS; i++) jobs[`j${i}`] = { run: 'true' };
  const created = await call('other', 'POST', `${base}/api/workflows`, { id: 'flow', jobs });
  assert.equal(created.status, 201, describe(created));
  const started = await call('other', 'POST', `${base}/api/workflows/flow/run`);
  assert.equal(started.status, 202, describe(started));

  // A follower of a job nobody claims until the end: its stream must stay open through everything.
  const stream = await openSse(`${base}/api/workflows/flow/jobs/follow/logs/stream`);
  assert.equal(stream.status, 200, stream.text);

  const answers: Answer[] = [];
  const acked = new Map<string, Record<string, string>>();
  const landedEarlier = new Set<string>();
  let stopping = false;

  async function workerLoop(n: number): Promise<void> {
    while (!stopping) {
      const c = await call('claim', 'POST', `${base}/api/jobs/claim`, { worker_id: `w${n}`, labels: [], lease_ttl_secs: 5 });
      answers.push(c);
      if (c.status !== 200 || !c.body) {
        await sleep(50);
        continue;
      }
      const { job, lease } = c.body;
      const outputs = { by: `w${n}`, job: job.job_id as string };
      // Retried until answered for good, as the worker does with a report.
      while (true) {
        const r = await call('complete', 'POST', `${base}/api/jobs/${lease.lease_id}/complete`, { outputs });
        answers.push(r);
        if (r.status === 200) {
          acked.set(job.job_id, outputs);
          break;
        }
        if (r.status === 409) {
          if (r.body?.error === 'lease_completed') landedEarlier.add(job.job_id);
          break;
        }
        if (stopping) return;
        await sleep(50);
      }
      // Paced, so the jobs last through every phase of the test.
      await sleep(20);
    }
  }

  async function longPollLoop(): Promise<void> {
    while (!stopping) {
      const c = await call('long-poll', 'POST', `${base}/api/jobs/claim`, { worker_id: 'gpu-box', labels: ['gpu'], wait_secs: 1 });
      answers.push(c);
      if (c.status !== 200) await sleep(50);
    }
  }

  const loops = [...Array.from({ length: LOOPS }, (_, n) => workerLoop(n)), longPollLoop()];
  /** Fails the wait at once on a server fault or a dead server, rather than at its deadline. */
  const healthy = () => {
    const fault = answers.find((a) => a.status === null || (a.status >= 500 && a.status !== 503));
    if (fault) assert.fail(`a request was answered ${describe(fault)}\nserver output:\n${server.output().slice(-3000)}`);
    return true;
  };
  const completedSince = (at: number): Answer | null => {
    healthy();
    return answers.find((a) => a.what === 'complete' && a.status === 200 && a.startedAt >= at) ?? null;
  };

  try {
    await until(() => healthy() && acked.size >= 30, 'completions to flow before the restart', 20_000);

    // 1. A restart: every connection of the pool is cut while statements are in flight.
    const restartAt = Date.now();
    await pg.restart();
    const backAfterRestart = Date.now();
    const firstAfterRestart = await until(() => completedSince(backAfterRestart), 'a completion after the restart', RECOVERY_LIMIT_MS);

    // 2. An outage: the database stays down for a while, then comes back.
    await pg.stop('fast');
    const downAt = Date.now();
    const duringOutage = () => answers.filter((a) => a.startedAt >= downAt && a.what !== 'long-poll');
    await until(
      () => healthy() && Date.now() - downAt >= OUTAGE_MS && duringOutage().filter((a) => a.status === 503).length >= 3,
      'the outage to last and be answered with 503s',
      RECOVERY_LIMIT_MS,
    );
    const outageAnswers = duringOutage().filter((a) => a.endedAt <= Date.now());
    await pg.start();
    const backAfterOutage = Date.now();
    const firstAfterOutage = await until(() => completedSince(backAfterOutage), 'a completion after the outage', RECOVERY_LIMIT_MS);

    // The followed job runs now; its stream, open all along, shows its log and its end.
    assert.equal(stream.ended, false, `the log stream ended during the outage: ${JSON.stringify(stream.events)}`);
    const follow = await until(async () => {
      const c = await call('other', 'POST', `${base}/api/jobs/claim`, { worker_id: 'later-box', labels: ['later'] });
      return c.status === 200 && c.body ? c.body : null;
    }, 'the followed job to be claimed', RECOVERY_LIMIT_MS);
    const logged = await call('other', 'POST', `${base}/api/jobs/${follow.lease.lease_id}/logs`, { chunks: [{ sequence: 0, data: 'after the outage\n' }] });
    assert.equal(logged.status, 200, describe(logged));
    const done = await call('other', 'POST', `${base}/api/jobs/${follow.lease.lease_id}/complete`, { outputs: {} });
    assert.equal(done.status, 200, describe(done));
    const events = await stream.waitForEnd(RECOVERY_LIMIT_MS);
    assert.deepEqual(
      events.filter((e) => e.event !== 'attempt').map((e) => [e.event, e.event === 'log' ? json(e).data : json(e).status]),
      [
        ['log', 'after the outage\n'],
        ['end', 'success'],
      ],
    );

    stopping = true;
    await Promise.all(loops);

    // The server never went down and was never restarted.
    assert.equal(server.proc.exitCode, null, `the server exited:\n${server.output().slice(-3000)}`);
    assert.equal(server.proc.signalCode, null, `the server was killed:\n${server.output().slice(-3000)}`);
    assert.doesNotMatch(server.output(), /TypeError|uncaught/i, 'no driver crash on the way');

    // Every answer was an answer, in time, and every failure a 503 in weft's JSON shape.
    const unanswered = answers.filter((a) => a.status === null);
    assert.deepEqual(unanswered.map(describe), [], 'every request was answered within the hang limit');
    const faults = answers.filter((a) => a.status! >= 500 && a.status !== 503);
    assert.deepEqual(faults.map(describe), [], 'no 500s');
    const unavailable = answers.filter((a) => a.status === 503);
    for (const a of unavailable) {
      assert.equal(a.body?.error, 'store_unavailable', describe(a));
      assert.equal(typeof a.body?.message, 'string', describe(a));
    }
    const outage503 = outageAnswers.filter((a) => a.status === 503);
    assert.ok(outage503.length >= 3, `requests during the outage answered 503: ${outageAnswers.map(describe).join('\n')}`);
    assert.deepEqual(
      outageAnswers.filter((a) => a.status !== 503).map(describe),
      [],
      'every claim and report sent while the database was down answered 503',
    );
    const slow = unavailable.filter((a) => a.endedAt - a.startedAt > PROMPT_503_MS);
    assert.deepEqual(slow.map(describe), [], `every 503 came within ${PROMPT_503_MS} ms`);
    for (const a of answers.filter((x) => x.what === 'long-poll')) assert.ok(a.status === 200 || a.status === 503, describe(a));

    // Nothing acknowledged is lost. The read may meet a connection still being opened again after the
    // outage (a 503 store_unavailable on a busy machine, which is the right answer then): asked until 200.
    const status = await until(async () => {
      const r = await call('other', 'GET', `${base}/api/workflows/flow/status`);
      if (r.status === 503 && r.body?.error === 'store_unavailable') return null;
      return r;
    }, 'the status document after the outage', RECOVERY_LIMIT_MS);
    assert.equal(status.status, 200, describe(status));
    const byId = new Map<string, any>(status.body.jobs.map((j: any) => [j.id, j]));
    for (const [jobId, outputs] of acked) {
      const job = byId.get(jobId);
      assert.equal(job?.state, 'success', `acknowledged job ${jobId} is ${job?.state}`);
      assert.deepEqual(job.outputs, outputs, `outputs of acknowledged job ${jobId}`);
    }
    for (const jobId of landedEarlier) assert.equal(byId.get(jobId)?.state, 'success', `job ${jobId} answered lease_completed`);

    const ms = (a: Answer) => a.endedAt - a.startedAt;
    const latencies = outage503.map(ms).sort((a, b) => a - b);
    t.diagnostic(`restart: pg_ctl restart took ${backAfterRestart - restartAt} ms; first completion ${firstAfterRestart.endedAt - backAfterRestart} ms after the database was back`);
    t.diagnostic(
      `outage: ${outageAnswers.length} requests while down, ${outage503.length} answered 503 in ${latencies[0]}..${latencies[latencies.length - 1]} ms (median ${latencies[Math.floor(latencies.length / 2)]} ms)`,
    );
    t.diagnostic(`outage: first completion ${firstAfterOutage.endedAt - backAfterOutage} ms after the database was back`);
    t.diagnostic(`${acked.size} completions acknowledged, ${unavailable.length} answers were 503, ${answers.length} requests in all`);
  } finally {
    stopping = true;
    await Promise.all(loops);
    stream.close();
  }
});
