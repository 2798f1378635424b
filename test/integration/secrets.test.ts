/**
 * Secrets end to end (README "Secrets") on both stores: a spawned `weft server` with tokens and a key,
 * `weft secret` from the CLI, a real `weft worker`, and a worker speaking raw HTTP as any other
 * language's would. The value reaches the job's env through its claim answer and nowhere else: every
 * answer a reader can get and the server's own log are searched for it and its base64 form.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';
import { cliWithStdin, runCli, type FileServer } from '../helpers/cli.js';


const TOKENS = { admin: 'admin-token-0123456789', worker: 'worker-token-0123456789', read: 'read-token-0123456789' };
const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const newKey = () => randomBytes(32).toString('base64');

/** The value and every form of it that must never show: as written, and as `base64` prints it. */
function leaks(text: string, value: string): string[] {
  const forms = [value, Buffer.from(value).toString('base64').replace(/=+$/, '')];
  return forms.filter((f) => text.includes(f));
}

async function stack(t: TestContext, sb: Sandbox, extra: Record<string, string | undefined>) {
  const env = {
    ...sb.env,
    WEFT_ADMIN_TOKEN: TOKENS.admin,
    WEFT_WORKER_TOKEN: TOKENS.worker,
    WEFT_READ_TOKEN: TOKENS.read,
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'json',
    ...extra,
  };
  const server = await serverProcess(t, sb, env);
  const http = client(server.url);
  const as = (token: string) => ({
    get: (p: string) => http.get(p, auth(token)),
    post: (p: string, body?: unknown) => http.post(p, body ?? {}, auth(token)),
    put: (p: string, body: unknown) => http.put(p, body, auth(token)),
    del: (p: string) => http.del(p, auth(token)),
  });
  return { server, env, admin: as(TOKENS.admin), worker: as(TOKENS.worker), reader: as(TOKENS.read) };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`secrets on ${backend}`, () => {
    async function setup(t: TestContext, extra: Record<string, string | undefined> = {}) {
      const sb = sandbox(t, `weft-secrets-${backend}-`);
      let databaseUrl = sb.env.DATABASE_URL;
      if (backend === 'postgres') {
        const db = await createDatabase();
        t.after(() => db.drop());
        databaseUrl = db.url;
      }
      return { sb, databaseUrl, start: (env: Record<string, string | undefined> = {}) => stack(t, sb, { DATABASE_URL: databaseUrl, ...extra, ...env }) };
    }

    test('a job gets its secrets in env and nothing else shows them: logs (echoed, base64, split across pushes), outputs, errors, answers, events, the server log', async (t) => {
      const { sb, start } = await setup(t);
      const key = newKey();
      const { server, env, admin, worker, reader } = await start({ WEFT_SECRET_KEY: key });
      const DEPLOY = `dk-${randomBytes(12).toString('hex')}`;
      const SCOPED = `scoped-${randomBytes(12).toString('hex')}`;
      const GLOBAL = `global-${randomBytes(12).toString('hex')}`;

      // Only an admin sets, lists or removes; nobody gets a value back.
      assert.equal((await worker.put('/api/secrets/DEPLOY_KEY', { value: DEPLOY })).status, 403);
      assert.equal((await reader.get('/api/secrets')).status, 403, 'which secrets exist is for admins only');
      const set = await admin.put('/api/secrets/DEPLOY_KEY', { value: DEPLOY });
      assert.equal(set.status, 201, set.text);
      assert.deepEqual(Object.keys(set.body).sort(), ['name', 'updated_at_ms', 'updated_by', 'workflow_id']);
      assert.equal(set.body.updated_by, 'WEFT_ADMIN_TOKEN');
      assert.equal((await admin.put('/api/secrets/API_TOKEN', { value: GLOBAL })).status, 201);
      assert.equal((await admin.put('/api/secrets/bad-name', { value: 'x' })).status, 400);
      assert.equal((await admin.put('/api/secrets/EMPTY', { value: '' })).status, 400);
      assert.equal((await admin.put('/api/secrets/X', { value: 'x', extra: 1 })).status, 400, 'an unknown field is refused');
      assert.equal((await admin.put('/api/secrets/X?workflow_id=nope', { value: 'xyz' })).status, 404, 'a workflow secret needs the workflow');

      const deploy = {
        id: 'deploy',
        jobs: {
          ship: {
            // The job proves what it got without printing it: the scoped value won over the global one.
            run: [
              'echo "plain: $DEPLOY_KEY"',
              'printf %s "$DEPLOY_KEY" | base64',
              'printf "split: %s" "$(printf %s "$DEPLOY_KEY" | cut -c1-6)"; printf "%s\\n" "$(printf %s "$DEPLOY_KEY" | cut -c7-)"',
              'test "$(printf %s "$API_TOKEN" | sha256sum | cut -c1-64)" = "$EXPECT_SCOPED_SHA256" && echo "scoped secret wins"',
              'echo "::set-output leaked=$DEPLOY_KEY"',
              'echo "::set-output fine=yes"',
            ].join('\n'),
            env: { DEPLOY_KEY: '${{ secrets.DEPLOY_KEY }}', API_TOKEN: '${{ secrets.API_TOKEN }}', EXPECT_SCOPED_SHA256: createHash('sha256').update(SCOPED).digest('hex') },
          },
          after: { needs: ['ship'], run: 'echo "bad: $DEPLOY_KEY" >&2; exit 3', env: { DEPLOY_KEY: 'pre-${{ secrets.DEPLOY_KEY }}' } },
        },
      };
      assert.equal((await admin.post('/api/workflows', deploy)).status, 201);
      // A workflow secret set through the CLI, its value on stdin.
      const cli = await cliWithStdin(['secret', 'set', 'API_TOKEN', '--workflow', 'deploy'], `${SCOPED}\n`, { SERVER_URL: server.url, WEFT_TOKEN: TOKENS.admin });
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stdout, /secret API_TOKEN set for workflow deploy/);
      const listed = await runCli(t, { url: server.url, dir: sb.dir } as FileServer, ['secret', 'list'], { WEFT_TOKEN: TOKENS.admin });
      assert.equal(listed.code, 0, listed.output);
      assert.match(listed.stdout, /API_TOKEN\s+deploy/);
      assert.match(listed.stdout, /DEPLOY_KEY\s+\(every workflow\)/);

      const events = await openSse(`${server.url}/api/events`, auth(TOKENS.read));
      t.after(() => events.close());
      const started = await admin.post('/api/workflows/deploy/run');
      assert.equal(started.status, 202, started.text);
      const w = track(t, spawnWeft(['worker'], { SERVER_URL: server.url, WEFT_TOKEN: TOKENS.worker, POLL_SECS: '0.2', WORKER_ID: 'sec-worker' }, sb.dir));
      const done = await until(async () => {
        const s = (await admin.get('/api/workflows/deploy/status')).body;
        return ['success', 'failed', 'cancelled'].includes(s.status) ? s : null;
      }, 'the deploy run to end', 60_000, 100);
      assert.equal(done.status, 'failed', 'the second job fails on purpose');
      const ship = done.jobs.find((j: any) => j.id === 'ship');
      assert.equal(ship.state, 'success', JSON.stringify(ship));
      assert.deepEqual(ship.outputs, { leaked: '***', fine: 'yes' });
      const after = done.jobs.find((j: any) => j.id === 'after');
      assert.match(after.error, /bad: pre-\*\*\*/);

      const logText = async (job: string) => ((await admin.get(`/api/workflows/deploy/jobs/${job}/logs`)).body as any[]).map((c) => c.data).join('');
      const shipLog = await logText('ship');
      assert.match(shipLog, /plain: \*\*\*/);
      assert.match(shipLog, /scoped secret wins/);
      assert.match(shipLog, /split: \*\*\*/, shipLog);
      await w.waitFor(/"job_id":"after"[^\n]*job failed/);

      // Rotation: the next claim gets the new value.
      const ROTATED = `rot-${randomBytes(12).toString('hex')}`;
      assert.equal((await admin.put('/api/secrets/DEPLOY_KEY', { value: ROTATED })).status, 200);
      w.kill('SIGTERM');
      await w.exited;
      assert.equal((await admin.post('/api/workflows/deploy/runs/1/rerun', { only: 'all' })).status, 202);
      const c = (await worker.post('/api/jobs/claim', { worker_id: 'raw', labels: [] })).body;
      assert.equal(c.job.job_id, 'ship');
      assert.equal(c.job.env.DEPLOY_KEY, ROTATED);
      assert.equal(c.job.env.API_TOKEN, SCOPED);
      assert.deepEqual([...c.job.mask].sort(), [ROTATED, SCOPED].sort(), 'the claim answer says what to hide');

      // A worker that hides nothing itself: the server hides what it sends, a secret split across two pushes included.
      const lease = c.lease.lease_id;
      const b64 = Buffer.from(ROTATED).toString('base64');
      assert.equal((await worker.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 0, data: `raw ${ROTATED} and ${b64}\n` }] })).status, 200);
      assert.equal((await worker.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 1, data: `half: ${ROTATED.slice(0, 9)}` }] })).status, 200);
      assert.equal((await worker.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 2, data: `${ROTATED.slice(9)} end\n` }] })).status, 200);
      if (backend === 'postgres') {
        // Another server on the same database, which never saw the claim: it hides the values all the same.
        const other = await serverProcess(t, sb, { ...env, WEFT_SECRET_KEY: key });
        const pushed = await client(other.url).post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 3, data: `elsewhere ${ROTATED}\n` }] }, auth(TOKENS.worker));
        assert.equal(pushed.status, 200, pushed.text);
        other.kill('SIGTERM');
        await other.exited;
      }
      assert.equal((await worker.post(`/api/jobs/${lease}/complete`, { outputs: { [`k-${ROTATED}`]: `v ${ROTATED}` } })).status, 200);
      const rawLog = (await admin.get('/api/workflows/deploy/jobs/ship/logs?run=2')).body as any[];
      const joined = rawLog.map((x) => x.data).join('');
      assert.deepEqual(leaks(joined, ROTATED), [], joined);
      assert.match(joined, /raw \*\*\* and \*\*\*/);
      assert.match(joined, /half: \*\*\* end/);
      if (backend === 'postgres') assert.match(joined, /elsewhere \*\*\*/);
      const c2 = (await worker.post('/api/jobs/claim', { worker_id: 'raw', labels: [] })).body;
      assert.equal(c2.job.job_id, 'after');
      assert.equal((await worker.post(`/api/jobs/${c2.lease.lease_id}/fail`, { error: `boom ${ROTATED}`, retryable: false })).status, 200);
      const second = (await admin.get('/api/workflows/deploy/runs/2')).body;
      assert.deepEqual(second.jobs.find((j: any) => j.id === 'ship').outputs, { 'k-***': 'v ***' });
      assert.equal(second.jobs.find((j: any) => j.id === 'after').error, 'boom ***');

      // Every answer a reader can get, the events, and the server's log: no value in any form.
      const answers = await Promise.all(
        [
          '/api/workflows',
          '/api/workflows/deploy/status',
          '/api/workflows/deploy/definition',
          '/api/workflows/deploy/runs',
          '/api/workflows/deploy/runs/1',
          '/api/workflows/deploy/runs/2',
          '/api/workflows/deploy/jobs/ship/logs',
          '/api/workflows/deploy/jobs/ship/logs?run=2',
          '/api/workflows/deploy/jobs/after/logs',
          '/api/workflows/deploy/jobs/ship/logs?run=2&format=text',
          '/api/secrets',
          '/api/workers',
          '/api/openapi.json',
          '/metrics',
        ].map(async (p) => `${p}: ${(await admin.get(p)).text}`),
      );
      await events.waitFor((evs) => evs.some((e) => e.data.includes('"status":"failed"')), 'the events of run 2');
      const everything = [...answers, events.events.map((e) => e.data).join('\n'), server.output(), w.output()].join('\n');
      for (const value of [DEPLOY, SCOPED, GLOBAL, ROTATED]) assert.deepEqual(leaks(everything, value), [], `a value leaked: ${value}`);
      assert.ok(server.output().includes('secret set'), 'the server log does say what happened, by name');

      // The database file holds sealed values only.
      if (backend === 'sqlite') {
        const raw = fs.readFileSync(path.join(sb.dir, 'weft.db')).toString('latin1');
        for (const value of [DEPLOY, SCOPED, GLOBAL, ROTATED]) assert.ok(!raw.includes(value), 'the store keeps no value in clear');
      }
    });

    test('a run naming a secret that is not set does not start; without a key nothing is stored; a wrong key stops the start', async (t) => {
      const { start } = await setup(t);
      const first = await start({ WEFT_SECRET_KEY: undefined });
      const noKey = await first.admin.put('/api/secrets/DEPLOY_KEY', { value: 'v-123456' });
      assert.equal(noKey.status, 409);
      assert.equal(noKey.body.error, 'secrets_unavailable');
      assert.match(noKey.body.message, /WEFT_SECRET_KEY/);
      first.server.kill('SIGTERM');
      await first.server.exited;

      const key = newKey();
      const { server, admin, worker } = await start({ WEFT_SECRET_KEY: key });
      await admin.post('/api/workflows', { id: 'typo', jobs: { a: { run: 'true', env: { K: '${{ secrets.DEPLOY_KYE }}' } }, b: { run: 'true', env: { K: '${{ secrets.OK }}' } } } });
      assert.equal((await admin.put('/api/secrets/OK', { value: 'ok-value-1' })).status, 201);
      const refused = await admin.post('/api/workflows/typo/run');
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.error, 'secret_missing');
      assert.match(refused.body.message, /DEPLOY_KYE \(job "a"\)/);
      assert.doesNotMatch(refused.body.message, /\bOK\b/);
      assert.equal((await admin.get('/api/workflows/typo/status')).body.run_number ?? 0, 0, 'no run was made');

      // An input that holds an expression stays text: it never turns into a secret.
      await admin.post('/api/workflows', { id: 'inject', inputs: { x: { default: '' } }, jobs: { a: { run: 'true', env: { V: '${{ inputs.x }}' } } } });
      assert.equal((await admin.post('/api/workflows/inject/run', { inputs: { x: '${{ secrets.OK }}' } })).status, 202);
      const c = (await worker.post('/api/jobs/claim', { worker_id: 'w', labels: [] })).body;
      assert.equal(c.job.env.V, '${{ secrets.OK }}');
      assert.equal(c.job.mask, undefined, 'a job without secrets gets no mask');

      // A secret removed after its run started fails the job at its claim, saying why; it is never handed out half filled.
      await admin.post('/api/workflows', { id: 'gone', jobs: { a: { run: 'true', env: { K: '${{ secrets.OK }}' } } } });
      assert.equal((await admin.post('/api/workflows/gone/run')).status, 202);
      assert.equal((await admin.del('/api/secrets/OK')).status, 200);
      assert.equal((await admin.del('/api/secrets/OK')).status, 404);
      const none = await worker.post('/api/jobs/claim', { worker_id: 'w', labels: [] });
      assert.equal(none.status, 200, none.text);
      assert.equal(none.body, null, 'the job is not handed out');
      const gone = (await admin.get('/api/workflows/gone/status')).body.jobs[0];
      assert.equal(gone.state, 'failed');
      assert.match(gone.error, /secret OK is not set/);

      // Restarted with another key: the start stops, naming both keys.
      assert.equal((await admin.put('/api/secrets/OK', { value: 'ok-value-2' })).status, 201);
      server.kill('SIGTERM');
      await server.exited;
      await assert.rejects(start({ WEFT_SECRET_KEY: newKey() }), /sealed with key [0-9a-f]{16}, but WEFT_SECRET_KEY is key [0-9a-f]{16}/);
      await assert.rejects(start({ WEFT_SECRET_KEY: 'not a key' }), /WEFT_SECRET_KEY is not a 32-byte key/);
      const again = await start({ WEFT_SECRET_KEY: key });
      assert.equal((await again.admin.get('/api/secrets')).body.secrets.length, 1);
    });
  });
}
