/**
 * Notifications end to end (README "Notifications") on both stores: spawned `weft server` processes,
 * jobs worked over HTTP by the test, and a local HTTP receiver. Runs that end are told per `on:`, signed
 * (the signature checked here as a receiver would), in Slack's format where asked, from the definition
 * the run started with; a receiver down for a while gets its notification once it is up; a server
 * killed with SIGKILL while the receiver holds the request open has the notification delivered again
 * after its restart, with the same X-Weft-Delivery; two servers on one PostgreSQL database deliver
 * each notification once.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, type Sandbox } from '../helpers/server.js';
import { expectedSignature, freePort, startReceiver, type Receiver } from '../helpers/receiver.js';

const newKey = () => randomBytes(32).toString('base64');
type Http = ReturnType<typeof client>;

/** A workflow of one job `a`, told as `notify` says. */
const oneJob = (id: string, notify: unknown[]) => ({ id, name: `The ${id}`, jobs: { a: { run: 'true' } }, notify });

/** Claims the run's job `a` (through `via`) and ends it: a success, or a permanent failure with `error`. */
async function work(via: Http, wf: string, outcome: { fail?: string } = {}): Promise<void> {
  const c = await until(async () => {
    const got = await via.claim(`w-${randomBytes(3).toString('hex')}`);
    if (got && got.job.workflow_id !== wf) throw new Error(`claimed a job of ${got.job.workflow_id}, not of ${wf}`);
    return got;
  }, `the job of ${wf} to be claimable`);
  const lease = c.lease.lease_id as string;
  const r = outcome.fail !== undefined ? await via.post(`/api/jobs/${lease}/fail`, { error: outcome.fail, retryable: false }) : await via.post(`/api/jobs/${lease}/complete`, { outputs: {} });
  assert.equal(r.status, 200, r.text);
}

async function notifications(via: Http, query = ''): Promise<any[]> {
  const r = await via.get(`/api/notifications${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

function receiverFor(t: TestContext): Promise<Receiver> {
  return startReceiver().then((r) => {
    t.after(() => r.close());
    return r;
  });
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`notifications on ${backend}`, () => {
    async function setup(t: TestContext) {
      const sb = sandbox(t, `weft-notify-${backend}-`);
      let databaseUrl = sb.env.DATABASE_URL;
      if (backend === 'postgres') {
        const db = await createDatabase();
        t.after(() => db.drop());
        databaseUrl = db.url;
      }
      const start = (env: Record<string, string | undefined> = {}) => serverProcess(t, sb, { DATABASE_URL: databaseUrl, LOG_FORMAT: 'json', ...env });
      return { sb, start };
    }

    test('runs that end are told per on:, signed, in Slack format where asked, from the definition they started with', async (t) => {
      const recv = await receiverFor(t);
      const { start } = await setup(t);
      const server = await start({
        WEFT_SECRET_KEY: newKey(),
        PUBLIC_URL: 'https://weft.example.com/',
        NOTIFY_WEBHOOK: `${recv.url}/server?token=s3cr3t-token`,
        NOTIFY_ON: 'failure,cancelled',
      });
      const http = client(server.url);
      const HOOK_KEY = `hk-${randomBytes(16).toString('hex')}`;
      assert.equal((await http.put('/api/secrets/HOOK_KEY', { value: HOOK_KEY })).status, 201);

      await http.createWorkflow(
        oneJob('nightly', [
          { on: ['failure'], webhook: `${recv.url}/nightly`, secret: 'HOOK_KEY' },
          { on: ['success'], webhook: `${recv.url}/nightly-ok` },
          { on: ['failure'], webhook: `${recv.url}/slack`, format: 'slack' },
        ]),
      );
      await http.createWorkflow(oneJob('build', [{ on: ['success', 'failure'], webhook: `${recv.url}/build` }]));

      await http.run('nightly');
      await work(http, 'nightly', { fail: 'compiler said <no> & stopped' });
      await http.run('build');
      await work(http, 'build');
      // Run 2 starts, then the definition is edited: the run is told as the definition it started with says.
      await http.run('build');
      const edited = await http.put('/api/workflows/build', oneJob('build', [{ on: ['success'], webhook: `${recv.url}/edited` }]));
      assert.equal(edited.status, 200, edited.text);
      await work(http, 'build');
      // A cancelled run: only NOTIFY_WEBHOOK asked for cancelled runs.
      await http.run('build');
      assert.equal((await http.post('/api/workflows/build/cancel')).status, 202);

      const all = await until(async () => {
        const list = await notifications(http);
        return list.length === 6 && list.every((n) => n.status === 'delivered') ? list : null;
      }, 'six notifications delivered');
      const got = await recv.waitFor(6, 'six deliveries');
      assert.deepEqual(got.map((r) => r.path).sort(), ['/build', '/build', '/nightly', '/server?token=s3cr3t-token', '/server?token=s3cr3t-token', '/slack']);
      assert.equal(recv.received.filter((r) => r.path === '/nightly-ok' || r.path === '/edited').length, 0, 'targets that did not ask for the end are not told');
      assert.equal(new Set(got.map((r) => r.delivery)).size, 6, 'each notification has a delivery id of its own');
      assert.deepEqual(new Set(got.map((r) => r.delivery)), new Set(all.map((n) => n.id)), 'X-Weft-Delivery is the notification id');
      for (const n of all) assert.equal(n.attempts, 1);

      // The signed one: checked as a receiver checks GitHub's X-Hub-Signature-256.
      const nightly = got.find((r) => r.path === '/nightly')!;
      assert.equal(nightly.headers['x-weft-signature-256'], expectedSignature(HOOK_KEY, nightly.raw));
      assert.notEqual(nightly.headers['x-weft-signature-256'], expectedSignature('another key', nightly.raw));
      assert.equal(nightly.headers['content-type'], 'application/json');
      assert.equal(nightly.headers['x-weft-event'], 'run_ended');
      assert.match(String(nightly.headers['user-agent']), /^weft\/\d/);
      const p = nightly.body;
      assert.deepEqual(
        { ...p, started_at: typeof p.started_at, ended_at: typeof p.ended_at, started_at_ms: typeof p.started_at_ms, ended_at_ms: typeof p.ended_at_ms, duration_ms: typeof p.duration_ms },
        {
          event: 'run_ended',
          workflow_id: 'nightly',
          workflow_name: 'The nightly',
          run_number: 1,
          status: 'failed',
          trigger: 'manual',
          started_at: 'string',
          ended_at: 'string',
          started_at_ms: 'number',
          ended_at_ms: 'number',
          duration_ms: 'number',
          failed_jobs: [{ job_id: 'a', name: 'a', attempts: 1, error: 'compiler said <no> & stopped' }],
          failed_jobs_total: 1,
          url: 'https://weft.example.com/#/workflows/nightly/runs/1',
        },
      );
      assert.equal(new Date(p.ended_at).getTime(), p.ended_at_ms);
      assert.ok(p.ended_at_ms >= p.started_at_ms && p.duration_ms === p.ended_at_ms - p.started_at_ms);
      for (const r of got.filter((x) => x.path !== '/nightly')) assert.equal(r.headers['x-weft-signature-256'], undefined, 'unsigned without a secret');

      // Slack's format: {"text"} with the same facts, the run linked in mrkdwn, < > & escaped.
      const slack = got.find((r) => r.path === '/slack')!;
      assert.deepEqual(Object.keys(slack.body), ['text']);
      assert.match(slack.body.text, /^:x: \*The nightly\* <https:\/\/weft\.example\.com\/#\/workflows\/nightly\/runs\/1\|run 1> failed after \d+s \(manual\)\n/);
      assert.match(slack.body.text, /• `a` failed: compiler said &lt;no&gt; &amp; stopped$/);

      const builds = got.filter((r) => r.path === '/build').map((r) => r.body);
      assert.deepEqual(builds.map((b) => [b.run_number, b.status, b.failed_jobs]).sort(), [[1, 'success', []], [2, 'success', []]]);
      const server2 = got.filter((r) => r.path.startsWith('/server')).map((r) => [r.body.workflow_id, r.body.run_number, r.body.status]).sort();
      assert.deepEqual(server2, [['build', 3, 'cancelled'], ['nightly', 1, 'failed']].sort());

      // The list: masked URLs, filters, pages.
      const ofRun = await notifications(http, '?workflow_id=build&run=2');
      assert.deepEqual(ofRun.map((n) => [n.target, n.url, n.status, n.run_status, n.format, n.signed]), [['notify[0]', `${recv.url}/build`, 'delivered', 'success', 'json', false]]);
      const serverOnes = all.filter((n) => n.target === 'server');
      assert.deepEqual(serverOnes.map((n) => n.url), [`${recv.url}/server?token=***`, `${recv.url}/server?token=***`], 'a query value is never shown');
      assert.ok(!JSON.stringify(all).includes('s3cr3t-token'));
      const signed = all.find((n) => n.workflow_id === 'nightly' && n.target === 'notify[0]');
      assert.deepEqual([signed.signed, signed.format, signed.last_error, signed.next_attempt_at_ms, typeof signed.delivered_at_ms], [true, 'json', null, null, 'number']);
      assert.equal(all.find((n) => n.target === 'notify[2]').format, 'slack');
      assert.deepEqual((await notifications(http, '?workflow_id=nightly')).map((n) => n.target).sort(), ['notify[0]', 'notify[2]', 'server']);
      assert.deepEqual((await notifications(http, '?status=pending')).length, 0);
      assert.deepEqual((await notifications(http, '?limit=2&offset=4')).map((n) => n.id), all.slice(4).map((n) => n.id));
      assert.equal((await http.get('/api/notifications?run=1')).status, 400, 'a run number needs its workflow');
      assert.equal((await http.get('/api/notifications?status=sent')).status, 400);
      assert.equal((await http.get('/api/notifications?limit=-1')).status, 400);
    });

    test('a receiver down for a while: retried with backoff, delivered once it is up, with the same delivery id', async (t) => {
      const port = await freePort();
      const { start } = await setup(t);
      const server = await start({ NOTIFY_RETRY_SECS: '0.2' });
      const http = client(server.url);
      await http.createWorkflow(oneJob('flaky-receiver', [{ webhook: `http://127.0.0.1:${port}/hook` }]));
      await http.run('flaky-receiver');
      await work(http, 'flaky-receiver', { fail: 'broke' });
      // Nobody listens: attempts fail and are retried.
      const down = await until(async () => {
        const [n] = await notifications(http);
        return n && n.attempts >= 3 && n.status === 'pending' ? n : null;
      }, 'three failed attempts');
      assert.match(down.last_error, /connection refused \(ECONNREFUSED\)/);
      assert.equal(typeof down.next_attempt_at_ms, 'number');

      const recv = await startReceiver(port);
      t.after(() => recv.close());
      const [first] = await recv.waitFor(1, 'the delivery once the receiver is up');
      const done = await until(async () => {
        const [n] = await notifications(http);
        return n.status === 'delivered' ? n : null;
      }, 'the notification delivered');
      assert.ok(done.attempts > 3, `attempts ${done.attempts}`);
      assert.match(done.last_error, /ECONNREFUSED/, 'the last error before it got through is kept');
      assert.equal(first!.delivery, done.id);
      assert.ok(recv.received.every((r) => r.delivery === done.id && r.raw === first!.raw), 'every attempt sends the same delivery id and body');
    });

    test('a server killed with SIGKILL while the receiver holds the request open: restarted, it delivers again with the same delivery id', async (t) => {
      const recv = await receiverFor(t);
      recv.hold = true;
      const { start } = await setup(t);
      // A claim lasts 2 × 4 s + 5 s: the restarted server waits that long for the killed one's claim to run out.
      const env = { NOTIFY_TIMEOUT_SECS: '4', NOTIFY_RETRY_SECS: '0.2' };
      let server = await start(env);
      const held = new Promise<void>((resolve) => (recv.onRequest = () => resolve()));
      const http = client(server.url);
      await http.createWorkflow(oneJob('crashy', [{ on: ['failure', 'success'], webhook: `${recv.url}/hook` }]));
      await http.run('crashy');
      await work(http, 'crashy');
      await held;
      server.kill('SIGKILL');
      await server.exited;
      recv.onRequest = null;
      recv.hold = false;

      server = await start(env);
      const again = client(server.url);
      const [first, second] = await recv.waitFor(2, 'the delivery again after the restart');
      const [n] = await until(async () => {
        const list = await notifications(again);
        return list[0]?.status === 'delivered' ? list : null;
      }, 'the notification delivered');
      assert.equal(second!.delivery, first!.delivery, 'the same X-Weft-Delivery: a receiver can tell it is the same notification');
      assert.equal(second!.raw, first!.raw);
      assert.equal(n.id, first!.delivery);
      assert.deepEqual([n.attempts, n.last_error], [2, null], 'the second attempt came from the claim running out, not from a failure the killed server recorded');
      assert.equal(recv.received.length, 2, 'none lost, none sent more than at least once asks');
    });
  });
}

test('two servers on one PostgreSQL database: every notification delivered once', async (t) => {
  const recv = await receiverFor(t);
  const sb: Sandbox = sandbox(t, 'weft-notify-two-');
  const db = await createDatabase();
  t.after(() => db.drop());
  const env = { DATABASE_URL: db.url, LOG_FORMAT: 'json', REAP_INTERVAL_SECS: '0.5' };
  const servers = [await serverProcess(t, sb, env), await serverProcess(t, sb, env)];
  const https = servers.map((s) => client(s.url));
  const N = 12;
  for (let i = 0; i < N; i++) await https[i % 2]!.createWorkflow(oneJob(`wf${i}`, [{ on: ['failure', 'success'], webhook: `${recv.url}/wf${i}` }]));
  await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      // Each run started on one server and its job ended on the other.
      await https[i % 2]!.run(`wf${i}`);
    }),
  );
  // Jobs claimed and ended through both servers, whichever comes: a third of the workflows fail.
  for (let done = 0; done < N; done++) {
    const via = https[done % 2]!;
    const c = await until(() => via.claim(`w${done}`), 'a job to claim');
    const i = Number(String(c.job.workflow_id).slice(2));
    const lease = c.lease.lease_id as string;
    const r = i % 3 === 0 ? await via.post(`/api/jobs/${lease}/fail`, { error: 'no', retryable: false }) : await via.post(`/api/jobs/${lease}/complete`, { outputs: {} });
    assert.equal(r.status, 200, r.text);
  }
  const list = await until(async () => {
    const l = await notifications(https[0]!, '?limit=100');
    return l.length === N && l.every((n) => n.status === 'delivered') ? l : null;
  }, `${N} notifications delivered`);
  await recv.waitFor(N, `${N} deliveries`);
  assert.equal(recv.received.length, N, 'each delivered once');
  assert.equal(new Set(recv.received.map((r) => r.delivery)).size, N);
  assert.deepEqual(recv.received.map((r) => r.path).sort(), Array.from({ length: N }, (_, i) => `/wf${i}`).sort());
  assert.ok(list.every((n) => n.attempts === 1));
});
