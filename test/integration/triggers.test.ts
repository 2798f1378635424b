/**
 * Runs started from outside, on each store through real `weft server` processes: on PostgreSQL three
 * servers on one database (every one with its reaper, so every one runs the run-end outbox's `follow`
 * consumer), on SQLite one. Named events (README "Events") start every listening workflow, with the
 * `trigger` token allowed and the others refused; runs that follow runs (README "Runs that follow runs")
 * start once per ended run whichever server hears of it, and a chain stops at depth 3; a webhook
 * delivery sent to every server at once starts one run (README "Webhooks").
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { rawRequest, request, until } from '../helpers/http.js';
import { WorkflowClient } from '../../src/client/index.js';
import { createDatabase } from '../helpers/postgres.js';
import { makeSandbox, spawnWeft, type SpawnedProcess } from '../helpers/server.js';
import fs from 'node:fs';

const TOKENS = {
  admin: 'admin-token-0123456789abcdef',
  trigger: 'trigger-token-0123456789abcdef',
  read: 'read-token-0123456789abcdef',
  worker: 'worker-token-0123456789abcdef',
};
const as = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}` });
const SECRET = 'hook secret for the race';

const STORES = [
  { name: 'SQLite', servers: 1, database: async () => ({ url: undefined as string | undefined, drop: async () => {} }) },
  { name: 'PostgreSQL', servers: 3, database: async () => createDatabase() },
];

for (const store of STORES) {
  describe(`runs started from outside (${store.name}, ${store.servers} server${store.servers > 1 ? 's' : ''})`, () => {
    const sb = makeSandbox('weft-triggers-');
    const servers: Array<SpawnedProcess & { url: string }> = [];
    let drop = async () => {};
    const url = (i = 0) => servers[i % servers.length]!.url;
    const admin = (method: string, path: string, body?: unknown, i = 0) => request(method, url(i) + path, body, as('admin'));

    before(async () => {
      const db = await store.database();
      drop = db.drop;
      const key = randomBytes(32).toString('base64');
      for (let i = 0; i < store.servers; i++) {
        const p = spawnWeft(
          ['server'],
          {
            PORT: '0',
            ...sb.env,
            ...(db.url ? { DATABASE_URL: db.url } : {}),
            WEFT_ADMIN_TOKEN: TOKENS.admin,
            WEFT_TRIGGER_TOKEN: TOKENS.trigger,
            WEFT_READ_TOKEN: TOKENS.read,
            WEFT_WORKER_TOKEN: TOKENS.worker,
            WEFT_SECRET_KEY: key,
            REAP_INTERVAL_SECS: '0.2',
            LOG_FORMAT: 'json',
          },
          sb.dir,
        );
        const m = await p.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
        servers.push(Object.assign(p, { url: m[1]! }));
      }
    });
    after(async () => {
      for (const s of servers) s.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.exited));
      await drop();
      fs.rmSync(sb.dir, { recursive: true, force: true });
    });

    /** Claims the next job with `label` through server `i` and completes it (or fails it for good). */
    async function work(label: string, i: number, outcome: 'complete' | 'fail' = 'complete') {
      const c = await until(
        async () => (await request('POST', `${url(i)}/api/jobs/claim`, { worker_id: `w-${label}`, labels: [label], wait_secs: 1 }, as('worker'))).body,
        `a ${label} job to claim`,
        60_000,
        10,
      );
      const r = await request('POST', `${url(i)}/api/jobs/${c.lease.lease_id}/${outcome}`, outcome === 'complete' ? { outputs: {} } : { error: 'broke', retryable: false }, as('worker'));
      assert.equal(r.status, 200, r.text);
      return c;
    }
    const runsOf = async (id: string) => (await admin('GET', `/api/workflows/${id}/runs?limit=1000`)).body as Array<{ run_number: number; trigger: string; event_name: string | null; status: string }>;

    test('an event starts a run of every workflow listening, with its payload; admin and trigger tokens may send it, no other', async () => {
      const listen = (id: string, events: string[], extra: object = {}) =>
        admin('POST', '/api/workflows', { id, on: { event: events }, jobs: { j: { labels: [id], env: { VERSION: '${{ event.version }}', NAME: '${{ event_name }}' }, run: 'true' } }, ...extra });
      assert.equal((await listen('deploy-web', ['deployed'])).status, 201);
      assert.equal((await listen('deploy-docs', ['deployed', 'released'])).status, 201);
      assert.equal((await listen('notes', ['released'])).status, 201);
      assert.equal((await listen('busy', ['deployed'])).status, 201);
      assert.equal((await admin('POST', '/api/workflows/busy/run')).status, 202);

      const payload = { environment: 'production', version: '1.4.2' };
      for (const role of ['read', 'worker'] as const) {
        const r = await request('POST', `${url()}/api/events/deployed`, payload, as(role));
        assert.equal(r.status, 403, r.text);
        assert.match(r.body.message, /needs admin or trigger/);
      }
      assert.equal((await request('POST', `${url()}/api/events/deployed`, payload)).status, 401);
      assert.deepEqual((await runsOf('deploy-web')).length, 0, 'nothing started by a refused call');

      const sent = await request('POST', `${url(1)}/api/events/deployed`, payload, { ...as('trigger'), 'x-weft-delivery': 'deploy-77' });
      assert.equal(sent.status, 202, sent.text);
      assert.deepEqual(sent.body.runs, [
        { workflow_id: 'deploy-docs', run_number: 1, status: 'running', duplicate: false },
        { workflow_id: 'deploy-web', run_number: 1, status: 'running', duplicate: false },
      ]);
      assert.deepEqual(sent.body.refused.map((r: { workflow_id: string; error: string }) => [r.workflow_id, r.error]), [['busy', 'run_active']]);
      assert.deepEqual(await runsOf('notes'), [], 'a workflow listening for another event did not start');

      for (const id of ['deploy-web', 'deploy-docs']) {
        const c = await work(id, 2);
        assert.deepEqual(c.job.event, payload, 'the claim carries the payload');
        assert.deepEqual([c.job.env.VERSION, c.job.env.NAME, c.job.env.WEFT_EVENT_NAME], ['1.4.2', 'deployed', 'deployed']);
        const [run] = await runsOf(id);
        assert.deepEqual([run!.trigger, run!.event_name], ['event', 'deployed']);
      }
      // The same delivery again, through another server and as a query: the runs it started, none new.
      const again = await request('POST', `${url(2)}/api/events/deployed?delivery_id=deploy-77`, payload, as('admin'));
      assert.equal(again.status, 202, again.text);
      assert.deepEqual(again.body.runs.map((r: { workflow_id: string; run_number: number; duplicate: boolean }) => [r.workflow_id, r.run_number, r.duplicate]), [
        ['deploy-docs', 1, true],
        ['deploy-web', 1, true],
      ]);
      assert.equal((await runsOf('deploy-web')).length, 1);
      // The read token sees what ran, and the payload (a worker token too: its job's event).
      assert.deepEqual((await request('GET', `${url()}/api/workflows/deploy-web/runs/1/event`, undefined, as('read'))).body, payload);
      assert.deepEqual((await request('GET', `${url()}/api/workflows/deploy-web/runs/1/event`, undefined, as('worker'))).body, payload);
      assert.equal((await request('GET', `${url()}/api/workflows/deploy-web/runs/1/event`, undefined, as('trigger'))).status, 403);

      // The SDK sends them too, with a delivery id.
      const sdk = new WorkflowClient({ baseUrl: url(), token: TOKENS.trigger });
      assert.deepEqual((await sdk.sendEvent('released', { notes: 'x' }, { deliveryId: 'rel-1' })).runs.map((r) => r.workflow_id), ['deploy-docs', 'notes']);
      // A batched claim (weft worker with CONCURRENCY > 1) carries each job's payload as a single claim does.
      const batch = await request('POST', `${url(1)}/api/jobs/claim-batch`, { worker_id: 'w-batch', labels: ['deploy-docs', 'notes'], max_jobs: 2 }, as('worker'));
      assert.equal(batch.status, 200, batch.text);
      assert.deepEqual(batch.body.claims.map((c: { job: { workflow_id: string; event: unknown } }) => [c.job.workflow_id, c.job.event]).sort(), [
        ['deploy-docs', { notes: 'x' }],
        ['notes', { notes: 'x' }],
      ]);
      // And the CLI: the same delivery again says which runs it had started.
      const cli = spawnWeft(['event', 'released', '--data', '{"notes": "x"}', '--delivery', 'rel-1', '--server', url(1)], { WEFT_TOKEN: TOKENS.trigger }, sb.dir);
      assert.equal(await cli.exited, 0, cli.output());
      assert.match(cli.output(), /^deploy-docs #2 already started by this delivery\nnotes #1 already started by this delivery\n$/m);
      // No listener: 202 with nothing started. A bad name, a bad delivery id or a body that is not JSON: 400.
      assert.deepEqual((await request('POST', `${url()}/api/events/nobody-listens`, undefined, as('trigger'))).body, { event: 'nobody-listens', runs: [], refused: [] });
      assert.equal((await request('POST', `${url()}/api/events/${encodeURIComponent('bad name')}`, {}, as('trigger'))).status, 400);
      assert.equal((await request('POST', `${url()}/api/events/released?delivery_id=${encodeURIComponent('a b')}`, {}, as('trigger'))).status, 400);
      assert.equal((await request('POST', `${url()}/api/events/released`, {}, { ...as('trigger'), 'x-weft-delivery': 'a', 'content-type': 'application/json' })).status, 202);
      const notJson = await rawRequest(url(), 'POST', '/api/events/released', '{nope', as('trigger'));
      assert.deepEqual([notJson.status, notJson.body.error], [400, 'invalid_json']);
    });

    test('a run that follows runs starts once per ended run of the workflows it follows, for the ends it names', async () => {
      const def = (id: string, on: object) => ({ id, on, concurrency: { max_runs: 100 }, jobs: { j: { labels: [id], env: { AFTER: '${{ event.workflow_run.workflow_id }}#${{ event.workflow_run.run_number }}' }, run: 'true' } } });
      assert.equal((await admin('POST', '/api/workflows', def('build', {}))).status, 201);
      assert.equal((await admin('POST', '/api/workflows', def('ship', { workflow_run: { workflows: ['build'], types: ['success'] } }))).status, 201);
      assert.equal((await admin('POST', '/api/workflows', def('triage', { workflow_run: { workflows: 'build', types: ['failure', 'cancelled'] } }))).status, 201);
      const builds = 8;
      for (let n = 1; n <= builds; n++) {
        assert.equal((await admin('POST', '/api/workflows/build/run', undefined, n)).status, 202);
        // Every third fails; the builds end through one server or another.
        await work('build', n + 1, n % 3 === 0 ? 'fail' : 'complete');
      }
      const succeeded = [1, 2, 4, 5, 7, 8];
      const failed = [3, 6];
      await until(async () => (await runsOf('ship')).length >= succeeded.length && (await runsOf('triage')).length >= failed.length, 'the followers to start', 60_000, 50);
      // One more end as a sync point: the outbox is read oldest first, so once its follower is there
      // every earlier end has been handled at least once, on whichever server.
      assert.equal((await admin('POST', '/api/workflows/build/run')).status, 202);
      await work('build', 0);
      await until(async () => (await runsOf('ship')).length >= succeeded.length + 1, 'the last follower', 60_000, 50);

      const upstream = async (id: string) => {
        const runs = await runsOf(id);
        const events = await Promise.all(runs.map(async (r) => (await admin('GET', `/api/workflows/${id}/runs/${r.run_number}/event`)).body));
        assert.ok(runs.every((r) => r.trigger === 'workflow_run' && r.event_name === 'workflow_run'), JSON.stringify(runs));
        return events.map((e) => e.workflow_run).sort((a, b) => a.run_number - b.run_number);
      };
      const shipped = await upstream('ship');
      assert.deepEqual(shipped.map((w) => w.run_number), [...succeeded, builds + 1], 'one follower per successful build, none twice');
      assert.ok(shipped.every((w) => w.workflow_id === 'build' && w.status === 'success' && w.conclusion === 'success' && w.depth === 1 && w.trigger === 'manual'));
      const triaged = await upstream('triage');
      assert.deepEqual(triaged.map((w) => [w.run_number, w.status, w.conclusion]), failed.map((n) => [n, 'failed', 'failure']));
      // The follower's job sees where it came from.
      const c = await work('triage', 1);
      assert.match(c.job.env.AFTER, /^build#[36]$/);
    });

    test('a chain of runs that follow runs stops at depth 3, as GitHub stops workflow_run chains', async () => {
      const def = (id: string, follows: string) => ({ id, on: { workflow_run: { workflows: [follows] } }, jobs: { j: { labels: [id], run: 'true' } } });
      assert.equal((await admin('POST', '/api/workflows', def('ping', 'pong'))).status, 201);
      assert.equal((await admin('POST', '/api/workflows', def('pong', 'ping'))).status, 201);
      assert.equal((await admin('POST', '/api/workflows/ping/run')).status, 202);
      // ping#1 (started by hand, depth 0) → pong#1 (1) → ping#2 (2) → pong#2 (3) → nothing.
      const seen = servers.map((s) => s.output().length);
      for (const [id, i] of [['ping', 0], ['pong', 1], ['ping', 2], ['pong', 3]] as const) await work(id, i);
      // Each server that handles pong#2's end says it starts nothing; wait for one to say so.
      await until(() => servers.some((s, i) => /runs that follow runs stop at a chain of 3/.test(s.output().slice(seen[i]))), 'the chain to stop', 60_000, 50);
      const pings = await runsOf('ping');
      const pongs = await runsOf('pong');
      assert.deepEqual(pings.map((r) => [r.run_number, r.trigger]), [[2, 'workflow_run'], [1, 'manual']]);
      assert.deepEqual(pongs.map((r) => r.run_number), [2, 1]);
      const last = (await admin('GET', '/api/workflows/pong/runs/2/event')).body;
      assert.deepEqual([last.workflow_run.workflow_id, last.workflow_run.run_number, last.workflow_run.depth], ['ping', 2, 3]);
    });

    test('one webhook delivery sent to every server at once starts one run', async () => {
      assert.equal((await admin('PUT', '/api/secrets/RACE_HOOK', { value: SECRET })).status, 201);
      assert.equal((await admin('POST', '/api/workflows', { id: 'raced', on: { webhook: { secret: 'RACE_HOOK' } }, concurrency: { max_runs: 100 }, jobs: { j: { labels: ['raced'], run: 'true' } } })).status, 201);
      for (let round = 1; round <= 5; round++) {
        const body = JSON.stringify({ round });
        const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            rawRequest(url(i), 'POST', '/api/hooks/raced', body, { 'x-hub-signature-256': signature, 'x-github-event': 'push', 'x-github-delivery': `race-${round}` }),
          ),
        );
        const started = answers.filter((a) => a.status === 202);
        assert.equal(started.length, 1, `round ${round}: ${answers.map((a) => `${a.status} ${a.text}`).join('\n')}`);
        assert.equal(started[0]!.body.run_number, round);
        for (const a of answers.filter((x) => x.status !== 202)) assert.deepEqual([a.status, a.body.duplicate, a.body.run_number], [200, true, round], a.text);
      }
      assert.equal((await runsOf('raced')).length, 5);
    });
  });
}
