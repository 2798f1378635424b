/**
 * The artifact routes (README "Artifacts", docs/api.md "Artifacts") against a real server over real
 * HTTP: uploads checked against their SHA-256 and MAX_ARTIFACT_BYTES, refused unless the lease is
 * live and held by the caller's token, names that could leave a directory refused, listings of only a
 * successful attempt's artifacts, and downloads whole or by Range.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { hashToken, parseTokenHash, type TokenEntry } from '../../src/domain/access.js';
import { request } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Put {
  status: number;
  body: any;
}

/** PUT an artifact with fetch, the body streamed in pieces (not one buffer). */
async function put(base: string, leaseId: string, name: string, data: Buffer, opts: { sha?: string; headers?: Record<string, string> } = {}): Promise<Put> {
  async function* pieces() {
    for (let i = 0; i < data.length; i += 64 * 1024) yield data.subarray(i, i + 64 * 1024);
  }
  const res = await fetch(`${base}/api/jobs/${encodeURIComponent(leaseId)}/artifacts/${encodeURIComponent(name)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'x-weft-sha256': opts.sha ?? sha(data), ...opts.headers },
    body: pieces() as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function setUp(t: TestContext, opts: Parameters<typeof startInProcess>[0] = {}, headers: Record<string, string> = {}) {
  const s = await startInProcess(opts);
  t.after(() => s.close());
  const created = await request('POST', `${s.url}/api/workflows`, {
    id: 'wf',
    jobs: [
      { id: 'build', command: 'true', max_retries: 2 },
      { id: 'test', command: 'true', depends_on: ['build'] },
    ],
  }, headers);
  assert.equal(created.status, 201, created.text);
  assert.equal((await request('POST', `${s.url}/api/workflows/wf/run`, undefined, headers)).status, 202);
  return s;
}

async function claim(base: string, headers: Record<string, string> = {}, ttl = 30) {
  const r = await request('POST', `${base}/api/jobs/claim`, { worker_id: 'w1', labels: [], lease_ttl_secs: ttl }, headers);
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body, 'a job to claim');
  return r.body as { job: any; lease: { lease_id: string } };
}

test('an upload is stored with its SHA-256; a download answers the same bytes, whole and by Range', async (t) => {
  const s = await setUp(t);
  const c = await claim(s.url);
  // Over two chunks of 1 MiB, so that a range crosses a chunk boundary.
  const data = randomBytes(2 * 1024 * 1024 + 12345);
  const up = await put(s.url, c.lease.lease_id, 'dist/app.tar', data);
  assert.equal(up.status, 201, JSON.stringify(up.body));
  assert.deepEqual([up.body.name, up.body.size, up.body.sha256, up.body.job_id], ['dist/app.tar', data.length, sha(data), 'build']);
  // Not listed before the attempt succeeds.
  assert.deepEqual((await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts`)).body.artifacts, []);
  assert.equal((await request('POST', `${s.url}/api/jobs/${c.lease.lease_id}/complete`, {})).status, 200);

  const list = await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts`);
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(
    list.body.artifacts.map((a: any) => [a.job_id, a.name, a.size, a.sha256]),
    [['build', 'dist/app.tar', data.length, sha(data)]],
  );
  assert.equal(typeof list.body.artifacts[0].created_at_ms, 'number');

  const url = `${s.url}/api/workflows/wf/runs/1/artifacts/build/${encodeURIComponent('dist/app.tar')}`;
  const whole = await fetch(url);
  assert.equal(whole.status, 200);
  assert.equal(whole.headers.get('content-type'), 'application/octet-stream');
  assert.equal(whole.headers.get('x-weft-sha256'), sha(data));
  assert.equal(whole.headers.get('accept-ranges'), 'bytes');
  assert.match(whole.headers.get('content-disposition') ?? '', /attachment; filename="app.tar"/);
  assert.ok(Buffer.from(await whole.arrayBuffer()).equals(data), 'the same bytes');

  // The name is one path segment: its `/` must come encoded.
  assert.equal((await fetch(`${s.url}/api/workflows/wf/runs/1/artifacts/build/dist/app.tar`)).status, 404);

  for (const [range, from, to] of [
    ['bytes=1048570-1048590', 1048570, 1048590],
    ['bytes=2097000-', 2097000, data.length - 1],
    ['bytes=-100', data.length - 100, data.length - 1],
    ['bytes=0-99999999', 0, data.length - 1],
  ] as const) {
    const r = await fetch(url, { headers: { range } });
    assert.equal(r.status, 206, range);
    assert.equal(r.headers.get('content-range'), `bytes ${from}-${to}/${data.length}`, range);
    assert.equal(r.headers.get('content-length'), String(to - from + 1), range);
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(data.subarray(from, to + 1)), `bytes of ${range}`);
  }
  const beyond = await fetch(url, { headers: { range: `bytes=${data.length}-` } });
  assert.equal(beyond.status, 416);
  assert.equal(beyond.headers.get('content-range'), `bytes */${data.length}`);
  assert.equal(((await beyond.json()) as any).error, 'range_not_satisfiable');

  const missing = await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts/build/nope`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'artifact_not_found');
  assert.equal((await request('GET', `${s.url}/api/workflows/wf/runs/9/artifacts`)).body.error, 'run_not_found');
  assert.equal((await request('GET', `${s.url}/api/workflows/nope/runs/1/artifacts`)).body.error, 'workflow_not_found');

  // The dependent's claim names what it may download.
  const next = await claim(s.url);
  assert.equal(next.job.job_id, 'test');
  assert.equal(next.job.downloads, undefined, 'a job without artifacts: or download: gets the claim answer it always got');
});

test('a body that does not hash to x-weft-sha256 is refused and nothing is stored; the same name twice replaces', async (t) => {
  const s = await setUp(t);
  const c = await claim(s.url);
  const data = randomBytes(1500 * 1024);
  const bad = await put(s.url, c.lease.lease_id, 'a.bin', data, { sha: sha(Buffer.from('other')) });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'artifact_checksum_mismatch');
  const noSha = await put(s.url, c.lease.lease_id, 'a.bin', data, { sha: 'xyz' });
  assert.equal(noSha.status, 400);
  assert.match(noSha.body.message, /x-weft-sha256/);
  const second = randomBytes(10);
  assert.equal((await put(s.url, c.lease.lease_id, 'b.bin', data)).status, 201);
  assert.equal((await put(s.url, c.lease.lease_id, 'b.bin', second)).status, 201);
  assert.equal((await request('POST', `${s.url}/api/jobs/${c.lease.lease_id}/complete`, {})).status, 200);
  const list = await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts?job=build`);
  assert.deepEqual(list.body.artifacts.map((a: any) => [a.name, a.size, a.sha256]), [['b.bin', 10, sha(second)]]);
  // Of the refused upload and the replaced one nothing remains: only b.bin's one chunk is stored.
  const chunks = s.store['db'].prepare('SELECT count(*) AS n FROM artifact_chunks').get() as { n: number };
  assert.equal(chunks.n, 1);
});

test('MAX_ARTIFACT_BYTES: a larger upload is refused 413 as it streams (or at once by its Content-Length); nothing is stored', async (t) => {
  const s = await setUp(t, { maxArtifactBytes: 3 * 1024 * 1024 });
  const c = await claim(s.url);
  const big = randomBytes(3 * 1024 * 1024 + 1);
  // Streamed without a length: the server counts.
  const streamed = await put(s.url, c.lease.lease_id, 'big.bin', big);
  assert.equal(streamed.status, 413);
  assert.equal(streamed.body.error, 'artifact_too_large');
  assert.match(streamed.body.message, /MAX_ARTIFACT_BYTES/);
  const declared = await fetch(`${s.url}/api/jobs/${c.lease.lease_id}/artifacts/big.bin`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'x-weft-sha256': sha(big) },
    body: big,
  });
  assert.equal(declared.status, 413);
  assert.equal(((await declared.json()) as any).error, 'artifact_too_large');
  const exact = randomBytes(3 * 1024 * 1024);
  assert.equal((await put(s.url, c.lease.lease_id, 'exact.bin', exact)).status, 201, 'exactly the cap is allowed');
  const chunks = s.store['db'].prepare('SELECT count(*) AS n FROM artifact_chunks').get() as { n: number };
  assert.equal(chunks.n, 3, 'only the 3 chunks of the upload that fits');
});

test('artifact names that could leave a directory are refused', async (t) => {
  const s = await setUp(t);
  const c = await claim(s.url);
  const data = Buffer.from('x');
  for (const name of ['../escape', 'a/../../b', '/etc/passwd', 'a//b', 'a/./b', 'dir\\x', 'nul\u0000byte', 'line\nbreak', 'x'.repeat(256), 'trailing/']) {
    const r = await put(s.url, c.lease.lease_id, name, data);
    assert.equal(r.status, 400, `${JSON.stringify(name)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error, name === '' ? 'invalid_request' : 'invalid_artifact_name', JSON.stringify(name));
  }
  assert.equal((await put(s.url, c.lease.lease_id, 'ok/dir/file name (1).txt', data)).status, 201);
});

test('only a live lease uploads: an unknown, completed or expired lease is refused with the lease call codes', async (t) => {
  let clock = Date.now();
  const s = await setUp(t, { now: () => clock });
  const data = Buffer.from('hello');
  const unknown = await put(s.url, 'no-such-lease', 'a.txt', data);
  assert.deepEqual([unknown.status, unknown.body.error], [409, 'lease_not_found']);

  const c = await claim(s.url, {}, 5);
  clock += 6000;
  const expired = await put(s.url, c.lease.lease_id, 'a.txt', data);
  assert.deepEqual([expired.status, expired.body.error], [409, 'lease_expired']);
  // The expiry put the job back (it has retries): the next attempt uploads, and only its artifacts count.
  const again = await claim(s.url);
  assert.equal(again.job.attempt, 1);
  assert.equal((await put(s.url, again.lease.lease_id, 'a.txt', data)).status, 201);
  assert.equal((await request('POST', `${s.url}/api/jobs/${again.lease.lease_id}/complete`, {})).status, 200);
  const done = await put(s.url, again.lease.lease_id, 'late.txt', data);
  assert.deepEqual([done.status, done.body.error], [409, 'lease_completed']);
  const list = await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts`);
  assert.deepEqual(list.body.artifacts.map((a: any) => a.name), ['a.txt']);
});

test('with tokens: only the token that claimed the lease uploads (403 lease_not_yours); a read token downloads, a worker token downloads too', async (t) => {
  const T = { admin: 'art-admin-token-0123456789', a: 'art-worker-a-token-0123456789', b: 'art-worker-b-token-0123456789', read: 'art-read-token-0123456789' };
  const e = (name: string, role: TokenEntry['role'], token: string): TokenEntry => ({ name, role, hash: parseTokenHash(hashToken(token))! });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const s = await setUp(t, { tokens: [e('admin', 'admin', T.admin), e('a', 'worker', T.a), e('b', 'worker', T.b), e('r', 'read', T.read)] }, bearer(T.admin));
  const c = await claim(s.url, bearer(T.a));
  const data = randomBytes(2000);
  const other = await put(s.url, c.lease.lease_id, 'x.bin', data, { headers: bearer(T.b) });
  assert.deepEqual([other.status, other.body.error], [403, 'lease_not_yours']);
  const reader = await put(s.url, c.lease.lease_id, 'x.bin', data, { headers: bearer(T.read) });
  assert.deepEqual([reader.status, reader.body.error], [403, 'forbidden']);
  const none = await put(s.url, c.lease.lease_id, 'x.bin', data);
  assert.equal(none.status, 401);
  assert.equal((await put(s.url, c.lease.lease_id, 'x.bin', data, { headers: bearer(T.a) })).status, 201);
  assert.equal((await request('POST', `${s.url}/api/jobs/${c.lease.lease_id}/complete`, {}, bearer(T.a))).status, 200);

  const path = '/api/workflows/wf/runs/1/artifacts/build/x.bin';
  assert.equal((await fetch(s.url + path)).status, 401);
  for (const token of [T.read, T.b, T.admin]) {
    const r = await fetch(s.url + path, { headers: bearer(token) });
    assert.equal(r.status, 200);
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(data));
  }
  assert.equal((await request('GET', `${s.url}/api/workflows/wf/runs/1/artifacts`, undefined, bearer(T.read))).status, 200);
});

test('an upload may take longer than REQUEST_TIMEOUT_SECS (a large file rightly does); other slow requests are still cut', async (t) => {
  const s = await setUp(t, { requestTimeoutMs: 1000 });
  const c = await claim(s.url);
  const data = randomBytes(40 * 1024);
  async function* slowly() {
    for (let i = 0; i < data.length; i += 4096) {
      yield data.subarray(i, i + 4096);
      // 10 pieces over about 2.5 s: well past the 1 s request timeout.
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const started = Date.now();
  const res = await fetch(`${s.url}/api/jobs/${c.lease.lease_id}/artifacts/slow.bin`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'x-weft-sha256': sha(data) },
    body: slowly() as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit);
  assert.equal(res.status, 201, await res.text());
  assert.ok(Date.now() - started > 1000, 'the upload outlasted the request timeout');
  // A JSON body trickled as slowly is still cut at the request timeout.
  async function* slowJson() {
    yield Buffer.from('{"outputs":');
    await new Promise((r) => setTimeout(r, 2500));
    yield Buffer.from('{}}');
  }
  const cut = await fetch(`${s.url}/api/jobs/${c.lease.lease_id}/complete`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: slowJson() as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit).then((r) => r.status, () => 'reset');
  assert.ok(cut === 408 || cut === 'reset', `a slow JSON body is cut (got ${cut})`);
});
