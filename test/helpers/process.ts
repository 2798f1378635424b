import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

/** Alive and not a zombie (an orphan's zombie may linger when PID 1 does not reap). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

/** Whether python3 runs here (the Python example worker's tests skip without it). */
export const hasPython = spawnSync('python3', ['--version']).status === 0;

/**
 * examples/python-worker/worker.py as a real process with `env` over the test's environment, killed
 * when the test ends; `output()` is everything it printed so far.
 */
export function spawnPythonWorker(t: TestContext, env: Record<string, string>, cwd?: string): { output(): string } {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'python-worker', 'worker.py');
  const proc = spawn('python3', [script], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const exited = new Promise((r) => proc.on('exit', r));
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  return { output: () => out };
}
