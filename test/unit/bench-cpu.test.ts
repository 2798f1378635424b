/**
 * The bench's reading of a process's CPU time (bench/lib/procs.ts readCpuMs), behind the throughput
 * rows' "server CPU per job": it grows with the work the process does, and a process that is gone
 * reads as unknown rather than as zero.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readCpuMs } from '../../bench/lib/procs.js';

test('a process reads as having used at least the CPU time it just spent', () => {
  const before = readCpuMs(process.pid);
  assert.ok(before !== null && before > 0, `read ${before}`);
  const started = process.cpuUsage();
  let spent = 0;
  let x = 0;
  while (spent < 200_000) {
    for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
    const u = process.cpuUsage(started);
    spent = u.user + u.system;
  }
  const after = readCpuMs(process.pid)!;
  // Ticks are coarse (10 ms): 200 ms spent reads as at least 150 ms more.
  assert.ok(after - before >= 150, `${before} -> ${after} ms after spending ${spent / 1000} ms (${x > 0})`);
});

test('a process that has exited reads as unknown', () => {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  assert.equal(readCpuMs(Number(child.stdout)), null);
});
