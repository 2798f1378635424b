#!/usr/bin/env node
// Lets `npm start` and `npm test` work on a fresh clone by themselves: installs the locked
// dependencies (which also builds dist/) when they are missing. Uses only Node's standard library,
// since nothing else is installed yet when it runs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const installed = existsSync(path.join(root, 'node_modules', '.package-lock.json'));
const built = existsSync(path.join(root, 'dist', 'cli', 'main.js')) && existsSync(path.join(root, 'dist', 'dashboard', 'index.html'));
if (installed && built) process.exit(0);

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const args = installed ? ['run', 'build'] : ['ci', '--no-audit', '--no-fund'];
process.stderr.write(`weft: ${installed ? 'building dist/' : 'installing dependencies'} (npm ${args.join(' ')})\n`);
const r = spawnSync(npm, args, { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
