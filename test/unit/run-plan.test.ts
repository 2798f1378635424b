/** Which jobs a re-run keeps, and the rows a run starts with (README "Re-running a run", "Run inputs"). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWorkflowObject } from '../../src/definitions/index.js';
import type { JobState } from '../../src/domain/model.js';
import { keptJobs, planRun } from '../../src/engine/run-plan.js';
import type { JobRecord } from '../../src/store/store.js';

// a → b → d, a → c → d, e alone.
const def = parseWorkflowObject(
  { id: 'w', jobs: { a: { run: 'x' }, b: { run: 'x', needs: 'a' }, c: { run: 'x', needs: 'a' }, d: { run: 'x', needs: ['b', 'c'] }, e: { run: 'x' } } },
  { source: 'test' },
);

/** Rows of an earlier run in these states, each success with an output naming its job. */
function previous(states: Record<string, JobState>): JobRecord[] {
  const { jobs } = planRun(def, 1000);
  return jobs.map((j, i) => ({
    ...j,
    row_id: i + 1,
    run_number: 1,
    status: states[j.job_id] ?? 'success',
    outputs: (states[j.job_id] ?? 'success') === 'success' ? { from: j.job_id } : null,
    started_at_ms: 1100,
    finished_at_ms: 1200,
  }));
}

const kept = (states: Record<string, JobState>, scope: Parameters<typeof keptJobs>[2]) => [...keptJobs(def, previous(states), scope).keys()].sort();

test('only failed keeps what succeeded, except what depends on a job that runs again', () => {
  assert.deepEqual(kept({ c: 'failed', d: 'skipped' }, { only: 'failed' }), ['a', 'b', 'e']);
  assert.deepEqual(kept({ a: 'cancelled', b: 'cancelled', c: 'cancelled', d: 'cancelled' }, { only: 'failed' }), ['e']);
  assert.deepEqual(kept({}, { only: 'failed' }), ['a', 'b', 'c', 'd', 'e']);
  assert.deepEqual(kept({ c: 'failed', d: 'skipped' }, { only: 'all' }), []);
});

test('from runs the job and everything downstream, plus whatever did not succeed', () => {
  assert.deepEqual(kept({}, { from: 'b' }), ['a', 'c', 'e']);
  assert.deepEqual(kept({}, { from: 'a' }), ['e']);
  assert.deepEqual(kept({ e: 'failed' }, { from: 'd' }), ['a', 'b', 'c']);
});

test('a re-run plan: kept jobs succeeded with their outputs and times, the rest wait only for what runs again', () => {
  const keep = keptJobs(def, previous({ c: 'failed', d: 'skipped' }), { only: 'failed' });
  const { jobs } = planRun(def, 5000, { kept: keep, inputs: { 'log-level': 'debug' } });
  const row = (id: string) => jobs.find((j) => j.job_id === id)!;
  assert.deepEqual([row('a').status, row('a').outputs, row('a').started_at_ms, row('a').finished_at_ms], ['success', { from: 'a' }, 1100, 1200]);
  assert.deepEqual([row('c').status, row('c').pending_needs, row('c').upstream_outputs, row('c').ready_at_ms], ['queued', 0, { a: { from: 'a' } }, 5000]);
  assert.deepEqual([row('d').status, row('d').pending_needs, row('d').upstream_outputs], ['pending', 1, { b: { from: 'b' } }]);
  for (const j of jobs) assert.equal(j.env.WEFT_INPUT_LOG_LEVEL, 'debug');
});

test('a re-run decides the conditions of the jobs its kept jobs make ready at the start', () => {
  // a kept; b (failure()) and c (always()) need only a; d (success()) needs b.
  const conditional = parseWorkflowObject(
    { id: 'w', jobs: { a: { run: 'x' }, b: { run: 'x', needs: 'a', if: 'failure()' }, c: { run: 'x', needs: 'a', if: 'always()' }, d: { run: 'x', needs: 'b' } } },
    { source: 'test' },
  );
  const [a] = planRun(conditional, 1000).jobs;
  const keptA = { ...a!, row_id: 1, run_number: 1, status: 'success' as const, outputs: { from: 'a' }, started_at_ms: 1100, finished_at_ms: 1200 };
  const { jobs } = planRun(conditional, 2000, { kept: new Map([['a', keptA]]) });
  const state = Object.fromEntries(jobs.map((j) => [j.job_id, j.status]));
  assert.deepEqual(state, { a: 'success', b: 'skipped', c: 'queued', d: 'skipped' });
  const c = jobs.find((j) => j.job_id === 'c')!;
  assert.deepEqual(c.upstream_outputs, { a: { from: 'a' } }, 'a kept need still hands its outputs down');
  assert.match(jobs.find((j) => j.job_id === 'b')!.error ?? '', /failure\(\) is false/);
});

test('a job named constructor that the start skips gives its always() dependent an empty entry, not Object', () => {
  const named = parseWorkflowObject(
    JSON.parse('{"id":"w","jobs":{"constructor":{"run":"x","if":"failure()"},"__proto__":{"run":"x"},"after":{"run":"x","needs":["constructor","__proto__"],"if":"always()"}}}'),
    { source: 'test' },
  );
  const first = planRun(named, 1000).jobs;
  // __proto__ succeeded in run 1 and is kept; constructor is skipped at the start again, which readies `after`.
  const keep = new Map([['__proto__', { ...first.find((j) => j.job_id === '__proto__')!, row_id: 2, run_number: 1, status: 'success' as const, outputs: { o: '1' } }]]);
  const after = planRun(named, 5000, { kept: keep }).jobs.find((j) => j.job_id === 'after')!;
  assert.equal(after.status, 'queued');
  assert.equal(JSON.stringify(after.upstream_outputs), '{"constructor":{},"__proto__":{"o":"1"}}');
});
