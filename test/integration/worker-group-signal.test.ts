import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers/server.js';

// A supervisor that stops `weft worker` signals its whole process group (Ctrl-C, systemd's
// KillMode=control-group, `kill -TERM -<pgid>`). A job's process forked in that instant is still in
// the group and dies before its command runs; the draining worker must run the job all the same
// (src/worker/shell.ts, NotStartedError). The fixture runs jobs until five such deaths were seen; the
// signals come in bursts of 30 ms every 200 ms.
test("a job whose process a signal to the worker's group killed before it started is run all the same", async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/group-signal-jobs.ts'), '5'], {
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
  const result = JSON.parse(last) as { ok: number; restarts: number; failed: number; failures: string[]; signals: number };
  assert.deepEqual({ failed: result.failed, failures: result.failures }, { failed: 0, failures: [] }, out);
  assert.ok(result.restarts >= 5, `fewer than five jobs met a signal before they started: ${out}`);
});
