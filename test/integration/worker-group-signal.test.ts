import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers/server.js';

// A supervisor that stops `weft worker` signals its whole process group (Ctrl-C, systemd's
// KillMode=control-group, `kill -TERM -<pgid>`). When the worker forked the jobs' processes itself, a
// process forked in that instant was still in the group and died before its command ran
// (src/worker/shell.ts, NotStartedError). The process launcher (src/worker/launcher.ts) forks them in
// a group of its own, so no job's process meets those signals: only the launcher's own start (with the
// first job) may, and is then made again. The fixture runs jobs until 100 ran and it got 20 signals;
// they come in bursts of 30 ms every 200 ms.
test("signals to the worker's process group never reach a job's process before it started", async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/group-signal-jobs.ts'), '100', '20'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let pelting: NodeJS.Timeout | undefined;
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
    if (pelting === undefined && out.includes('ready\n')) {
      // As supervisors do, in bursts (a stop, a repeated Ctrl-C), each followed by a quiet spell: a
      // signal every 5 ms without end would, on a loaded machine where a fork takes longer than that,
      // kill every restart too, which no supervisor does and no bounded restart can outlast.
      let tick = 0;
      pelting = setInterval(() => {
        if (tick++ % 40 >= 6) return;
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // The group is gone: the fixture finished.
        }
      }, 5);
    }
  });
  // The last signals may meet the fixture on its way out, after it printed its result.
  await new Promise((resolve) => child.on('exit', resolve));
  clearInterval(pelting);
  const last = out.trim().split('\n').at(-1) ?? '';
  assert.match(last, /^\{/, `the fixture printed no result: ${out}`);
  const result = JSON.parse(last) as { ok: number; restarts: number; laterRestarts: number; failed: number; failures: string[]; signals: number };
  assert.deepEqual({ failed: result.failed, failures: result.failures, laterRestarts: result.laterRestarts }, { failed: 0, failures: [], laterRestarts: 0 }, out);
  assert.ok(result.ok >= 100 && result.signals >= 20, `the jobs did not run while the group was signalled: ${out}`);
});
