/**
 * Bearer tokens (README "Access tokens"): every route against every kind of caller, and the whole
 * path through real processes: `weft token new`, a tokens file, `weft worker` and the CLI with
 * WEFT_TOKEN, and the start-up checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { hashToken, parseTokenHash, type Role, type TokenEntry } from '../../src/domain/access.js';
import { routeAccessTable } from '../../src/http/auth.js';
import { Worker } from '../../src/worker/index.js';
import { WorkflowClient } from '../../src/client/index.js';
import { request, until } from '../helpers/http.js';
import { hasPython, spawnPythonWorker } from '../helpers/process.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track } from '../helpers/server.js';

const TOKENS: Record<Role, string> = {
  admin: 'admin-token-0123456789abcdef',
  worker: 'worker-token-0123456789abcdef',
  read: 'read-token-0123456789abcdef',
  approver: 'approver-token-0123456789abcdef',
  trigger: 'trigger-token-0123456789abcdef',
};

function entries(): TokenEntry[] {
  return (Object.keys(TOKENS) as Role[]).map((role) => ({ name: `${role}-1`, role, hash: parseTokenHash(hashToken(TOKENS[role]))! }));
}

/**
 * Written from the README's table, not from the code under test: the routes a worker token may call,
 * the one it shares with read tokens, and the ones open to anyone.
 */
const WORKER_ONLY = [
  'POST /api/workers/register',
  'POST /api/jobs/claim',
  'POST /api/jobs/claim-batch',
  'POST /api/jobs/report-batch',
  'POST /api/jobs/heartbeat-batch',
  'POST /api/jobs/:lease_id/heartbeat',
  'POST /api/jobs/:lease_id/complete',
  'POST /api/jobs/:lease_id/fail',
  'POST /api/jobs/:lease_id/logs',
  'PUT /api/jobs/:lease_id/artifacts/:name',
];
const WORKER_AND_READ = [
  'GET /api/jobs/:wf_id/:job_id/cancelled',
  'GET /api/workflows/:wf_id/runs/:run/artifacts/:job_id/:name',
  'GET /api/workflows/:id/runs/:run/event',
];
/** Reads an admin alone may make (README "Secrets": which secrets exist is not for read tokens). */
const ADMIN_READS = ['GET /api/secrets'];
/** README "Approvals": the two routes an approver token may call besides every read. */
const APPROVE = ['POST /api/workflows/:id/runs/:run/jobs/:job/approve', 'POST /api/workflows/:id/runs/:run/jobs/:job/reject'];
/** README "Events": the route a trigger token may call, and nothing else. */
const TRIGGER = ['POST /api/events/:name'];
/** README "Webhooks": a delivery needs no token; its signature is checked by the route (401 invalid_signature). */
const PUBLIC = ['GET /healthz', 'GET /readyz', 'GET /api/openapi.json', 'GET /', 'GET /assets/*', 'POST /api/hooks/:id'];

function expectedRoles(method: string, url: string): Role[] | 'anyone' {
  const key = `${method === 'HEAD' ? 'GET' : method} ${url}`;
  if (PUBLIC.includes(key)) return 'anyone';
  if (WORKER_ONLY.includes(key)) return ['admin', 'worker'];
  if (WORKER_AND_READ.includes(key)) return ['admin', 'worker', 'read', 'approver'];
  if (TRIGGER.includes(key)) return ['admin', 'trigger'];
  if (ADMIN_READS.includes(key)) return ['admin'];
  if (APPROVE.includes(key)) return ['admin', 'approver'];
  return method === 'GET' || method === 'HEAD' ? ['admin', 'read', 'approver'] : ['admin'];
}

type Caller = { label: string; headers: Record<string, string>; role: Role | null };
const CALLERS: Caller[] = [
  { label: 'no token', headers: {}, role: null },
  { label: 'an unknown token', headers: { authorization: 'Bearer not-a-known-token-at-all' }, role: null },
  { label: 'a malformed header', headers: { authorization: `Basic ${TOKENS.admin}` }, role: null },
  ...(Object.keys(TOKENS) as Role[]).map((role) => ({ label: `the ${role} token`, headers: { authorization: `Bearer ${TOKENS[role]}` }, role })),
];

/** Status of one call; streams are cut as soon as their status line is in. */
async function statusOf(method: string, url: string, headers: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }> {
  const init: RequestInit = { method, headers: { ...headers }, signal: AbortSignal.timeout(10_000) };
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = '{}';
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(url, init);
  let body: any = undefined;
  if (method !== 'HEAD' && res.headers.get('content-type')?.startsWith('application/json')) body = await res.json();
  else await res.body?.cancel();
  return { status: res.status, body, headers: res.headers };
}

test('every route answers every caller as its role allows: 401 without a known token, 403 for the wrong role', async (t) => {
  const s = await startInProcess({ tokens: entries() });
  t.after(() => s.close());
  const routes = routeAccessTable(s.app).filter((r) => r.method !== 'OPTIONS');
  const keys = new Set(routes.map((r) => `${r.method} ${r.url}`));
  // A renamed worker route would leave workers locked out: every listed one must exist.
  for (const k of [...WORKER_ONLY, ...WORKER_AND_READ, 'GET /healthz', 'GET /readyz']) assert.ok(keys.has(k), `route ${k} exists`);
  assert.ok(routes.length >= 20, `found ${routes.length} routes`);

  // A workflow, so that routes naming one get past their lookups for allowed callers.
  const admin = { authorization: `Bearer ${TOKENS.admin}` };
  const created = await request('POST', `${s.url}/api/workflows`, { id: 'wf', jobs: [{ id: 'a', command: 'true' }] }, admin);
  assert.equal(created.status, 201, created.text);

  let checked = 0;
  for (const route of routes) {
    const url = s.url + route.url.replace(/:(\w+)/g, (_m, name: string) => (name === 'id' || name === 'wf_id' ? 'wf' : name === 'job_id' ? 'a' : 'nope'));
    const allowed = expectedRoles(route.method, route.url);
    for (const caller of CALLERS) {
      const what = `${route.method} ${route.url} with ${caller.label}`;
      const r = await statusOf(route.method, url, caller.headers);
      checked++;
      if (allowed === 'anyone' || (caller.role !== null && allowed.includes(caller.role))) {
        // A webhook's own refusal of an unsigned body is a 401 too, but never the token's `unauthorized`.
        const refusedByToken = r.status === 403 || (r.status === 401 && r.body?.error !== 'invalid_signature');
        assert.ok(!refusedByToken, `${what}: allowed, answered ${r.status} ${JSON.stringify(r.body)}`);
      } else if (caller.role === null) {
        assert.equal(r.status, 401, `${what}: ${JSON.stringify(r.body)}`);
        if (route.method !== 'HEAD') assert.equal(r.body?.error, 'unauthorized', what);
        assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="weft"', what);
      } else {
        assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
        if (route.method !== 'HEAD') {
          assert.equal(r.body?.error, 'forbidden', what);
          assert.match(r.body?.message, new RegExp(`token '${caller.role}-1' has the ${caller.role} role`), what);
        }
      }
    }
  }
  assert.ok(checked >= routes.length * CALLERS.length);

  // Nothing was created by a refused call (the admin's DELETE may have removed 'wf' itself).
  const list = await request('GET', `${s.url}/api/workflows`, undefined, admin);
  assert.deepEqual(
    list.body.map((w: { id: string }) => w.id).filter((id: string) => id !== 'wf'),
    [],
  );
  // Unknown paths reveal nothing without a token, and are a plain 404 with one.
  assert.equal((await request('GET', `${s.url}/api/nothing-here`)).status, 401);
  assert.equal((await request('GET', `${s.url}/api/nothing-here`, undefined, admin)).status, 404);
  // CORS preflights need no token: browsers send none with them.
  const preflight = await fetch(`${s.url}/api/workflows`, {
    method: 'OPTIONS',
    headers: { origin: 'http://example.test', 'access-control-request-method': 'POST' },
  });
  assert.ok(preflight.status < 300, `preflight answered ${preflight.status}`);
});

test('without tokens every route is open, as before (local use)', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  assert.equal((await request('POST', `${s.url}/api/workflows`, { id: 'open', jobs: [{ id: 'a', command: 'true' }] })).status, 201);
  assert.equal((await request('GET', `${s.url}/api/workflows/open`)).status, 200);
});

test('the SDK client and the embedded Worker send their token; a job runs end to end', async (t) => {
  const s = await startInProcess({ tokens: entries() });
  t.after(() => s.close());
  const admin = new WorkflowClient({ baseUrl: s.url, token: TOKENS.admin });
  await admin.createWorkflow({ id: 'sdk', jobs: [{ id: 'a', command: 'true' }] });
  await admin.runWorkflow('sdk');
  const worker = new Worker({ serverUrl: s.url, token: TOKENS.worker, workerId: 'w-tok', handler: async () => ({ done: 'yes' }), longPollSecs: 1, logger: pino({ level: 'silent' }) });
  t.after(() => worker.stop({ abort: true }));
  await worker.start();
  const reader = new WorkflowClient({ baseUrl: s.url, token: TOKENS.read });
  await until(async () => (await reader.getStatus('sdk')).status === 'success', 'the run to succeed', 60_000, 50);
  // A read token cannot start a run.
  await assert.rejects(reader.runWorkflow('sdk'), (err: any) => err.status === 403 && err.error === 'forbidden');
  // A worker without a token is refused at registration, with the reason.
  const anonymous = new Worker({ serverUrl: s.url, workerId: 'w-anon', handler: async () => undefined, logger: pino({ level: 'silent' }) });
  await assert.rejects(anonymous.start(), (err: any) => err.status === 401);
});

test('weft token new, a tokens file, weft worker and the CLI with WEFT_TOKEN, end to end; no token in any log', async (t) => {
  const sb = sandbox(t);
  const made: Record<string, { token: string; line: string }> = {};
  for (const role of ['admin', 'worker', 'read'] as const) {
    const p = spawnWeft(['token', 'new', '--role', role, '--name', `${role}-x`, '--json'], {});
    assert.equal(await p.exited, 0, p.output());
    made[role] = JSON.parse(p.output());
    assert.match(made[role]!.token, /^weft_[\w-]{43}$/);
    assert.equal(made[role]!.line, `${role}-x ${role} ${hashToken(made[role]!.token)}`);
  }
  const file = path.join(sb.dir, 'tokens');
  fs.writeFileSync(file, `# weft tokens\n${made.admin!.line}\n\n${made.worker!.line}\n${made.read!.line}   # dashboards\n`);
  fs.writeFileSync(
    path.join(sb.workflowsDir, 'tok.yml'),
    'id: tok\njobs:\n  a:\n    run: echo "token=${WEFT_TOKEN:-none}"\n',
  );
  const server = await serverProcess(t, sb, { WEFT_TOKENS_FILE: file, LOG_LEVEL: 'debug' });
  const cli = (args: string[], token?: string) => spawnWeft([...args, '--server', server.url], { WEFT_TOKEN: token }, sb.dir);

  const refused = cli(['run', 'tok']);
  assert.equal(await refused.exited, 1);
  assert.match(refused.output(), /401.*set WEFT_TOKEN/);
  const readRun = cli(['run', 'tok'], made.read!.token);
  assert.equal(await readRun.exited, 1);
  assert.match(readRun.output(), /403.*token 'read-x' has the read role/);

  const noTokenWorker = track(t, spawnWeft(['worker'], { SERVER_URL: server.url, WEFT_TOKEN: undefined }, sb.dir));
  assert.notEqual(await noTokenWorker.exited, 0, 'a worker the server refuses stops');
  assert.match(noTokenWorker.output(), /401|unauthorized/);

  const worker = track(t, spawnWeft(['worker'], { SERVER_URL: server.url, WEFT_TOKEN: made.worker!.token, LONG_POLL_SECS: '1' }, sb.dir));
  const run = cli(['run', 'tok', '--follow'], made.admin!.token);
  assert.equal(await run.exited, 0, run.output());
  // The job's command did not get the worker's credential.
  const logs = cli(['logs', 'tok', 'a'], made.read!.token);
  assert.equal(await logs.exited, 0, logs.output());
  assert.match(logs.output(), /token=none/);
  const status = cli(['status', 'tok', '--json'], made.read!.token);
  assert.equal(await status.exited, 0, status.output());
  assert.equal(JSON.parse(status.output()).status, 'success');
  worker.kill('SIGTERM');
  await worker.exited;

  for (const [role, { token }] of Object.entries(made)) {
    for (const [who, out] of [['server', server.output()], ['worker', worker.output()]] as const) {
      assert.ok(!out.includes(token), `the ${role} token appears in the ${who} output`);
    }
  }
});

test('bad token settings stop the server naming file, line and column, never what is written there; a reachable server without tokens warns', async (t) => {
  const sb = sandbox(t);
  // Each case holds a value that must not be echoed: a token pasted where it does not belong.
  const secret = 'weft_SECRETpastedTOKENvalue0123456789abcdefghijk';
  const hash = (n: string) => hashToken(n.repeat(20));
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ WEFT_TOKENS_FILE: path.join(sb.dir, 'missing') }, /WEFT_TOKENS_FILE=".*missing" cannot be read/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'two', `ci ${secret}\n`) }, /WEFT_TOKENS_FILE .*two line 1, column 1: expected `name role sha256:<hex>`.*found 2 field/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'role', `ci ${secret} ${hash('x')}\n`) }, /line 1, column 4: the second field \(the role\) is not one of admin, worker, read/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'raw', `# ok\nci worker ${secret}\n`) }, /line 2, column 11: the third field is not a token hash/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'named', `\n  ${secret} worker ${hash('y')}\n`) }, /line 2, column 3: the first field \(the name\) looks like a token/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'badname', `a/${secret} worker ${hash('y')}\n`) }, /line 1, column 1: the name may hold letters, digits and _ \. @ - only/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'dup', `${secret.slice(0, 20)} read ${hash('1')}\n${secret.slice(0, 20)} admin ${hash('2')}\n`) }, /line 2, column 1: this name is already used on line 1/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'extra', `ci worker ${hash('3')} ${secret}\n`) }, /line 1, column 83: expected .*after the hash only labels=… and workers=… may follow/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'scoped', `ci admin ${hash('4')} labels=${secret}\n`) }, /line 1, column 82: labels= limits worker tokens only; this line's role is admin/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'pattern', `ci worker ${hash('5')} workers=${secret}*x\n`) }, /line 1, column 83: workers= takes worker ids, each exact or ending in one `\*`/],
    [{ WEFT_TOKENS_FILE: writeFile(sb.dir, 'clash', `WEFT_ADMIN_TOKEN read ${hash('6')}\n`), WEFT_ADMIN_TOKEN: TOKENS.admin }, /WEFT_ADMIN_TOKEN is set, and WEFT_TOKENS_FILE names a token WEFT_ADMIN_TOKEN too/],
    [{ WEFT_ADMIN_TOKEN: 'short' }, /WEFT_ADMIN_TOKEN is not valid: a token needs at least 16 characters/],
  ];
  for (const [env, message] of cases) {
    const p = spawnWeft(['server'], { ...sb.env, PORT: '0', ...env }, sb.dir);
    assert.equal(await p.exited, 2, p.output());
    assert.match(p.output(), message);
    assert.ok(!p.output().includes('SECRET'), `nothing of the line is echoed: ${p.output()}`);
  }
  const open = await serverProcess(t, sb, { HOST: '0.0.0.0' });
  await open.waitFor(/no access tokens are configured and 0\.0\.0\.0 is reachable from other machines/);
  open.kill('SIGTERM');
  await open.exited;
  const closed = await serverProcess(t, sb, { HOST: '0.0.0.0', WEFT_ADMIN_TOKEN: TOKENS.admin });
  assert.doesNotMatch(closed.output(), /no access tokens are configured/);
  const local = await serverProcess(t, sb, {});
  assert.doesNotMatch(local.output(), /no access tokens are configured/);
});

test('a tokens file readable by its group or by others draws a warning at start; one for its owner alone does not', async (t) => {
  const sb = sandbox(t);
  const file = writeFile(sb.dir, 'tokens', `ci worker ${hashToken('7'.repeat(20))}\n`);
  for (const mode of [0o644, 0o640, 0o660]) {
    fs.chmodSync(file, mode);
    const s = await serverProcess(t, sb, { WEFT_TOKENS_FILE: file });
    const octal = mode.toString(8);
    await s.waitFor(new RegExp(`WEFT_TOKENS_FILE=\\\\?".*tokens\\\\?" is accessible to its group or to other users \\(mode ${octal}\\): make it readable by this process's user alone \\(chmod 600\\)`));
    s.kill('SIGTERM');
    await s.exited;
  }
  fs.chmodSync(file, 0o600);
  const quiet = await serverProcess(t, sb, { WEFT_TOKENS_FILE: file });
  assert.doesNotMatch(quiet.output(), /is accessible to its group/);
});

function writeFile(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

test('examples/python-worker sends WEFT_TOKEN and keeps it from its jobs', { skip: !hasPython && 'python3 not found' }, async (t) => {
  const s = await startInProcess({ tokens: entries() });
  t.after(() => s.close());
  const admin = { authorization: `Bearer ${TOKENS.admin}` };
  const created = await request('POST', `${s.url}/api/workflows`, { id: 'py', jobs: [{ id: 'a', command: 'echo "::set-output seen=${WEFT_TOKEN:-none}"' }] }, admin);
  assert.equal(created.status, 201, created.text);
  assert.equal((await request('POST', `${s.url}/api/workflows/py/run`, undefined, admin)).status, 202);
  const py = spawnPythonWorker(t, { SERVER_URL: s.url, WORKER_ID: 'py-tok', WEFT_TOKEN: TOKENS.worker, POLL_SECS: '0.2' });
  const reader = new WorkflowClient({ baseUrl: s.url, token: TOKENS.read });
  let doc = await reader.getStatus('py');
  await until(async () => (doc = await reader.getStatus('py')).status === 'success', 'the run to succeed', 60_000, 100).catch((err: Error) => {
    throw new Error(`${err.message}; worker output:\n${py.output()}`);
  });
  assert.deepEqual(doc.jobs.find((j) => j.id === 'a')?.outputs, { seen: 'none' });
});
