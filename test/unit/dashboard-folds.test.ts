/** The dashboard's folding of wide levels and long chains of a run's graph (src/dashboard/folds.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAIN_FOLD_ABOVE, depths, foldGraph, LEVEL_LIMIT, type FoldedNode } from '../../src/dashboard/folds.js';
import { graphNodes } from '../../src/dashboard/groups.js';
import type { JobView } from '../../src/protocol/wire.js';

function job(id: string, state: JobView['state'], depends_on: string[] = [], extra: Partial<JobView> = {}): JobView {
  return { id, name: id, state, depends_on, ...extra } as JobView;
}

/** One root, `wide` jobs needing it, and `chains` of them each starting a chain of `length` jobs. */
function wideRun(wide: number, chains: number, length: number, state: (id: string) => JobView['state'] = () => 'queued'): JobView[] {
  const jobs = [job('root', 'success')];
  for (let i = 0; i < wide; i++) jobs.push(job(`w${i}`, state(`w${i}`), ['root']));
  for (let c = 0; c < chains; c++) {
    for (let k = 0; k < length; k++) jobs.push(job(`c${c}-${k}`, 'pending', [k === 0 ? `w${c}` : `c${c}-${k - 1}`]));
  }
  return jobs;
}

const fold = (jobs: JobView[], expanded: string[] = [], selected: string | null = null) => foldGraph(graphNodes(jobs), new Set(expanded), selected);
const shape = (nodes: FoldedNode[]) => nodes.map((n) => [n.id, n.fold ? `${n.fold.kind}×${n.fold.members.length}` : n.state, n.depends_on.join(',')]);

test('a 500-job run: the wide level is one node but for its failed and running jobs, each chain one node', () => {
  const jobs = wideRun(249, 10, 25, (id) => (id === 'w20' ? 'failed' : id === 'w21' ? 'running' : 'queued'));
  assert.equal(jobs.length, 500);
  const nodes = fold(jobs);
  const level = '*level:1:root';
  assert.deepEqual(shape(nodes), [
    ['root', 'success', ''],
    [level, 'level×247', 'root'],
    ['w20', 'failed', 'root'],
    ['w21', 'running', 'root'],
    ...Array.from({ length: 10 }, (_, c) => [`*chain:c${c}-0`, 'chain×25', level]),
  ]);
  const wide = nodes[1]!;
  assert.equal(wide.state, 'queued');
  assert.deepEqual(wide.fold!.summary.counts, { queued: 247 });
  assert.deepEqual(wide.fold!.needs, ['root']);
  assert.equal(wide.name, 'after root', 'jobs whose names share no start are named by what they need');
  assert.equal(nodes[4]!.name, 'c0-0 → c0-24');
});

test('the fold of a level keeps its id while its jobs move on, and its counts follow them', () => {
  const before = fold(wideRun(20, 0, 0));
  const after = fold(wideRun(20, 0, 0, (id) => (id === 'w3' ? 'success' : 'queued')));
  assert.equal(before[1]!.id, after[1]!.id);
  assert.deepEqual(after[1]!.fold!.summary.counts, { queued: 19, success: 1 });
  assert.equal(after[1]!.fold!.summary.done, 1);
});

test('levels of at most LEVEL_LIMIT jobs and short pipelines are drawn whole', () => {
  const small = wideRun(LEVEL_LIMIT, 2, 4);
  assert.ok(fold(small).every((n) => !n.fold));
  const pipeline = [job('lint', 'success'), job('build', 'success', ['lint']), job('test', 'running', ['build']), job('deploy', 'pending', ['test'])];
  assert.deepEqual(fold(pipeline).map((n) => n.id), ['lint', 'build', 'test', 'deploy']);
});

test('one fold per set of needs; a job needing other jobs stays out of the others', () => {
  const jobs = [job('a', 'success'), job('b', 'success')];
  for (let i = 0; i < 8; i++) jobs.push(job(`x${i}`, 'queued', ['a']));
  for (let i = 0; i < 6; i++) jobs.push(job(`y${i}`, 'queued', ['b', 'a']));
  jobs.push(job('z', 'queued', ['b']));
  const nodes = fold(jobs);
  assert.deepEqual(shape(nodes), [
    ['a', 'success', ''],
    ['b', 'success', ''],
    ['*level:1:a', 'level×8', 'a'],
    ['*level:1:a,b', 'level×6', 'a,b'],
    ['z', 'queued', 'b'],
  ]);
});

test('jobs leading on to more than LEVEL_LIMIT different jobs are not folded: their edges say where each leads', () => {
  // 25 ranks of 20, each job needing two of the rank before: the dashboard browser test's 500 jobs.
  const jobs: JobView[] = [];
  for (let r = 0; r < 25; r++) for (let i = 0; i < 20; i++) jobs.push(job(`j${r}-${i}`, 'queued', r === 0 ? [] : [`j${r - 1}-${i}`, `j${r - 1}-${(i + 7) % 20}`]));
  const nodes = fold(jobs);
  assert.equal(nodes.length, 500);
  assert.ok(nodes.every((n) => !n.fold));
});

test('the selected job is drawn on its own; an expanded fold holds it and every other of its jobs', () => {
  const jobs = wideRun(30, 0, 0);
  const folded = fold(jobs, [], 'w7');
  assert.deepEqual(shape(folded).map((s) => s[0]), ['root', '*level:1:root', 'w7']);
  assert.equal(folded[1]!.fold!.members.length, 29);
  const open = fold(jobs, ['*level:1:root'], 'w7');
  assert.equal(open[1]!.fold!.expanded, true);
  assert.equal(open[1]!.fold!.members.length, 30);
  assert.equal(open.length, 2);
});

test('a running job splits a folded chain; chains fold only in a large graph', () => {
  // 1 + 1 fold + 8 chains of 9: more than CHAIN_FOLD_ABOVE nodes once the level is folded.
  const large = () => wideRun(20, 8, 9);
  assert.ok(2 + 8 * 9 > CHAIN_FOLD_ABOVE);
  const jobs = large().map((j) => (j.id === 'c0-4' ? { ...j, state: 'running' as const } : j));
  const nodes = fold(jobs);
  assert.deepEqual(shape(nodes).slice(2, 5), [
    ['*chain:c0-0', 'chain×4', '*level:1:root'],
    ['c0-4', 'running', '*chain:c0-0'],
    ['*chain:c0-5', 'chain×4', 'c0-4'],
  ]);
  assert.deepEqual(shape(nodes).slice(5), Array.from({ length: 7 }, (_, c) => [`*chain:c${c + 1}-0`, 'chain×9', '*level:1:root']));
  // Selected, a chain's job is drawn on its own too; expanded, the chain is drawn whole in its box.
  assert.deepEqual(shape(fold(large(), [], 'c0-0')).slice(2, 4).map((s) => s[0]), ['c0-0', '*chain:c0-1']);
  assert.equal(fold(large(), ['*chain:c0-0'])[2]!.fold!.expanded, true);
  // Small: 1 + 1 fold + 3 chains of 9 are few enough to draw.
  assert.ok(fold(wideRun(20, 3, 9)).every((n) => n.fold?.kind !== 'chain'));
});

test('depth is the longest way down from a job without needs', () => {
  const d = depths(graphNodes([job('a', 'queued'), job('b', 'queued', ['a']), job('c', 'queued', ['a', 'b'])]));
  assert.deepEqual([...d], [['a', 0], ['b', 1], ['c', 2]]);
});
