import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffToWire, retryDelayMs } from '../../src/domain/backoff.js';
import { dependentsOf, newlyReady } from '../../src/domain/dag.js';
import { deriveRunState } from '../../src/domain/run-state.js';
import { isSubset, labelKey, normalizeLabels } from '../../src/domain/labels.js';
import { isLeaseExpired, leaseExpiresAt } from '../../src/domain/lease.js';

test('backoff None retries immediately', () => {
  assert.equal(retryDelayMs({ kind: 'none' }, 1), 0);
  assert.equal(retryDelayMs({ kind: 'none' }, 7), 0);
});

test('backoff Fixed waits delay_secs every time', () => {
  assert.equal(retryDelayMs({ kind: 'fixed', delay_secs: 5 }, 1), 5000);
  assert.equal(retryDelayMs({ kind: 'fixed', delay_secs: 5 }, 9), 5000);
  assert.equal(retryDelayMs({ kind: 'fixed', delay_secs: 0 }, 1), 0);
});

test('backoff Exponential is base_secs * 2^n capped at max_secs', () => {
  const b = { kind: 'exponential', base_secs: 1, max_secs: 30 } as const;
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(b, n)), [2000, 4000, 8000, 16000, 30000, 30000]);
  assert.equal(retryDelayMs({ kind: 'exponential', base_secs: 3, max_secs: 100 }, 0), 3000);
  // 2^2000 is Infinity in floating point; the cap must still hold.
  assert.equal(retryDelayMs(b, 2000), 30000);
});

test('backoff wire encoding is serde external tagging', () => {
  assert.equal(backoffToWire({ kind: 'none' }), 'None');
  assert.deepEqual(backoffToWire({ kind: 'fixed', delay_secs: 5 }), { Fixed: { delay_secs: 5 } });
  assert.deepEqual(backoffToWire({ kind: 'exponential', base_secs: 1, max_secs: 30 }), {
    Exponential: { base_secs: 1, max_secs: 30 },
  });
});

const node = (job_id: string, needs: string[], status: any = 'pending', outputs: any = null) => ({ job_id, needs, status, outputs });

test('a job becomes ready only when every need succeeded, carrying their outputs', () => {
  const nodes = [
    node('a', [], 'success', { x: '1' }),
    node('b', [], 'running'),
    node('c', ['a', 'b']),
    node('d', ['a']),
  ];
  assert.deepEqual(newlyReady(nodes, 'a'), [{ job_id: 'd', upstream_outputs: { a: { x: '1' } } }]);
  nodes[1]!.status = 'success';
  nodes[1]!.outputs = { y: '2' };
  assert.deepEqual(newlyReady(nodes, 'b'), [{ job_id: 'c', upstream_outputs: { a: { x: '1' }, b: { y: '2' } } }]);
});

test('dependentsOf inverts needs, keeping every job', () => {
  const nodes = [node('a', []), node('b', ['a']), node('c', ['a', 'b'])];
  assert.deepEqual(Object.fromEntries(dependentsOf(nodes)), { a: ['b', 'c'], b: ['c'], c: [] });
});

test('run state derives from job states', () => {
  assert.equal(deriveRunState(['success', 'queued']), 'running');
  assert.equal(deriveRunState(['success', 'pending']), 'running');
  assert.equal(deriveRunState(['success', 'success']), 'success');
  assert.equal(deriveRunState(['success', 'failed', 'skipped']), 'failed');
  assert.equal(deriveRunState(['cancelled', 'failed']), 'cancelled');
  assert.equal(deriveRunState(['failed', 'running']), 'running');
});

test('labels: normalized key and subset rule', () => {
  assert.deepEqual(normalizeLabels(['b', 'a', 'b']), ['a', 'b']);
  assert.equal(labelKey([]), '');
  assert.equal(labelKey(['b', 'a']), labelKey(['a', 'b', 'a']));
  assert.notEqual(labelKey(['a,b']), labelKey(['a', 'b']));
  assert.equal(isSubset([], new Set()), true);
  assert.equal(isSubset(['gpu'], new Set(['gpu', 'linux'])), true);
  assert.equal(isSubset(['gpu', 'arm'], new Set(['gpu', 'linux'])), false);
});

test('a lease expires strictly after renewal + ttl', () => {
  const exp = leaseExpiresAt(1000, 30);
  assert.equal(exp, 31000);
  assert.equal(isLeaseExpired(exp, 31000), false);
  assert.equal(isLeaseExpired(exp, 31001), true);
});
