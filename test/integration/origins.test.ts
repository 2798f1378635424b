/**
 * Requests a browser would send for a page of another site (README "Browsers and origins"): the
 * origin and host rules over real HTTP, each attack as a page would make it (preflight, simple POST
 * without preflight, rebound host name), checked afterwards through the API for anything done; the
 * start-up warning and settings through `weft server` itself; and the dashboard's page headers.
 */
import os from 'node:os';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken, parseTokenHash, type TokenEntry } from '../../src/domain/access.js';
import { DASHBOARD_CSP } from '../../src/http/routes/dashboard.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, type InProcessServer } from '../helpers/server.js';
import { rawRequest, type RawAnswer } from '../helpers/http.js';

const ADMIN = 'origins-admin-token-0123456789';
const tokens = (): TokenEntry[] => [{ name: 'admin-1', role: 'admin', hash: parseTokenHash(hashToken(ADMIN))! }];
const admin = { authorization: `Bearer ${ADMIN}` };
const EVIL = 'http://evil.test';

type Answer = RawAnswer;

/** A request with the headers exactly as given, Host included (fetch would not send a Host of ours). */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  return rawRequest(base, method, path, body === undefined ? undefined : JSON.stringify(body), headers);
}

async function serve(t: TestContext, opts: Parameters<typeof startInProcess>[0] = {}): Promise<InProcessServer> {
  const s = await startInProcess(opts);
  t.after(() => s.close());
  return s;
}

const definition = (id: string) => ({ id, jobs: [{ id: 'a', command: 'true', required_labels: ['nobody-has-this'] }] });

function refused(r: Answer, status: number, code: string, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.status} ${r.text}`);
  assert.equal(r.body?.error, code, what);
  assert.equal(typeof r.body?.message, 'string', what);
  assert.equal(r.headers['access-control-allow-origin'], undefined, `${what}: no CORS header for a refused page`);
}

/**
 * What a page of another site can send, in the order of the report: a preflighted PUT that
 * creates a workflow, then simple (no-preflight) POSTs to run and cancel, and a DELETE.
 * Returns the answers by name.
 */
async function driveBy(url: string, origin: string, host?: string): Promise<Record<string, Answer>> {
  const h = (extra: Record<string, string> = {}) => ({ origin, ...(host ? { host } : {}), ...extra });
  return {
    preflight: await send(url, 'OPTIONS', '/api/workflows/drive-by', h({ 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type' })),
    put: await send(url, 'PUT', '/api/workflows/drive-by', h(), definition('drive-by')),
    create: await send(url, 'POST', '/api/workflows', h(), definition('drive-by-2')),
    run: await send(url, 'POST', '/api/workflows/victim/run', h()),
    cancel: await send(url, 'POST', '/api/workflows/busy/cancel', h()),
    delete: await send(url, 'DELETE', '/api/workflows/victim', h()),
  };
}

/** `victim` (never run) and `busy` (a run that stays active: no worker has its label). */
async function victims(url: string, headers: Record<string, string> = {}): Promise<void> {
  for (const id of ['victim', 'busy']) assert.equal((await send(url, 'POST', '/api/workflows', headers, definition(id))).status, 201);
  assert.equal((await send(url, 'POST', '/api/workflows/busy/run', headers)).status, 202);
}

/** Nothing the page asked for happened. */
async function untouched(url: string, headers: Record<string, string> = {}): Promise<void> {
  const list = await send(url, 'GET', '/api/workflows', headers);
  assert.deepEqual(list.body.map((w: { id: string }) => w.id).sort(), ['busy', 'victim'], 'nothing created, nothing deleted');
  const runs = await send(url, 'GET', '/api/workflows/victim/runs', headers);
  assert.deepEqual(runs.body, [], 'victim was never run');
  const busy = await send(url, 'GET', '/api/workflows/busy/status', headers);
  assert.equal(busy.body.status, 'running', 'busy was not cancelled');
}

test('without tokens (the quick start) a page of another site can create, run, cancel and delete nothing', async (t) => {
  const s = await serve(t);
  await victims(s.url);
  const a = await driveBy(s.url, EVIL);
  refused(a.preflight!, 403, 'forbidden_origin', 'preflight');
  assert.equal(a.preflight!.headers['access-control-allow-methods'], undefined);
  for (const k of ['put', 'create', 'run', 'cancel', 'delete']) refused(a[k]!, 403, 'forbidden_origin', k);
  assert.match(a.run!.body.message, /evil\.test.*CORS_ORIGINS/);
  await untouched(s.url);
  // `Origin: null` (a sandboxed frame, a file:// page) is another site too.
  refused(await send(s.url, 'POST', '/api/workflows/victim/run', { origin: 'null' }), 403, 'forbidden_origin', 'null origin');
  // Reads are answered (a page cannot read them without a CORS header), and requests without Origin
  // (curl, workers, the CLI) are not a browser's.
  const read = await send(s.url, 'GET', '/api/workflows', { origin: EVIL });
  assert.equal(read.status, 200);
  assert.equal(read.headers['access-control-allow-origin'], undefined);
  assert.equal((await send(s.url, 'POST', '/api/workflows/victim/run')).status, 202);
});

test('without tokens, pages on this machine (localhost, 127.0.0.1, [::1], any port) use the API as before', async (t) => {
  const s = await serve(t);
  for (const [i, origin] of ['http://localhost:5173', 'http://127.0.0.1:8080', 'https://[::1]:9443', 'http://localhost'].entries()) {
    const pre = await send(s.url, 'OPTIONS', `/api/workflows/local-${i}`, {
      origin,
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'content-type',
    });
    assert.equal(pre.status, 204, pre.text);
    assert.equal(pre.headers['access-control-allow-origin'], origin);
    assert.match(String(pre.headers['access-control-allow-methods']), /PUT/);
    assert.match(String(pre.headers['access-control-allow-methods']), /DELETE/);
    assert.match(String(pre.headers.vary), /origin/i, 'caches keep answers for different origins apart');
    const put = await send(s.url, 'PUT', `/api/workflows/local-${i}`, { origin }, definition(`local-${i}`));
    assert.equal(put.status, 201, put.text);
    assert.equal(put.headers['access-control-allow-origin'], origin);
    assert.equal((await send(s.url, 'POST', `/api/workflows/local-${i}/run`, { origin })).status, 202);
    assert.equal((await send(s.url, 'POST', `/api/workflows/local-${i}/cancel`, { origin })).status, 202);
  }
});

test('without tokens, a request for a host name that is not this server’s is refused 421 (DNS rebinding)', async (t) => {
  const s = await serve(t);
  await victims(s.url);
  const port = new URL(s.url).port;
  // The rebound page is same-origin with itself: Origin and Host both name the attacker's domain.
  const host = `attacker.example:${port}`;
  const a = await driveBy(s.url, `http://${host}`, host);
  for (const [k, r] of Object.entries(a)) refused(r, 421, 'forbidden_host', k);
  assert.match(a.put!.body.message, /attacker\.example.*ALLOWED_HOSTS/);
  // Reading is refused too: the page could read its own origin's answers.
  for (const path of ['/api/workflows', '/api/workers', '/', '/healthz', '/api/workflows/busy/events']) {
    refused(await send(s.url, 'GET', path, { host }), 421, 'forbidden_host', `GET ${path}`);
  }
  for (const name of ['127.0.0.1.nip.io', 'localhost.attacker.example', 'x']) {
    refused(await send(s.url, 'GET', '/api/workflows', { host: `${name}:${port}` }), 421, 'forbidden_host', name);
  }
  await untouched(s.url);
  // The names and addresses this server is reached by.
  for (const ok of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, '10.0.0.7', `localhost.:${port}`]) {
    assert.equal((await send(s.url, 'GET', '/api/workflows', { host: ok })).status, 200, ok);
  }
});

test('ALLOWED_HOSTS adds names; the dashboard served under such a name may change things from its own origin', async (t) => {
  const s = await serve(t, { allowedHosts: ['weft.lan'] });
  const port = new URL(s.url).port;
  const host = `weft.lan:${port}`;
  assert.equal((await send(s.url, 'GET', '/api/workflows', { host })).status, 200);
  refused(await send(s.url, 'GET', '/api/workflows', { host: `sub.weft.lan:${port}` }), 421, 'forbidden_host', 'subdomain');
  // The page's own origin is not a loopback one, but it is this server: allowed.
  const own = await send(s.url, 'PUT', '/api/workflows/own', { host, origin: `http://${host}` }, definition('own'));
  assert.equal(own.status, 201, own.text);
  refused(await send(s.url, 'PUT', '/api/workflows/other', { host, origin: 'http://other.lan' }, definition('other')), 403, 'forbidden_origin', 'other origin');
});

test('on a wildcard bind without tokens the machine’s own name is accepted, other names are not', async (t) => {
  const s = await serve(t, { bindHost: '0.0.0.0' });
  const port = new URL(s.url).port;
  assert.equal((await send(s.url, 'GET', '/api/workflows', { host: `${os.hostname()}:${port}` })).status, 200);
  assert.equal((await send(s.url, 'GET', '/api/workflows', { host: `192.0.2.10:${port}` })).status, 200);
  refused(await send(s.url, 'GET', '/api/workflows', { host: `attacker.example:${port}` }), 421, 'forbidden_host', 'rebinding name');
});

test('with tokens and no CORS_ORIGINS every origin and host is allowed (the spec’s default); each request still needs its token', async (t) => {
  const s = await serve(t, { tokens: tokens() });
  await victims(s.url, admin);
  const pre = await send(s.url, 'OPTIONS', '/api/workflows/x', { origin: EVIL, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization, content-type' });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  // A page without the token gets nothing done.
  const a = await driveBy(s.url, EVIL);
  for (const k of ['put', 'create', 'run', 'cancel', 'delete']) assert.equal(a[k]!.status, 401, k);
  await untouched(s.url, admin);
  // With the token (a page the admin trusts with it) everything works, under any host name.
  const put = await send(s.url, 'PUT', '/api/workflows/x', { origin: EVIL, host: 'weft.example.com', ...admin }, definition('x'));
  assert.equal(put.status, 201, put.text);
  assert.equal(put.headers['access-control-allow-origin'], '*');
});

test('with tokens and ALLOWED_HOSTS the Host check is on as well', async (t) => {
  const s = await serve(t, { tokens: tokens(), allowedHosts: ['weft.example.com'] });
  assert.equal((await send(s.url, 'GET', '/api/workflows', { host: 'weft.example.com', ...admin })).status, 200);
  refused(await send(s.url, 'GET', '/api/workflows', { host: 'attacker.example', ...admin }), 421, 'forbidden_host', 'unlisted name');
});

test('CORS_ORIGINS lists exactly the origins allowed, with or without tokens', async (t) => {
  for (const withTokens of [false, true]) {
    const s = await serve(t, { corsOrigins: ['https://ci.example.com/'], tokens: withTokens ? tokens() : [] });
    const auth = withTokens ? admin : {};
    const origin = 'https://ci.example.com';
    const pre = await send(s.url, 'OPTIONS', '/api/workflows/listed', { origin, 'access-control-request-method': 'PUT' });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], origin);
    assert.equal((await send(s.url, 'PUT', '/api/workflows/listed', { origin, ...auth }, definition('listed'))).status, 201);
    for (const other of [EVIL, 'http://localhost:5173', 'http://ci.example.com']) {
      refused(await send(s.url, 'POST', '/api/workflows/listed/run', { origin: other, ...auth }), 403, 'forbidden_origin', `${other} (tokens: ${withTokens})`);
      refused(
        await send(s.url, 'OPTIONS', '/api/workflows/listed', { origin: other, 'access-control-request-method': 'DELETE' }),
        403,
        'forbidden_origin',
        `preflight from ${other}`,
      );
    }
  }
});

test('CORS_ORIGINS=* without tokens restores the spec’s default: every origin may call', async (t) => {
  const s = await serve(t, { corsOrigins: ['*'] });
  const pre = await send(s.url, 'OPTIONS', '/api/workflows/any', { origin: EVIL, 'access-control-request-method': 'PUT' });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  assert.equal((await send(s.url, 'PUT', '/api/workflows/any', { origin: EVIL }, definition('any'))).status, 201);
  // The Host check stays: a rebinding page is not a listed origin, it is a name this server is not.
  refused(await send(s.url, 'GET', '/api/workflows', { host: 'attacker.example' }), 421, 'forbidden_host', 'rebinding');
});

test('`weft server` as started by the quick start refuses the drive-by; CORS_ORIGINS=* warns at start; a bad ALLOWED_HOSTS stops it', async (t) => {
  const sb = sandbox(t);
  const quick = await serverProcess(t, sb);
  await victims(quick.url);
  const a = await driveBy(quick.url, EVIL);
  for (const k of ['preflight', 'put', 'create', 'run', 'cancel', 'delete']) refused(a[k]!, 403, 'forbidden_origin', k);
  const rebound = await driveBy(quick.url, `http://attacker.example:${quick.port}`, `attacker.example:${quick.port}`);
  for (const [k, r] of Object.entries(rebound)) refused(r, 421, 'forbidden_host', `rebound ${k}`);
  await untouched(quick.url);
  assert.doesNotMatch(quick.output(), /CORS_ORIGINS=\*/);
  quick.kill();
  await quick.exited;

  const open = await serverProcess(t, sb, { CORS_ORIGINS: '*' });
  await open.waitFor(/CORS_ORIGINS=\* without access tokens: any web page/);
  open.kill();
  await open.exited;
  const withTokens = await serverProcess(t, sb, { CORS_ORIGINS: '*', WEFT_ADMIN_TOKEN: ADMIN });
  assert.doesNotMatch(withTokens.output(), /CORS_ORIGINS=\*/);
  withTokens.kill();
  await withTokens.exited;

  const bad = spawnWeft(['server'], { ...sb.env, PORT: '0', ALLOWED_HOSTS: 'weft.lan, https://weft.lan:3000' }, sb.dir);
  assert.equal(await bad.exited, 2, bad.output());
  assert.match(bad.output(), /ALLOWED_HOSTS entry "https:\/\/weft\.lan:3000" is not valid/);
});

test('the dashboard page and its assets forbid framing and sniffing and limit what the page loads; API answers are nosniff', async (t) => {
  const s = await serve(t);
  const page = await send(s.url, 'GET', '/');
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /text\/html/);
  assert.equal(page.headers['content-security-policy'], DASHBOARD_CSP);
  for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"]) {
    assert.ok(DASHBOARD_CSP.includes(directive), directive);
  }
  assert.match(DASHBOARD_CSP, /connect-src 'self' http: https:/);
  assert.doesNotMatch(DASHBOARD_CSP, /script-src[^;]*unsafe/);
  assert.equal(page.headers['x-frame-options'], 'DENY');
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(page.headers['referrer-policy'], 'no-referrer');
  const script = /src="assets\/([^"]+\.js)"/.exec(page.text)?.[1];
  assert.ok(script, page.text);
  const asset = await send(s.url, 'GET', `/assets/${script}`);
  assert.equal(asset.status, 200);
  assert.equal(asset.headers['content-security-policy'], DASHBOARD_CSP);
  assert.equal(asset.headers['x-content-type-options'], 'nosniff');
  for (const path of ['/api/workflows', '/api/nothing', '/healthz']) {
    const r = await send(s.url, 'GET', path);
    assert.equal(r.headers['x-content-type-options'], 'nosniff', path);
  }
});
