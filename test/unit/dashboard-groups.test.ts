/** The dashboard's folding of matrix and fan-out instances into one graph node (src/dashboard/groups.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { graphNodes, groupState } from '../../src/dashboard/groups.js';
import type { JobView } from '../../src/protocol/wire.js';

function job(id: string, state: JobView['state'], depends_on: string[] = [], extra: Partial<JobView> = {}): JobView {
  return { id, name: id, state, depends_on, ...extra } as JobView;
}

test('instances fold into one node per group with n/N done and counts; edges go to and from the group', () => {
  const jobs = [
    job('build', 'success'),
    job('test~0', 'success', ['build'], { group: 'test', name: 'test (linux, 20)' }),
    job('test~1', 'failed', ['build'], { group: 'test', name: 'test (linux, 22)' }),
    job('test~2', 'running', ['build'], { group: 'test', name: 'test (mac, 22)' }),
    job('report', 'pending', ['test~0', 'test~1', 'test~2']),
    // A fan-out not expanded yet is an ordinary job until its instances exist.
    job('deploy', 'pending', ['report'], { group: 'deploy', instances: null }),
  ];
  const nodes = graphNodes(jobs);
  assert.deepEqual(nodes.map((n) => [n.id, n.name, n.state, n.depends_on, n.group ? `${n.group.done}/${n.group.instances.length}` : null]), [
    ['build', 'build', 'success', [], null],
    ['test', 'test', 'running', ['build'], '2/3'],
    ['report', 'report', 'pending', ['test'], null],
    ['deploy', 'deploy', 'pending', ['report'], null],
  ]);
  assert.deepEqual(nodes[1]!.group!.counts, { success: 1, failed: 1, running: 1 });
});

test('a group shows what still moves first, then how it ended, worst first', () => {
  assert.equal(groupState({ success: 3, queued: 1, failed: 1 }), 'queued');
  assert.equal(groupState({ success: 3, failed: 1, cancelled: 2 }), 'failed');
  assert.equal(groupState({ success: 3, cancelled: 1 }), 'cancelled');
  assert.equal(groupState({ success: 3 }), 'success');
  assert.equal(groupState({ skipped: 2 }), 'skipped');
});

test('instances whose names are not the group name plus values keep the group id as the node name', () => {
  const nodes = graphNodes([job('s~0', 'queued', [], { group: 's', name: 'east' }), job('s~1', 'queued', [], { group: 's', name: 'west' })]);
  assert.deepEqual(nodes.map((n) => [n.id, n.name]), [['s', 's']]);
});
