/**
 * LOG_LEVEL=debug (and trace) logs every request once answered, with its request id, method, route,
 * path, status, time taken and token name, never the token; info and above log no request line
 * (README "Configuration"). Real `weft server` processes, JSON log lines. Needs `npm run build` first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, until } from '../helpers/http.js';
import { openSse } from '../helpers/sse.js';
import { sandbox, serverProcess } from '../helpers/server.js';

const TOKEN = 'req-log-admin-token-0123456789abcdef';
const auth = (id: string) => ({ authorization: `Bearer ${TOKEN}`, 'x-request-id': id });

interface Line {
  level: number;
  reqId?: string;
  msg: string;
  [k: string]: unknown;
}

const lines = (output: string): Line[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

test('LOG_LEVEL=debug: a 404, a 400, a 201, a 401 and an event stream each leave one line with their id and status, and no token', async (t) => {
  const sb = sandbox(t, 'weft-reqlog-');
  const srv = await serverProcess(t, sb, { LOG_LEVEL: 'debug', LOG_FORMAT: 'json', WEFT_ADMIN_TOKEN: TOKEN });
  const u = (p: string) => `${srv.url}${p}`;

  assert.equal((await request('GET', u('/api/workflows/nope?secret=query-text'), undefined, auth('rl-404'))).status, 404);
  assert.equal((await request('POST', u('/api/workflows'), { jobs: 'not a map' }, auth('rl-400'))).status, 400);
  assert.equal((await request('POST', u('/api/workflows'), { id: 'rl', jobs: { a: { run: 'true' } } }, auth('rl-201'))).status, 201);
  assert.equal((await request('GET', u('/api/workflows'), undefined, { authorization: 'Bearer not-a-token-at-all', 'x-request-id': 'rl-401' })).status, 401);
  const stream = await openSse(u('/api/events'), auth('rl-sse'));
  assert.equal(stream.status, 200);
  stream.close();

  const of = (id: string) => lines(srv.output()).filter((l) => l.reqId === id && l.level === 20 && typeof l.status === 'number');
  const want: Array<[string, number, string, string | null, string, boolean]> = [
    // id, status, method, route, path, authenticated
    ['rl-404', 404, 'GET', '/api/workflows/:id', '/api/workflows/nope', true],
    ['rl-400', 400, 'POST', '/api/workflows', '/api/workflows', true],
    ['rl-201', 201, 'POST', '/api/workflows', '/api/workflows', true],
    ['rl-401', 401, 'GET', '/api/workflows', '/api/workflows', false],
    ['rl-sse', 200, 'GET', '/api/events', '/api/events', true],
  ];
  for (const [id, status, method, route, path, authenticated] of want) {
    const [line] = await until(() => (of(id).length > 0 ? of(id) : null), `the request line of ${id}`, 15_000);
    assert.equal(of(id).length, 1, `one line for ${id}`);
    assert.deepEqual([line!.status, line!.method, line!.route, line!.path], [status, method, route, path], JSON.stringify(line));
    assert.equal(typeof line!.response_time_ms, 'number', JSON.stringify(line));
    assert.equal(line!.token, authenticated ? 'WEFT_ADMIN_TOKEN' : undefined, `token name of ${id}: ${JSON.stringify(line)}`);
  }
  const out = srv.output();
  assert.ok(!out.includes(TOKEN), 'the token never reaches the log');
  assert.ok(!out.includes('not-a-token-at-all'), 'nor a refused one');
  assert.ok(!out.includes('query-text'), 'nor the query string');
});

test('LOG_LEVEL=info logs no request lines', async (t) => {
  const sb = sandbox(t, 'weft-reqlog-');
  const srv = await serverProcess(t, sb, { LOG_LEVEL: 'info', LOG_FORMAT: 'json' });
  assert.equal((await request('GET', `${srv.url}/api/workflows/nope`, undefined, { 'x-request-id': 'quiet-404' })).status, 404);
  assert.equal((await request('POST', `${srv.url}/api/workflows`, { id: 'q', jobs: { a: { run: 'true' } } }, { 'x-request-id': 'quiet-201' })).status, 201);
  // A line logged while handling a later request: had the requests before it been logged, their lines would be in.
  assert.equal((await request('DELETE', `${srv.url}/api/workflows/q`)).status, 200);
  await until(() => srv.output().includes('workflow deleted'), 'the info line of the deletion', 10_000);
  assert.deepEqual(lines(srv.output()).filter((l) => typeof l.reqId === 'string' && typeof l.status === 'number'), []);
});
