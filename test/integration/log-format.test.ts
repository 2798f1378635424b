/**
 * LOG_FORMAT (README "Configuration"): JSON lines on a pipe, pino-pretty lines on a terminal or when
 * asked, for the server, the scheduler and the worker; the server's start line in every format and
 * at every level; a bad value stops the process naming it; a stdout nobody reads costs lines, never a
 * blocked process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, sandbox, serverProcess, spawnWeft, track, WEFT_BIN } from '../helpers/server.js';

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

test('a stdout nobody reads holds lines up to a bound, drops the rest, and counts them once read again', async (t) => {
  const sb = sandbox(t, 'weft-logfmt-');
  const fifo = path.join(sb.dir, 'out');
  execFileSync('mkfifo', [fifo]);
  // Held open by the test, so the pipe has a reader that does not read (yet).
  const fd = fs.openSync(fifo, 'r+');
  t.after(() => fs.closeSync(fd));
  const logger = path.join(ROOT, 'dist', 'runtime', 'logger.js');
  const script = `
    const { createLogger } = await import(${JSON.stringify(logger)});
    const log = createLogger('info', 'flood');
    const big = 'x'.repeat(120000);
    for (let i = 0; i < 12; i++) log.info({ big }, 'line ' + i);
    process.stderr.write('all written\\n');`;
  const writer = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', fd, 'pipe'] });
  t.after(() => writer.kill('SIGKILL'));
  let err = '';
  await new Promise<void>((resolve, reject) => {
    writer.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('all written')) resolve();
    });
    writer.once('exit', () => reject(new Error(`the writer exited early: ${err}`)));
  });
  // Now a reader comes (a description of its own, as at the end of a shell pipeline).
  const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => reader.kill('SIGKILL'));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no drop warning within 15 s; read ${out.length} bytes`)), 15_000);
    reader.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/log line\(s\) dropped/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const lines = linesOf(out.slice(0, out.lastIndexOf('\n'))).map((l) => JSON.parse(l) as { msg: string; dropped_lines?: number });
  const kept = lines.filter((l) => l.msg.startsWith('line '));
  // Whole lines, in order, from the first: what is dropped is the newest.
  assert.deepEqual(kept.map((l) => l.msg), kept.map((_, i) => `line ${i}`));
  assert.ok(kept.length >= 8 && kept.length < 12, `kept ${kept.length} of 12 lines of 120 KB`);
  const warning = lines.find((l) => l.dropped_lines !== undefined);
  assert.equal(warning?.dropped_lines, 12 - kept.length);
});
