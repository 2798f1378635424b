/**
 * Scoped worker tokens and leases bound to the token that claimed them (README "Access tokens"):
 * the attacks of a leaked worker token, each reproduced over real HTTP. A token that learns a lease id
 * cannot use it, a read token cannot learn one, and a token scoped to some labels or worker ids
 * cannot claim as anything else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken, parseTokenHash, type TokenEntry } from '../../src/domain/access.js';
import { parseTokensFile } from '../../src/runtime/tokens.js';
import fs from 'node:fs';
import path from 'node:path';
import { request } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, startInProcess } from '../helpers/server.js';

const T = {
  admin: 'scope-admin-token-0123456789',
  read: 'scope-read-token-0123456789',
  a: 'scope-worker-a-token-0123456789',
  b: 'scope-worker-b-token-0123456789',
  ci: 'scope-ci-token-0123456789abc',
};
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function entries(): TokenEntry[] {
  const e = (name: string, role: TokenEntry['role'], token: string, scope?: TokenEntry['scope']): TokenEntry => ({
    name,
    role,
    hash: parseTokenHash(hashToken(token))!,
    ...(scope ? { scope } : {}),
  });
  return [
    e('admin-1', 'admin', T.admin),
    e('read-1', 'read', T.read),
    e('worker-a', 'worker', T.a),
    e('worker-b', 'worker', T.b),
    // The line `ci worker sha256:… labels=untrusted workers=ci-*`, as parsed from a tokens file.
    ...parseTokensFile(`ci worker ${hashToken(T.ci)} labels=untrusted workers=ci-*\n`, 'tokens'),
  ];
}

async function setUp(t: import('node:test').TestContext, jobs: unknown[]) {
  const s = await startInProcess({ tokens: entries() });
  t.after(() => s.close());
  const created = await request('POST', `${s.url}/api/workflows`, { id: 'wf', jobs }, bearer(T.admin));
  assert.equal(created.status, 201, created.text);
  const run = await request('POST', `${s.url}/api/workflows/wf/run`, undefined, bearer(T.admin));
  assert.equal(run.status, 202, run.text);
  return s;
}

test('a lease is bound to the token that claimed it: another worker token gets 403 lease_not_yours on every lease call; the holder goes on', async (t) => {
  const s = await setUp(t, [
    { id: 'one', command: 'true', max_retries: 2 },
    { id: 'two', command: 'true', max_retries: 2 },
  ]);
  const claimA = await request('POST', `${s.url}/api/jobs/claim-batch`, { worker_id: 'legit-1', labels: [], max_jobs: 2 }, bearer(T.a));
  assert.equal(claimA.status, 200, claimA.text);
  const [first, second] = claimA.body.claims.map((c: { lease: { lease_id: string } }) => c.lease.lease_id) as [string, string];
  assert.ok(first && second);

  // Token B learnt the lease ids (as it could from GET /api/workers before): each call is refused.
  const calls: Array<[string, unknown]> = [
    ['heartbeat', undefined],
    ['logs', { chunks: [{ sequence: 0, data: 'forged' }] }],
    ['complete', { outputs: { forged: 'yes' } }],
    ['fail', { error: 'forged', retryable: false }],
  ];
  for (const [what, body] of calls) {
    const r = await request('POST', `${s.url}/api/jobs/${first}/${what}`, body, bearer(T.b));
    assert.equal(r.status, 403, `${what}: ${r.text}`);
    assert.equal(r.body.error, 'lease_not_yours', what);
    assert.match(r.body.message, /claimed with another token; token 'worker-b' cannot use it/, what);
    assert.doesNotMatch(r.body.message, /worker-a/, 'the holder is not named to another token');
  }
  // The batch routes answer each element as its one-job call would.
  const hbBatch = await request('POST', `${s.url}/api/jobs/heartbeat-batch`, { lease_ids: [first, second] }, bearer(T.b));
  assert.equal(hbBatch.status, 200, hbBatch.text);
  assert.deepEqual(
    hbBatch.body.results.map((r: { status: number; error?: { error: string } }) => [r.status, r.error?.error]),
    [
      [403, 'lease_not_yours'],
      [403, 'lease_not_yours'],
    ],
  );
  const reportBatch = await request(
    'POST',
    `${s.url}/api/jobs/report-batch`,
    { reports: [{ lease_id: first, outcome: 'complete', outputs: {} }, { lease_id: second, outcome: 'fail', error: 'x' }] },
    bearer(T.b),
  );
  assert.equal(reportBatch.status, 200, reportBatch.text);
  assert.deepEqual(
    reportBatch.body.results.map((r: { status: number; error?: { error: string } }) => [r.status, r.error?.error]),
    [
      [403, 'lease_not_yours'],
      [403, 'lease_not_yours'],
    ],
  );
  // Nothing changed: both jobs still run under A's leases, with no forged log or output.
  const status = await request('GET', `${s.url}/api/workflows/wf/status`, undefined, bearer(T.admin));
  assert.deepEqual(
    status.body.jobs.map((j: { id: string; state: string; outputs: object }) => [j.id, j.state, j.outputs]),
    [
      ['one', 'running', {}],
      ['two', 'running', {}],
    ],
  );
  const logs = await request('GET', `${s.url}/api/workflows/wf/jobs/one/logs`, undefined, bearer(T.admin));
  assert.deepEqual(logs.body.chunks ?? logs.body, []);

  // A's own calls still work, one-job and batched.
  assert.equal((await request('POST', `${s.url}/api/jobs/${first}/heartbeat`, undefined, bearer(T.a))).status, 200);
  assert.equal((await request('POST', `${s.url}/api/jobs/${first}/logs`, { chunks: [{ sequence: 0, data: 'mine' }] }, bearer(T.a))).status, 200);
  const hbA = await request('POST', `${s.url}/api/jobs/heartbeat-batch`, { lease_ids: [first, second] }, bearer(T.a));
  assert.deepEqual(hbA.body.results.map((r: { status: number }) => r.status), [200, 200]);
  assert.equal((await request('POST', `${s.url}/api/jobs/${first}/complete`, { outputs: { by: 'a' } }, bearer(T.a))).status, 200);
  const reportA = await request('POST', `${s.url}/api/jobs/report-batch`, { reports: [{ lease_id: second, outcome: 'complete', outputs: {} }] }, bearer(T.a));
  assert.deepEqual(reportA.body.results.map((r: { status: number }) => r.status), [200]);
  const done = await request('GET', `${s.url}/api/workflows/wf/status`, undefined, bearer(T.read));
  assert.equal(done.body.status, 'success');
  assert.deepEqual(done.body.jobs[0].outputs, { by: 'a' });
});

test('lease ids are shown only to an admin token and to the token holding the lease: GET /api/workers and register', async (t) => {
  const s = await setUp(t, [{ id: 'held', command: 'true' }]);
  const claimed = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'legit-prod-1', labels: [] }, bearer(T.a));
  assert.equal(claimed.status, 200, claimed.text);
  const leaseId: string = claimed.body.lease.lease_id;
  const job = { workflow_id: 'wf', job_id: 'held', run_number: 1, attempt: 0 };

  const seenBy = async (token: string) => {
    const r = await request('GET', `${s.url}/api/workers`, undefined, bearer(token));
    assert.equal(r.status, 200, r.text);
    return r.body.find((w: { worker_id: string }) => w.worker_id === 'legit-prod-1');
  };
  const read = await seenBy(T.read);
  assert.equal(read.current_lease, null);
  assert.deepEqual(read.current_leases, []);
  // What it holds is still told, without the lease id.
  assert.equal(read.status, 'busy');
  assert.equal(read.current_job, 'held');
  assert.deepEqual(read.current_jobs, [job]);
  assert.ok(!JSON.stringify(read).includes(leaseId), 'a read token sees no lease id');
  const admin = await seenBy(T.admin);
  assert.deepEqual(admin.current_lease, { ...job, lease_id: leaseId });
  assert.deepEqual(admin.current_leases, [{ ...job, lease_id: leaseId }]);
  assert.deepEqual(admin.current_jobs, [job]);
  // Worker tokens cannot list workers; registering shows the holder its own lease.
  const own = await request('POST', `${s.url}/api/workers/register`, { worker_id: 'legit-prod-1', labels: [] }, bearer(T.a));
  assert.deepEqual(own.body.current_lease, { ...job, lease_id: leaseId });
  // Registering under the holder's worker id does not reveal it either.
  const reg = await request('POST', `${s.url}/api/workers/register`, { worker_id: 'legit-prod-1', labels: [] }, bearer(T.b));
  assert.equal(reg.status, 200, reg.text);
  assert.equal(reg.body.current_lease, null);
  assert.ok(!reg.text.includes(leaseId));
});

test('a scoped worker token claims only within its labels and worker ids: 403 token_scope otherwise, and nothing is done', async (t) => {
  const s = await setUp(t, [
    { id: 'deploy', command: 'echo deploying', required_labels: ['prod'], env: { PROD_SECRET: 's3cret' } },
    { id: 'untrusted', command: 'true', required_labels: ['untrusted'] },
  ]);
  const ci = bearer(T.ci);
  // The attack: claiming as a production worker, with its labels.
  const steal = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'legit-prod-1', labels: ['prod'] }, ci);
  assert.equal(steal.status, 403, steal.text);
  assert.equal(steal.body.error, 'token_scope');
  assert.match(steal.body.message, /token 'ci' may act only as workers ci-\*; this call names worker "legit-prod-1"/);
  const labels = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'ci-1', labels: ['untrusted', 'prod'] }, ci);
  assert.equal(labels.status, 403, labels.text);
  assert.equal(labels.body.error, 'token_scope');
  assert.match(labels.body.message, /token 'ci' may offer only the labels \[untrusted\]; this call offers "prod" besides/);
  for (const [route, body] of [
    ['/api/jobs/claim-batch', { worker_id: 'ci-1', labels: ['prod'], max_jobs: 2 }],
    ['/api/jobs/claim-batch', { worker_id: 'prod-1', labels: [] }],
    ['/api/workers/register', { worker_id: 'legit-prod-1', labels: [] }],
    ['/api/workers/register', { worker_id: 'ci-1', labels: ['prod'] }],
    ['/api/jobs/report-batch', { reports: [], claim: { worker_id: 'ci-1', labels: ['prod'] } }],
  ] as const) {
    const r = await request('POST', s.url + route, body, ci);
    assert.equal(r.status, 403, `${route} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error, 'token_scope', route);
  }
  const workers = await request('GET', `${s.url}/api/workers`, undefined, bearer(T.admin));
  assert.deepEqual(workers.body, [], 'no refused call registered a worker');
  const before = await request('GET', `${s.url}/api/workflows/wf/status`, undefined, bearer(T.admin));
  assert.equal(before.body.jobs.find((j: { id: string }) => j.id === 'deploy').state, 'queued', 'the prod job was not handed out');

  // Inside its scope, it works; the prod job is out of its reach whatever it offers.
  const ok = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'ci-7', labels: ['untrusted'] }, ci);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.job.job_id, 'untrusted');
  assert.equal((await request('POST', `${s.url}/api/jobs/${ok.body.lease.lease_id}/complete`, { outputs: {} }, ci)).status, 200);
  const none = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'ci-7', labels: ['untrusted'] }, ci);
  assert.deepEqual([none.status, none.body], [200, null]);
  // An unscoped worker token (and admin) still claims anything.
  const prod = await request('POST', `${s.url}/api/jobs/claim`, { worker_id: 'legit-prod-1', labels: ['prod'] }, bearer(T.a));
  assert.equal(prod.body?.job?.job_id, 'deploy', prod.text);
});

test('weft token new --labels --workers prints a scoped line the server reads; scopes are for worker tokens', async () => {
  const p = spawnWeft(['token', 'new', '--role', 'worker', '--name', 'ci', '--labels', 'untrusted,linux', '--workers', 'ci-*,build-1', '--json'], {});
  assert.equal(await p.exited, 0, p.output());
  const made = JSON.parse(p.output()) as { token: string; line: string };
  assert.equal(made.line, `ci worker ${hashToken(made.token)} labels=untrusted,linux workers=ci-*,build-1`);
  const [entry] = parseTokensFile(`${made.line}\n`, 'tokens');
  assert.deepEqual(entry?.scope, { labels: ['untrusted', 'linux'], workers: ['ci-*', 'build-1'] });

  const admin = spawnWeft(['token', 'new', '--role', 'admin', '--labels', 'x'], {});
  assert.equal(await admin.exited, 2);
  assert.match(admin.output(), /--labels and --workers limit worker tokens only/);
  assert.doesNotMatch(admin.output(), /weft_/, 'no token is printed when the command is refused');
  const badPattern = spawnWeft(['token', 'new', '--role', 'worker', '--workers', 'a*b'], {});
  assert.notEqual(await badPattern.exited, 0);
  assert.match(badPattern.output(), /prefix ending in \*/);
});

test('on PostgreSQL the binding holds across servers and restarts: a lease claimed through one server is refused to another token on another', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const sb = sandbox(t);
  const file = path.join(sb.dir, 'tokens');
  fs.writeFileSync(
    file,
    [`admin-1 admin ${hashToken(T.admin)}`, `worker-a worker ${hashToken(T.a)}`, `worker-b worker ${hashToken(T.b)}`, ''].join('\n'),
    { mode: 0o600 },
  );
  const env = { DATABASE_URL: db.url, WEFT_TOKENS_FILE: file };
  const one = await serverProcess(t, sb, env);
  const two = await serverProcess(t, sb, env);
  assert.equal((await request('POST', `${one.url}/api/workflows`, { id: 'pg', jobs: [{ id: 'a', command: 'true' }] }, bearer(T.admin))).status, 201);
  assert.equal((await request('POST', `${one.url}/api/workflows/pg/run`, undefined, bearer(T.admin))).status, 202);
  const claimed = await request('POST', `${one.url}/api/jobs/claim`, { worker_id: 'pg-a', labels: [] }, bearer(T.a));
  const leaseId: string = claimed.body.lease.lease_id;
  one.kill('SIGTERM');
  await one.exited;
  for (const what of ['heartbeat', 'complete']) {
    const r = await request('POST', `${two.url}/api/jobs/${leaseId}/${what}`, what === 'complete' ? { outputs: {} } : undefined, bearer(T.b));
    assert.deepEqual([r.status, r.body.error], [403, 'lease_not_yours'], what);
  }
  const done = await request('POST', `${two.url}/api/jobs/${leaseId}/complete`, { outputs: {} }, bearer(T.a));
  assert.equal(done.status, 200, done.text);
});
