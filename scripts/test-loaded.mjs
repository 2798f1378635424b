#!/usr/bin/env node
// `npm run test:loaded [-- --runs N --load N]`: runs `npm test` N times in a row (default 5) while N
// busy processes (default one per CPU) keep every core loaded, as a CI machine shared with other work
// is. Prints each run's result and time; exits 1 if any run failed. README "Tests under load".
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`test:loaded: --${name} takes a whole number, got ${JSON.stringify(args[i + 1])}\n`);
    process.exit(2);
  }
  return n;
}
const runs = option('runs', 5);
const load = option('load', os.availableParallelism());

// Each load process spins on the CPU and, every few milliseconds, writes and fsyncs a small file, so
// that both the cores and the disk the stores commit to are contended. Each burst returns to the
// event loop (setImmediate), so the SIGTERM that stops it is handled.
const spinner = `
const fs = require('node:fs'); const f = require('node:path').join(require('node:os').tmpdir(), 'weft-load-' + process.pid);
const fd = fs.openSync(f, 'w'); process.on('SIGTERM', () => { fs.closeSync(fd); fs.rmSync(f, { force: true }); process.exit(0); });
const burst = () => { const end = Date.now() + 5; while (Date.now() < end) Math.sqrt(Math.random()); fs.writeSync(fd, 'x'.repeat(4096), 0); fs.fsyncSync(fd); setImmediate(burst); };
burst();`;
const loaders = Array.from({ length: load }, () => spawn(process.execPath, ['-e', spinner], { stdio: 'ignore' }));
const stopLoad = () => loaders.forEach((p) => p.kill('SIGTERM'));
let suite = null;
process.on('exit', () => {
  stopLoad();
  suite?.kill('SIGTERM');
});
// Stopped from outside (Ctrl-C, kill, a closed terminal): the load and the running suite stop too.
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) process.on(signal, () => process.exit(code));

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const results = [];
for (let i = 1; i <= runs; i++) {
  process.stdout.write(`\n== test:loaded: run ${i} of ${runs}, ${load} load processes ==\n`);
  const started = Date.now();
  const code = await new Promise((resolve) => {
    suite = spawn(npm, ['test'], { cwd: root, stdio: 'inherit' });
    suite.on('exit', (c, s) => resolve(c ?? s));
  });
  suite = null;
  results.push({ run: i, code, secs: Math.round((Date.now() - started) / 1000) });
}
stopLoad();
process.stdout.write('\n== test:loaded: summary ==\n');
for (const r of results) process.stdout.write(`run ${r.run}: ${r.code === 0 ? 'green' : `RED (exit ${r.code})`} in ${r.secs} s\n`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
