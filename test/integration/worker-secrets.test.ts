/**
 * A job cannot learn `weft worker`'s token (README "Access tokens"): the attack of a job reading
 * `/proc/$PPID/environ`, and every ancestor's environ and cmdline above it, reproduced with the token
 * given as WEFT_TOKEN and as WEFT_TOKEN_FILE; and JOB_USER running jobs as `nobody`, who can read
 * neither a root-owned token file nor the worker's /proc files.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hashToken, parseTokenHash } from '../../src/domain/access.js';
import { request } from '../helpers/http.js';
import { sandbox, spawnWeft, startInProcess, track, type InProcessServer } from '../helpers/server.js';

const ADMIN = 'secrets-admin-token-0123456789';
const WORKER = 'weft_secretsWorkerTokenValue0123456789abcdefgh';
const admin = { authorization: `Bearer ${ADMIN}` };

async function server(t: TestContext): Promise<InProcessServer> {
  const s = await startInProcess({
    tokens: [
      { name: 'admin-1', role: 'admin', hash: parseTokenHash(hashToken(ADMIN))! },
      { name: 'worker-1', role: 'worker', hash: parseTokenHash(hashToken(WORKER))! },
    ],
  });
  t.after(() => s.close());
  return s;
}

/** A directory any user may write into, for what a job running as `nobody` reports. */
function dropBox(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-dropbox-'));
  fs.chmodSync(dir, 0o777);
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The job: from its shell's parent (the worker) up to pid 1, every ancestor's pid, then its environ
 * and cmdline as far as they can be read, into `out`.
 */
const WALK_ANCESTORS = [
  'p=$PPID',
  'while [ -n "$p" ] && [ "$p" -gt 1 ]; do',
  '  echo "== pid $p"',
  '  tr "\\0" "\\n" < /proc/$p/environ || echo "environ unreadable"',
  '  tr "\\0" " " < /proc/$p/cmdline; echo',
  '  p=$(sed -n "s/^PPid:[[:space:]]*//p" /proc/$p/status)',
  'done',
].join('\n');

async function runJob(s: InProcessServer, id: string, command: string): Promise<void> {
  const created = await request('POST', `${s.url}/api/workflows`, { id, jobs: [{ id: 'job', command }] }, admin);
  assert.equal(created.status, 201, created.text);
  assert.equal((await request('POST', `${s.url}/api/workflows/${id}/run`, undefined, admin)).status, 202);
  const deadline = Date.now() + 30_000;
  let doc = (await request('GET', `${s.url}/api/workflows/${id}/status`, undefined, admin)).body;
  while (doc.status === 'running' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    doc = (await request('GET', `${s.url}/api/workflows/${id}/status`, undefined, admin)).body;
  }
  assert.equal(doc.status, 'success', JSON.stringify(doc.jobs));
}

function startWorker(t: TestContext, cwd: string, s: InProcessServer, env: Record<string, string | undefined>) {
  return track(
    t,
    spawnWeft(['worker'], { SERVER_URL: s.url, WORKER_ID: 'secret-keeper', LONG_POLL_SECS: '1', WEFT_TOKEN: undefined, WEFT_TOKEN_FILE: undefined, JOB_USER: undefined, ...env }, cwd),
  );
}

for (const via of ['WEFT_TOKEN', 'WEFT_TOKEN_FILE'] as const) {
  test(`with ${via}, a job walking /proc from its worker up to pid 1 finds the token in no environ or cmdline`, async (t) => {
    const sb = sandbox(t);
    const s = await server(t);
    const out = path.join(sb.dir, 'ancestors.txt');
    let env: Record<string, string>;
    if (via === 'WEFT_TOKEN') {
      env = { WEFT_TOKEN: WORKER };
    } else {
      const file = path.join(sb.dir, 'worker.token');
      fs.writeFileSync(file, `${WORKER}\n`, { mode: 0o600 });
      env = { WEFT_TOKEN_FILE: file };
    }
    const w = startWorker(t, sb.dir, s, env);
    await w.waitFor(/weft worker \S+ started/);
    await runJob(s, 'walk', `{\n${WALK_ANCESTORS}\n} > ${out} 2>&1; echo "own=\${WEFT_TOKEN:-none}"`);
    const seen = fs.readFileSync(out, 'utf8');
    // The walk did read the worker's start-up environment, so finding nothing means something.
    assert.match(seen, new RegExp(`SERVER_URL=${s.url.replace(/\./g, '\\.')}`), seen.slice(0, 2000));
    assert.match(seen, /bin\/weft worker/, 'the worker is among the ancestors');
    assert.ok(!seen.includes(WORKER), `the token is readable by a job:\n${seen.slice(0, 4000)}`);
    assert.ok(!seen.includes(WORKER.slice(5, 30)), 'not even part of it');
    if (via === 'WEFT_TOKEN') assert.match(seen, /^WEFT_TOKEN=\*{10,}$/m, 'the variable is there, its value overwritten');
    const logs = await request('GET', `${s.url}/api/workflows/walk/jobs/job/logs`, undefined, admin);
    assert.match(JSON.stringify(logs.body), /own=none/, 'nor is it in the job’s own environment');
    assert.ok(!w.output().includes(WORKER), 'the worker never prints it');
    assert.doesNotMatch(w.output(), /could not be removed/);
  });
}

test('a worker token file others may read draws a warning; WEFT_TOKEN and WEFT_TOKEN_FILE together, or an empty file, stop the worker', async (t) => {
  const sb = sandbox(t);
  const s = await server(t);
  const file = path.join(sb.dir, 'worker.token');
  fs.writeFileSync(file, `${WORKER}\n`, { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  const w = startWorker(t, sb.dir, s, { WEFT_TOKEN_FILE: file });
  await w.waitFor(/WEFT_TOKEN_FILE=\\?".*worker\.token\\?" is accessible to its group or to other users \(mode 644\)/);
  w.kill('SIGTERM');
  await w.exited;

  const both = startWorker(t, sb.dir, s, { WEFT_TOKEN_FILE: file, WEFT_TOKEN: WORKER });
  assert.equal(await both.exited, 2);
  assert.match(both.output(), /WEFT_TOKEN and WEFT_TOKEN_FILE are both set/);
  const empty = path.join(sb.dir, 'empty.token');
  fs.writeFileSync(empty, '\n', { mode: 0o600 });
  const none = startWorker(t, sb.dir, s, { WEFT_TOKEN_FILE: empty });
  assert.equal(await none.exited, 2);
  assert.match(none.output(), /WEFT_TOKEN_FILE=".*empty\.token" is empty/);
  for (const p of [both, none]) assert.ok(!p.output().includes(WORKER));
});

const isRoot = process.getuid?.() === 0;

test('JOB_USER=nobody: jobs run as nobody and can read neither the root-owned token file nor the worker’s /proc files', { skip: !isRoot && 'needs root' }, async (t) => {
  const sb = sandbox(t);
  const s = await server(t);
  const file = path.join(sb.dir, 'worker.token');
  fs.writeFileSync(file, `${WORKER}\n`, { mode: 0o600 });
  // The sandbox itself is 0700: the job could not even reach the file; open the way to test the file's own mode.
  fs.chmodSync(sb.dir, 0o755);
  const box = dropBox(t);
  const out = path.join(box, 'seen.txt');
  const w = startWorker(t, box, s, { WEFT_TOKEN_FILE: file, JOB_USER: 'nobody' });
  await w.waitFor(/weft worker \S+ started/);
  await runJob(
    s,
    'asnobody',
    [
      `{ echo "uid=$(id -u) gid=$(id -g) home=$HOME user=$USER"`,
      `  cat ${file} || echo "token file unreadable"`,
      `  cat /proc/$PPID/environ || echo "worker environ unreadable"`,
      `  head -c 64 /proc/$PPID/mem || echo "worker memory unreadable"`,
      `  kill -0 $PPID || echo "worker not signalable"`,
      `} > ${out} 2>&1`,
    ].join('\n'),
  );
  const seen = fs.readFileSync(out, 'utf8');
  assert.match(seen, /^uid=65534 gid=65534 home=\/nonexistent user=nobody$/m, seen);
  assert.match(seen, /token file unreadable/, seen);
  assert.match(seen, /worker environ unreadable/, seen);
  assert.match(seen, /worker memory unreadable/, seen);
  assert.match(seen, /worker not signalable/, seen);
  assert.ok(!seen.includes(WORKER), seen);
  assert.match(w.output(), /"job_user":"nobody"/);
});

test('JOB_USER naming no user, or root, stops the worker at start', async (t) => {
  const sb = sandbox(t);
  const s = await server(t);
  for (const [user, message] of [
    ['no-such-user-here', /JOB_USER="no-such-user-here" is not valid: no such user/],
    ['bad name!', /JOB_USER="bad name!" is not valid: expected a user name or a numeric uid/],
    ...(isRoot ? ([['root', /JOB_USER="root" is root/]] as const) : []),
  ] as const) {
    const p = startWorker(t, sb.dir, s, { JOB_USER: user });
    assert.equal(await p.exited, 2, p.output());
    assert.match(p.output(), message);
  }
});
