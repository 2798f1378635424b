/**
 * LOG_FORMAT (README "Configuration"): JSON lines on a pipe, pino-pretty lines on a terminal or when
 * asked, for the server, the scheduler and the worker; the server's start line in every format and
 * at every level; a bad value stops the process naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { sandbox, serverProcess, spawnWeft, track, WEFT_BIN } from '../helpers/server.js';

const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

const linesOf = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

test('default on a pipe: every log line is a JSON object, the start line among them', async (t) => {
  const sb = sandbox(t, 'weft-logfmt-');
  const srv = await serverProcess(t, sb, { LOG_FORMAT: undefined });
  const lines = linesOf(srv.output());
  assert.ok(lines.length > 0);
  for (const l of lines) assert.ok(isJson(l), `not JSON: ${l}`);
  const start = lines.map((l) => JSON.parse(l)).find((o) => /^weft server listening on http:\/\//.test(o.msg));
  assert.ok(start, srv.output());
  assert.equal(start.port, srv.port);
});

test('LOG_FORMAT=pretty: readable lines with the message, for the server (at any level), the worker and the scheduler', async (t) => {
  const sb = sandbox(t, 'weft-logfmt-');
  const srv = await serverProcess(t, sb, { LOG_FORMAT: 'pretty' });
  const quiet = await serverProcess(t, sb, { LOG_FORMAT: 'PRETTY', LOG_LEVEL: 'silent', API_ONLY: '1' });
  for (const p of [srv, quiet]) {
    const lines = linesOf(p.output());
    assert.ok(lines.length > 0);
    for (const l of lines) assert.ok(!isJson(l), `JSON although pretty was asked for: ${l}`);
    assert.match(p.output(), /INFO.*weft server listening on http:\/\/127\.0\.0\.1:\d+/);
  }
  assert.equal(linesOf(quiet.output()).length, 1, `LOG_LEVEL=silent prints the start line alone:\n${quiet.output()}`);

  const worker = track(t, spawnWeft(['worker'], { SERVER_URL: srv.url, WORKER_ID: 'pretty-1', LOG_FORMAT: 'pretty' }, sb.dir));
  const sched = track(t, spawnWeft(['scheduler'], { ...sb.env, LOG_FORMAT: 'pretty' }, sb.dir));
  await worker.waitFor(/INFO.*weft worker pretty-1 started/);
  await sched.waitFor(/INFO.*weft scheduler started/);
  for (const p of [worker, sched]) {
    for (const l of linesOf(p.output())) assert.ok(!isJson(l), `JSON although pretty was asked for: ${l}`);
    p.kill('SIGTERM');
    assert.equal(await p.exited, 0, p.output());
  }
});

test('a bad LOG_FORMAT stops the server, the scheduler and the worker with a message naming it', async (t) => {
  const sb = sandbox(t, 'weft-logfmt-');
  const procs = [
    spawnWeft(['server'], { ...sb.env, PORT: '0', LOG_FORMAT: 'xml' }, sb.dir),
    spawnWeft(['scheduler'], { ...sb.env, LOG_FORMAT: 'xml' }, sb.dir),
    spawnWeft(['worker'], { SERVER_URL: 'http://127.0.0.1:9', LOG_FORMAT: 'xml' }, sb.dir),
  ].map((p) => track(t, p));
  for (const p of procs) {
    assert.equal(await p.exited, 2, p.output());
    assert.match(p.output(), /LOG_FORMAT="xml" is not valid/);
    assert.doesNotMatch(p.output(), /listening on|started/);
  }
});

const hasScript = spawnSync('script', ['--version']).status === 0;

test('on a terminal (util-linux `script`) the default is pretty', { skip: !hasScript && 'script (util-linux) not found' }, async (t) => {
  const sb = sandbox(t, 'weft-logfmt-');
  const env: NodeJS.ProcessEnv = { ...process.env, ...sb.env, LOG_LEVEL: 'info' };
  delete env.LOG_FORMAT;
  for (const [k, v] of Object.entries(sb.env)) if (v === undefined) delete env[k];
  const proc = spawn('script', ['-q', '-c', `exec "${process.execPath}" "${WEFT_BIN}" scheduler`, '/dev/null'], {
    cwd: sb.dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((r) => proc.once('exit', r));
  t.after(async () => {
    proc.kill('SIGKILL');
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line on the terminal within 15 s:\n${out}`)), 15_000);
    const check = () => {
      if (!/weft scheduler started/.test(out)) return;
      clearTimeout(timer);
      proc.stdout.off('data', check);
      resolve();
    };
    proc.stdout.on('data', check);
  });
  const line = linesOf(out).find((l) => l.includes('weft scheduler started'))!;
  assert.ok(!isJson(line.trim()), line);
  assert.match(line, /INFO/);
  // `script` ends the session it runs on SIGTERM.
  proc.kill('SIGTERM');
  await exited;
});
