/**
 * What a worker or a job writes reaches the terminal of whoever runs `weft status`, `weft logs`,
 * `weft run --follow` or `weft workers`. Escape sequences in it (OSC 8 links, OSC 0 window titles,
 * cursor movement, BEL) must not: only colour (SGR) and line breaks go through. The test plays a
 * hostile worker over HTTP against a spawned server and runs the real CLI. Needs `npm run build` first.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/http.js';
import { fileServer, startCli } from '../helpers/cli.js';
import { terminalLine, terminalText } from '../../src/cli/terminal-text.js';

const server = fileServer('weft-cli-term-');

const RED = '\x1b[31mred\x1b[0m';
/** A link hiding its target, a window title, cursor movement (up, erase line, home, hide cursor), a bell, a C1 CSI. */
const HOSTILE =
  `boom \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x1b]0;pwned title\x07` +
  `\x1b[2A\x1b[2K\x1b[1;1H\x1b[?25l\x07\u009b2J ${RED} \x1b[38:2::1:2:3mend`;

/** Every escape left is a plain SGR, and nothing else a terminal would act on is there. */
function assertInert(text: string, what: string): void {
  const stripped = text.replace(/\x1b\[[0-9;]*m/g, '');
  assert.doesNotMatch(stripped, /[\x00-\x08\x0b-\x1f\x7f-\x9f]/, `${what} carries control characters: ${JSON.stringify(text)}`);
  assert.ok(!text.includes('evil.example'), `${what} carries the hidden link target: ${JSON.stringify(text)}`);
  assert.ok(!text.includes('pwned title'), `${what} carries the window title: ${JSON.stringify(text)}`);
}

/** `weft <args>` with colours off; `done` when it exits. */
function weft(t: TestContext, args: string[], env: Record<string, string> = {}) {
  const proc = startCli(t, server, args, { NO_COLOR: '1', ...env });
  return { proc, done: proc.finished };
}

test('status, logs, run --follow and workers print a hostile error and log without their escape sequences, keeping colours', async (t) => {
  const id = 'hostile-text';
  await server.api.createWorkflow({ id, jobs: { bad: { run: 'false' } } });
  const worker = 'evil\u009b2Jworker';
  const follow = await weft(t, ['run', id, '--follow']);

  const c = await until(() => server.api.claim(worker, ['x\u009d0;t\u009c'], 30), 'the job to be claimable');
  const lease = c.lease.lease_id as string;
  const logs = await server.api.post(`/api/jobs/${lease}/logs`, { chunks: [{ sequence: 0, data: `out ${HOSTILE}\nprogress 50%\rprogress 100%\n`, stream: 'stdout' }] });
  assert.equal(logs.status, 200, logs.text);
  // While it runs, `weft workers` shows the worker's id and labels.
  const workers = await (await weft(t, ['workers'])).done;
  assert.equal(workers.code, 0, workers.stderr);
  assertInert(workers.stdout, 'weft workers');
  assert.match(workers.stdout, /evilworker/);

  const failed = await server.api.post(`/api/jobs/${lease}/fail`, { error: HOSTILE, retryable: false });
  assert.equal(failed.status, 200, failed.text);

  const run = await follow.done;
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assertInert(run.stdout + run.stderr, 'weft run --follow');
  assert.ok(run.stdout.includes(RED), `colour kept in the followed log: ${JSON.stringify(run.stdout)}`);
  // A lone carriage return cannot draw over the `bad | ` prefix: it starts a line of its own.
  assert.match(run.stdout, /^bad \| progress 100%$/m);

  const status = await (await weft(t, ['status', id])).done;
  assert.equal(status.code, 0, status.stderr);
  assertInert(status.stdout, 'weft status');
  assert.ok(status.stdout.includes(RED), `colour kept in the error: ${JSON.stringify(status.stdout)}`);
  assert.match(status.stdout, /boom click/);

  const log = await (await weft(t, ['logs', id, 'bad'])).done;
  assert.equal(log.code, 0, log.stderr);
  assertInert(log.stdout, 'weft logs');
  assert.ok(log.stdout.includes(`out boom click  ${RED} `), `colour kept in the log: ${JSON.stringify(log.stdout)}`);
  assert.match(log.stdout, /^progress 100%$/m);
});

test('terminalText keeps SGR, newlines and tabs, and drops whole sequences', () => {
  assert.equal(terminalText('a\tb\nc'), 'a\tb\nc');
  assert.equal(terminalText(`x${RED}y`), `x${RED}y`);
  assert.equal(terminalText('\u009b1;31mC1 red'), '\x1b[1;31mC1 red');
  assert.equal(terminalText('a\x1b]8;;http://x/\x07link\x1b]8;;\x07b'), 'alinkb');
  assert.equal(terminalText('t\x1bP1$r\x1b\\u'), 'tu');
  assert.equal(terminalText('a\x1b[2Jb\x1b7c\x1b(Bd\x1b'), 'abcd');
  assert.equal(terminalText('cut \x1b]0;title never ended'), 'cut ');
  assert.equal(terminalText('one\r\ntwo\rthree\x08\x7f'), 'one\ntwo\nthree');
  assert.equal(terminalLine('a\nb\tc\x07'), 'a b c');
});
