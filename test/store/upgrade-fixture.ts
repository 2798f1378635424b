/**
 * The database a migration-1 store left behind, shared by both backends' upgrade tests: `mid` has a
 * succeeded job `a`, a running `c` (lease `lease-c`) and `d` waiting for both; `bad` has a failed `f`,
 * `g` skipped below it and `q` still queued. Each backend writes these rows with its own SQL, opens
 * its current store on them and runs `assertUpgradeCarriesOn`.
 */
import assert from 'node:assert/strict';
import { jobRow } from '../../src/store/rows.js';
import type { NewJob, Store } from '../../src/store/store.js';
import { buildJobs, claimOne, complete, job, labelSetsCarryOn } from './fixtures.js';

export const V1_WORKFLOWS = ['mid', 'bad'] as const;

/** The jobs of both runs, in row order, with the states the old store had reached. */
export function v1Jobs(): NewJob[] {
  const patch: Record<string, Partial<NewJob>> = {
    a: { status: 'success', outputs: { A: '1' }, finished_at_ms: 1500 },
    c: { status: 'running', started_at_ms: 1500, worker_id: 'wk', lease_id: 'lease-c' },
    f: { status: 'failed', error: 'x', finished_at_ms: 1500 },
    g: { status: 'skipped', error: 'upstream job "f" failed', finished_at_ms: 1500 },
  };
  return [
    ...buildJobs('mid', 1000, { a: {}, c: {}, d: { needs: ['a', 'c'] } }),
    ...buildJobs('bad', 1000, { f: {}, g: { needs: ['f'] }, q: {} }),
  ].map((j) => ({ ...j, ...patch[j.job_id] }));
}

/** A job row as migration 1 stored it: no pending_needs column yet, nor the columns of conditions, artifacts, approvals, concurrency groups or calls. */
export function v1JobRow(j: NewJob, runNumber: number): Record<string, unknown> {
  const {
    pending_needs: _dropped,
    condition: _c,
    needs_results: _n,
    failed_upstream: _f,
    run_cancelled: _r,
    conditional_dependents: _d,
    group_id: _g,
    matrix: _m,
    max_parallel: _mp,
    fail_fast: _ff,
    for_each: _fe,
    item: _it,
    item_index: _ii,
    artifact_spec: _a,
    priority: _p,
    approval: _ap,
    approval_requested_at_ms: _apr,
    approval_deadline_ms: _apd,
    approval_decision: _apx,
    approval_decided_by: _apb,
    approval_decided_at_ms: _apt,
    approval_comment: _apc,
    concurrency_group: _cg,
    cancel_in_progress: _cip,
    call_spec: _cs,
    child_run: _cr,
    ...row
  } = jobRow(j, runNumber) as Record<string, unknown>;
  return row;
}

/** The upgraded store counts from the old rows and carries both runs to their end correctly. */
export async function assertUpgradeCarriesOn(store: Store): Promise<void> {
  assert.equal((await job(store, 'mid', 'd')).pending_needs, 1, 'counted from the needs not yet succeeded');
  assert.equal((await job(store, 'bad', 'g')).pending_needs, 1, 'a skipped job still lacks its failed need');
  const out = await complete(store, 'lease-c', { C: '2' }, 2000);
  assert.deepEqual(out.enqueued, ['d']);
  assert.deepEqual((await job(store, 'mid', 'd')).upstream_outputs, { a: { A: '1' }, c: { C: '2' } });
  const q = await claimOne(store, 2000, 'q');
  const d = await claimOne(store, 2000, 'd');
  await complete(store, d.lease.lease_id, {}, 3000);
  assert.equal((await store.read((r) => r.getRun('mid', 1)))?.status, 'success');
  assert.equal((await store.read((r) => r.getRun('bad', 1)))?.status, 'running');
  await complete(store, q.lease.lease_id, {}, 4000);
  assert.deepEqual(await store.read((r) => r.getRun('bad', 1)), {
    workflow_id: 'bad', run_number: 1, status: 'failed', created_at_ms: 1000, finished_at_ms: 4000, inputs: {}, rerun_of: null, concurrency_group: null,
    trigger: null, definition_hash: null, event_name: null,
  });
  await labelSetsCarryOn(store);
}
