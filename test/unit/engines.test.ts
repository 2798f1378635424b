/**
 * The locked dependency tree runs on every Node version package.json promises: each locked package's
 * `engines.node` must accept the lowest version of the project's own `engines.node`. Otherwise
 * `npm ci` on that version warns EBADENGINE (as cookie@2, which needs Node 22, once did under
 * light-my-request: the `overrides` entry in package.json pins cookie 1.x there).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// semver comes with npm's own tree (a dependency of several locked packages); it has no types here.
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
  validRange(range: string): string | null;
};

interface LockFile {
  packages: Record<string, { version?: string; engines?: unknown }>;
}

const readJson = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as T;

/** Every locked package whose `engines.node` rejects `nodeVersion`, as `name@version needs node RANGE`. */
function rejecting(lock: LockFile, nodeVersion: string): string[] {
  const out: string[] = [];
  for (const [key, pkg] of Object.entries(lock.packages)) {
    if (key === '') continue;
    const engines = pkg.engines;
    // An array here is the old free-text form, which npm does not check either.
    if (engines === null || typeof engines !== 'object' || Array.isArray(engines)) continue;
    const range = (engines as { node?: unknown }).node;
    if (typeof range !== 'string') continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (semver.validRange(range) === null) out.push(`${name}@${pkg.version} has an unreadable engines.node "${range}"`);
    else if (!semver.satisfies(nodeVersion, range)) out.push(`${name}@${pkg.version} (${key}) needs node ${range}`);
  }
  return out;
}

const ownRange = readJson<{ engines: { node: string } }>('package.json').engines.node;
const lowest = semver.minVersion(ownRange)?.version;

test("package.json's engines.node names a lowest Node version, and the lock file's root entry says the same", () => {
  assert.ok(lowest, `engines.node "${ownRange}" has no lowest version`);
  const root = readJson<LockFile>('package-lock.json').packages['']!;
  assert.deepEqual(root.engines, { node: ownRange }, 'package-lock.json is out of step with package.json: run npm install');
});

test("every locked package accepts the lowest Node version of package.json's engines.node", () => {
  const bad = rejecting(readJson<LockFile>('package-lock.json'), lowest!);
  assert.deepEqual(
    bad,
    [],
    `npm ci on Node ${lowest} would warn EBADENGINE for:\n  ${bad.join('\n  ')}\n` +
      'pin an older version with an `overrides` entry in package.json, or raise engines.node',
  );
});

test('the check catches a package needing a newer Node (cookie@2 under light-my-request without the override)', () => {
  const lock = readJson<LockFile>('package-lock.json');
  const withoutOverride: LockFile = {
    packages: { ...lock.packages, 'node_modules/light-my-request/node_modules/cookie': { version: '2.0.2', engines: { node: '>=22' } } },
  };
  const before = rejecting(lock, lowest!);
  const after = rejecting(withoutOverride, lowest!).filter((line) => !before.includes(line));
  assert.deepEqual(after, ['cookie@2.0.2 (node_modules/light-my-request/node_modules/cookie) needs node >=22']);
});
