import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pino } from 'pino';
import { createShellHandler, ShellCommandError } from '../../src/worker/shell.js';
import { LauncherDiedError, launcherPid, stopLauncher } from '../../src/worker/launcher.js';
import { parseSetOutput } from '../../src/worker/outcome.js';
import type { JobContext } from '../../src/worker/worker-api.js';
import type { ClaimedJob } from '../../src/protocol/wire.js';
import { until } from '../helpers/http.js';
import { alive } from '../helpers/process.js';
import { ROOT } from '../helpers/server.js';

// The shell handler starts every command through the worker's process launcher
// (src/worker/launcher.ts, docs/performance.md "Real workers"), a process of its own. These tests
// hold it to what the handler did when it forked the commands itself: every output, log line and exit
// code reaches the right job however many run at once, an abort kills the whole group, a launcher
// that dies fails its jobs clearly and is replaced, and nothing is left running when the worker ends.

function job(command: string, i = 0): ClaimedJob {
  return { workflow_id: 'w', job_id: `j${i}`, run_number: 1, attempt: 0, command, env: { N: String(i) }, upstream_outputs: {} } as unknown as ClaimedJob;
}

function context(j: ClaimedJob, controller = new AbortController()): { ctx: JobContext; lines: { text: string; stream: string }[] } {
  const lines: { text: string; stream: string }[] = [];
  const outputs: Record<string, string> = {};
  const ctx = {
    job: j,
    signal: controller.signal,
    logger: pino({ level: 'silent' }),
    outputs,
    log(text: string, stream = 'stdout') {
      lines.push({ text, stream });
      const kv = stream === 'stdout' ? parseSetOutput(text) : null;
      if (kv) outputs[kv[0]] = kv[1];
    },
    setOutput(k: string, v: string) {
      outputs[k] = v;
    },
  } as unknown as JobContext;
  return { ctx, lines };
}

test('many jobs at once: each gets its own output lines, outputs and exit code', async () => {
  const handler = createShellHandler();
  const n = 40;
  // Each job prints its number on both streams, a line long enough to arrive in pieces, and an
  // output, and exits with its number modulo 3.
  const cmd = 'echo "out $N"; echo "err $N" >&2; head -c 70000 /dev/zero | tr "\\0" "x"; echo; echo "::set-output n=$N"; exit $((N % 3))';
  const runs = Array.from({ length: n }, (_, i) => {
    const j = job(cmd, i);
    const { ctx, lines } = context(j);
    return {
      i,
      lines,
      result: Promise.resolve(handler(j, ctx)).then(
        (outputs) => ({ ok: true as const, outputs }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
    };
  });
  for (const r of runs) {
    const res = await r.result;
    const out = r.lines.filter((l) => l.stream === 'stdout').map((l) => l.text);
    const err = r.lines.filter((l) => l.stream === 'stderr').map((l) => l.text);
    assert.equal(out[0], `out ${r.i}`, `job ${r.i}'s first stdout line`);
    assert.deepEqual(err, [`err ${r.i}`], `job ${r.i}'s stderr`);
    // 70,000 characters in pieces of at most 32,768 (maxLineChars), then the output line.
    assert.deepEqual(out.slice(1, -1).map((l) => l.length), [32768, 32768, 4464], `job ${r.i}'s long line`);
    assert.equal(out.at(-1), `::set-output n=${r.i}`);
    if (r.i % 3 === 0) {
      assert.equal(res.ok, true, `job ${r.i} succeeds`);
      assert.deepEqual(res.ok && { ...res.outputs }, { n: String(r.i) });
    } else {
      assert.ok(!res.ok && res.err instanceof ShellCommandError, `job ${r.i} fails with its exit code`);
      assert.equal(res.err.exitCode, r.i % 3);
      assert.match(res.err.message, new RegExp(`^command exited with code ${r.i % 3}; stderr:\\nerr ${r.i}$`));
    }
  }
});

test("an abort kills the command's whole process group, also before the launcher answered", async () => {
  const handler = createShellHandler({ killGraceMs: 60_000 });
  const j = job('sleep 300 & echo "bg $!"; sleep 300');
  const controller = new AbortController();
  const { ctx, lines } = context(j, controller);
  const result = Promise.resolve(handler(j, ctx)).catch((err: unknown) => err);
  const bg = await until(() => lines.find((l) => l.text.startsWith('bg ')), 'the background pid');
  const bgPid = Number(bg.text.slice(3));
  assert.ok(alive(bgPid));
  controller.abort(new Error('stop it'));
  assert.equal(((await result) as Error).message, 'stop it');
  await until(() => !alive(bgPid), 'the background process to be killed');

  // Aborted right after the call: the command's pid is not known yet when the abort comes.
  const early = new AbortController();
  const j2 = job('echo "pid $$"; sleep 300');
  const c2 = context(j2, early);
  const second = Promise.resolve(handler(j2, c2.ctx)).catch((err: unknown) => err);
  early.abort(new Error('stopped early'));
  assert.equal(((await second) as Error).message, 'stopped early');
  const line = c2.lines.find((l) => l.text.startsWith('pid '));
  if (line) await until(() => !alive(Number(line.text.slice(4))), 'the early-aborted command to be killed');
});

test('a launcher that dies fails the jobs it ran, kills their processes, and the next job gets a new one', async () => {
  const handler = createShellHandler({ killGraceMs: 1000 });
  const jobs = [0, 1, 2].map((i) => {
    const j = job('echo "pid $$"; sleep 300', i);
    const c = context(j);
    return { c, result: Promise.resolve(handler(j, c.ctx)).catch((err: unknown) => err) };
  });
  const pids = await Promise.all(jobs.map(({ c }) => until(() => c.lines.find((l) => l.text.startsWith('pid ')), 'the command to start')));
  const first = launcherPid();
  assert.ok(first !== undefined);
  process.kill(first, 'SIGKILL');
  for (const { result } of jobs) {
    const err = (await result) as Error;
    assert.ok(err instanceof LauncherDiedError, `a clear error: ${String(err)}`);
    assert.match(err.message, /process launcher .* while the command ran/);
  }
  for (const p of pids) await until(() => !alive(Number(p.text.slice(4))), 'the orphaned command to be killed');

  const j = job('echo "::set-output again=yes"');
  const c = context(j);
  assert.deepEqual({ ...(await handler(j, c.ctx)) }, { again: 'yes' });
  assert.notEqual(launcherPid(), first);
  await stopLauncher();
  assert.equal(launcherPid(), undefined);
});

test("no process is left when the worker's process ends: the launcher and every job's group go", async () => {
  // A process running one long job through the shell handler, then killed outright (SIGKILL: no
  // exit hook of its own runs); the launcher notices its channel closing.
  const script = `
    import { createShellHandler } from ${JSON.stringify(path.join(ROOT, 'src/worker/shell.ts'))};
    import { launcherPid } from ${JSON.stringify(path.join(ROOT, 'src/worker/launcher.ts'))};
    const handler = createShellHandler();
    const job = { workflow_id: 'w', job_id: 'j', run_number: 1, attempt: 0, command: 'echo "pid $$"; sleep 300', env: {}, upstream_outputs: {} };
    const ctx = { job, signal: new AbortController().signal, logger: { info() {}, warn() {}, error() {} }, outputs: {},
      log: (t) => process.stdout.write(t + ' launcher ' + launcherPid() + '\\n'), setOutput() {} };
    await handler(job, ctx);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  const m = await until(() => /pid (\d+) launcher (\d+)/.exec(out), 'the job to start', 30_000);
  const [jobPid, launcher] = [Number(m[1]), Number(m[2])];
  assert.ok(alive(jobPid) && alive(launcher));
  child.kill('SIGKILL');
  await until(() => !alive(jobPid), "the job's process to be killed", 30_000);
  await until(() => !alive(launcher), 'the launcher to end', 30_000);

  // Ending normally once its jobs are done: the launcher does not keep the process alive, and goes with it.
  const done = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script.replace('sleep 300', 'true')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out2 = '';
  done.stdout!.on('data', (d: Buffer) => (out2 += d));
  const code = await new Promise((r) => done.once('exit', r));
  assert.equal(code, 0);
  const launcher2 = Number(/launcher (\d+)/.exec(out2)?.[1]);
  assert.ok(launcher2 > 0, out2);
  await until(() => !alive(launcher2), 'the launcher to end with its worker', 30_000);
});
