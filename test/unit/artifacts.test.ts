/** Artifact names and patterns (src/domain/artifacts.ts), the Range header, and the worker's matching and joining. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { artifactNameProblem, formatBytes, globToRegExp } from '../../src/domain/artifacts.js';
import { parseRange } from '../../src/http/routes/artifacts.js';
import { downloadJobIds } from '../../src/engine/artifacts.js';
import { insideDir, makeAttemptDir, matchArtifacts, removeAttemptDir } from '../../src/worker/artifacts.js';
import type { ClaimedJob } from '../../src/protocol/wire.js';

test('artifact names: relative paths that stay inside any directory', () => {
  for (const ok of ['a', 'dist/app.js', 'a b/c (1).txt', '.hidden', 'a..b', '..a', 'é/ü', 'x'.repeat(255)]) {
    assert.equal(artifactNameProblem(ok), null, ok);
  }
  for (const bad of ['', '..', '../a', 'a/..', 'a/../b', '.', './a', '/abs', 'a//b', 'a/', 'a\\b', 'nul\u0000', 'tab\there', 'del\u007f', 'x'.repeat(256)]) {
    assert.notEqual(artifactNameProblem(bad), null, JSON.stringify(bad));
  }
});

test('globs: * and ? stay in a segment, ** crosses them, [..] classes', () => {
  const m = (p: string, name: string) => globToRegExp(p).test(name);
  assert.ok(m('*.txt', 'a.txt'));
  assert.ok(!m('*.txt', 'd/a.txt'));
  assert.ok(m('**/*.txt', 'a.txt'));
  assert.ok(m('**/*.txt', 'd/e/a.txt'));
  assert.ok(m('reports/**', 'reports/x/y.xml'));
  assert.ok(m('log?.txt', 'log1.txt'));
  assert.ok(!m('log?.txt', 'log/.txt'));
  assert.ok(m('[ab].bin', 'b.bin'));
  assert.ok(!m('[!ab].bin', 'b.bin'));
  assert.ok(m('a+b(1).txt', 'a+b(1).txt'), 'regex characters are literal');
  assert.ok(!m('a.txt', 'abtxt'));
});

test('Range: one bytes= range, clipped to the size; past the end is unsatisfiable; others are ignored', () => {
  assert.equal(parseRange(undefined, 100), null);
  assert.deepEqual(parseRange('bytes=0-9', 100), [0, 9]);
  assert.deepEqual(parseRange('bytes=90-', 100), [90, 99]);
  assert.deepEqual(parseRange('bytes=-10', 100), [90, 99]);
  assert.deepEqual(parseRange('bytes=-1000', 100), [0, 99]);
  assert.deepEqual(parseRange('bytes=50-1000', 100), [50, 99]);
  assert.equal(parseRange('bytes=100-', 100), 'unsatisfiable');
  assert.equal(parseRange('bytes=9-3', 100), 'unsatisfiable');
  assert.equal(parseRange('bytes=-0', 100), 'unsatisfiable');
  assert.equal(parseRange('bytes=0-1,5-6', 100), null);
  assert.equal(parseRange('items=0-1', 100), null);
});

test('the worker matches files only, never through or as a symbolic link, and joins names only inside its directory', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-art-unit-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'out/sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'out/a.txt'), 'a');
  fs.writeFileSync(path.join(dir, 'out/sub/b.bin'), 'b');
  fs.writeFileSync(path.join(dir, 'top.txt'), 't');
  fs.symlinkSync('/etc/passwd', path.join(dir, 'out/passwd'));
  fs.symlinkSync('/etc', path.join(dir, 'etc'));
  assert.deepEqual(await matchArtifacts(dir, ['out']), { names: ['out/a.txt', 'out/sub/b.bin'], missing: [] });
  assert.deepEqual(await matchArtifacts(dir, ['**/*.txt', 'etc/**', 'none.zip']), { names: ['out/a.txt', 'top.txt'], missing: ['etc/**', 'none.zip'] });
  assert.equal(insideDir(dir, 'out/a.txt'), path.join(dir, 'out', 'a.txt'));
  assert.throws(() => insideDir(dir, '../x'), /must not contain a "\.\." segment/);
  assert.throws(() => insideDir(dir, '/etc/passwd'), /absolute/);
});

test('attempt directories: a WORK_DIR planted as a link is refused, one removed since its check is made again, and an attempt leaves nothing behind', async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-attempt-unit-'));
  t.after(() => fs.rmSync(base, { recursive: true, force: true }));
  const job = { workflow_id: 'wf/../x', run_number: 3, job_id: 'build', attempt: 1 } as ClaimedJob;

  // Someone else's directory planted where WORK_DIR is to be: the worker does not write through the link.
  const target = path.join(base, 'elsewhere');
  fs.mkdirSync(target);
  const planted = path.join(base, 'planted');
  fs.symlinkSync(target, planted);
  await assert.rejects(makeAttemptDir(planted, job), /WORK_DIR .*planted is not a directory \(a symbolic link is not followed\)/);
  assert.deepEqual(fs.readdirSync(target), []);

  const root = path.join(base, 'work');
  const first = await makeAttemptDir(root, job);
  assert.equal(path.dirname(first), root);
  assert.match(path.basename(first), /^wf_.._x-3-build-1-/);
  assert.equal(fs.statSync(root).mode & 0o777, 0o711);
  await removeAttemptDir(first);
  assert.deepEqual(fs.readdirSync(root), []);

  // The root was checked once; removed and replaced by a link since, it is checked again and refused.
  fs.rmSync(root, { recursive: true });
  fs.symlinkSync(target, root);
  await assert.rejects(makeAttemptDir(root, job), /is not a directory \(a symbolic link is not followed\)/);
  assert.deepEqual(fs.readdirSync(target), []);
  // Removed outright: it is made again.
  fs.rmSync(root);
  const again = await makeAttemptDir(root, job);
  assert.ok(fs.statSync(again).isDirectory());

  // A job that left files: the directory goes all the same; one already gone is no error.
  fs.mkdirSync(path.join(again, 'out/deep'), { recursive: true });
  fs.writeFileSync(path.join(again, 'out/deep/f.txt'), 'x');
  await removeAttemptDir(again);
  await removeAttemptDir(again);
  assert.deepEqual(fs.readdirSync(root), []);
});

test('definitions: artifacts: and download: are read, checked and left out when absent (the hash stays)', async () => {
  const { DefinitionError, definitionHash, parseWorkflowText } = await import('../../src/definitions/index.js');
  const parse = (text: string) => parseWorkflowText(text, { source: 'ci.yml', format: 'yaml', id: 'ci' });
  const def = parse('jobs:\n  build: { run: make, artifacts: [dist, "**/*.xml"] }\n  ship: { needs: build, download: build, run: ls }\n');
  assert.deepEqual(def.jobs.map((j) => [j.id, j.artifacts, j.download]), [['build', ['dist', '**/*.xml'], undefined], ['ship', undefined, ['build']]]);
  const plain = parse('jobs:\n  build: { run: make }\n');
  assert.equal('artifacts' in plain.jobs[0]!, false);
  assert.equal(definitionHash(plain), definitionHash(parse('jobs:\n  build:\n    run: make\n')));
  let err: unknown;
  try {
    parse('jobs:\n  a: { run: x, artifacts: ["../up", "/abs"] }\n  b: { run: y, download: [a] }\n');
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof DefinitionError);
  const issues = (err as InstanceType<typeof DefinitionError>).issues.map((i) => `${i.job}.${i.field}: ${i.message}`);
  assert.ok(issues.some((i) => /^a\.artifacts\[0\]: "\.\.\/up"/.test(i)), issues.join('\n'));
  assert.ok(issues.some((i) => /^a\.artifacts\[1\]: "\/abs"/.test(i)), issues.join('\n'));
  assert.ok(issues.some((i) => /^b\.download: "a" is not one of this job's needs/.test(i)), issues.join('\n'));
});

test('download: of a matrix or fan-out need fetches each instance, in index order; a plain need is itself', () => {
  const upstream = { 'test~10': {}, 'test~2': {}, 'test~0': {}, build: {}, 'tester~1': {} };
  assert.deepEqual(downloadJobIds('test', upstream), ['test~0', 'test~2', 'test~10']);
  assert.deepEqual(downloadJobIds('build', upstream), ['build']);
  assert.deepEqual(downloadJobIds('tester', upstream), ['tester~1']);
});

test('sizes read as people read them', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(20 * 1024 ** 3), '20 GiB');
  assert.equal(formatBytes(2 * 1024 ** 5), '2048 TiB');
});
