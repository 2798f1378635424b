import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { backoffToWire, retryDelayMs } from '../../src/domain/backoff.js';
import { dependentsOf } from '../../src/domain/dag.js';
import { runStateFromCounts } from '../../src/domain/run-state.js';
import { planFailure } from '../../src/domain/retry.js';
import { isSubset, labelKey, normalizeLabels } from '../../src/domain/labels.js';
import { isLeaseExpired, leaseExpiresAt, newLeaseId } from '../../src/domain/lease.js';

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

const node = (job_id: string, needs: string[]) => ({ job_id, needs });

test('dependentsOf inverts needs, keeping every job', () => {
  const nodes = [node('a', []), node('b', ['a']), node('c', ['a', 'b'])];
  assert.deepEqual(Object.fromEntries(dependentsOf(nodes)), { a: ['b', 'c'], b: ['c'], c: [] });
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

test('planFailure: retry within budget with the backoff of the next attempt; fail otherwise', () => {
  const exp = { kind: 'exponential', base_secs: 2, max_secs: 10 } as const;
  assert.deepEqual(planFailure({ attempt: 0, max_retries: 2, backoff: exp }, true, 1000), {
    kind: 'retry',
    attempt: 1,
    delayed_until_ms: 1000 + 4000,
    ready_at_ms: 5000,
  });
  assert.deepEqual(planFailure({ attempt: 1, max_retries: 2, backoff: exp }, true, 1000), {
    kind: 'retry',
    attempt: 2,
    delayed_until_ms: 1000 + 8000,
    ready_at_ms: 9000,
  });
  assert.deepEqual(planFailure({ attempt: 2, max_retries: 2, backoff: exp }, true, 1000), { kind: 'fail' });
  assert.deepEqual(planFailure({ attempt: 0, max_retries: 5, backoff: exp }, false, 1000), { kind: 'fail' });
  // No backoff: claimable at once, and delayed_until_ms stays 0 as the interface shows "no delay".
  assert.deepEqual(planFailure({ attempt: 0, max_retries: 1, backoff: { kind: 'none' } }, true, 1000), {
    kind: 'retry',
    attempt: 1,
    delayed_until_ms: 0,
    ready_at_ms: 1000,
  });
});

test('run state: running while any job can move; then cancelled over failed over success', () => {
  assert.equal(runStateFromCounts({ unfinished: 1, failed: 3, cancelled: 1 }), 'running');
  assert.equal(runStateFromCounts({ unfinished: 0, failed: 0, cancelled: 0 }), 'success');
  assert.equal(runStateFromCounts({ unfinished: 0, failed: 2, cancelled: 0 }), 'failed');
  assert.equal(runStateFromCounts({ unfinished: 0, failed: 2, cancelled: 1 }), 'cancelled');
});

test('a new lease id is a version 7 UUID: time-ordered across milliseconds, random within one', () => {
  const { randomUUID } = crypto;
  const at = 1_764_000_000_123;
  const a = newLeaseId(at, randomUUID);
  const b = newLeaseId(at, randomUUID);
  const later = newLeaseId(at + 1, randomUUID);
  for (const id of [a, b, later]) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a, b, 'two ids of the same millisecond differ');
  assert.equal(a.slice(0, 13), b.slice(0, 13), 'ids of one millisecond share their time prefix');
  assert.ok(a < later && b < later, 'an id of a later millisecond sorts after');
  assert.equal(parseInt(a.slice(0, 8) + a.slice(9, 13), 16), at, 'the first 48 bits are the time in ms');
});
