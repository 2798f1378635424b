/**
 * Conformance: approval gates (README "Approvals"): a job with `approval:` waits in
 * `awaiting_approval` once its needs are met, is never claimable there, and ends its wait by exactly
 * one of approve, reject, timeout (timeOutApprovals) or a cancel of its run.
 */
import assert from 'node:assert/strict';
import type { PersonDecision } from '../../src/domain/approval.js';
import type { JobSpec, WorkflowDefinition } from '../../src/domain/model.js';
import { planRun } from '../../src/engine/run-plan.js';
import type { DecideApprovalOutcome, Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { claim, claimOne, complete, HASH, job, pool, runStatus, wfRecord } from './fixtures.js';

const spec = (id: string, over: Partial<JobSpec> = {}): JobSpec => ({
  id, name: id, command: `echo ${id}`, needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null, ...over,
});

/** build → gate (an approval alone, 60 s) → deploy, and `cleanup: always()` below the gate. */
function release(id = 'rel'): WorkflowDefinition {
  return {
    id, name: id, trigger: null, env: {},
    jobs: [
      spec('build'),
      spec('gate', { command: '', needs: ['build'], approval: { message: 'ship it?', timeout_secs: 60 } }),
      spec('deploy', { needs: ['gate'] }),
      spec('cleanup', { needs: ['gate'], condition: 'always' }),
    ],
  };
}

/** One root that gates its own command, and a job below it. */
function gatedRoot(id = 'g', timeout: number | null = null): WorkflowDefinition {
  return {
    id, name: id, trigger: null, env: {},
    jobs: [spec('ship', { approval: { message: null, timeout_secs: timeout } }), spec('notify', { needs: ['ship'] })],
  };
}

async function startPlanned(store: Store, def: WorkflowDefinition, now: number): Promise<number> {
  await store.saveWorkflow(wfRecord(def.id, now, { definition: def }));
  const { jobs, labelSets } = planRun(def, now);
  const out = await store.startRun({ workflow_id: def.id, expected_hash: HASH, jobs, label_sets: labelSets, now_ms: now });
  assert.equal(out.kind, 'started', JSON.stringify(out));
  return out.kind === 'started' ? out.run.run_number : 0;
}

function decide(store: Store, wf: string, jobId: string, decision: PersonDecision, now: number, by: string | null = 'alice', comment: string | null = null, run = 1) {
  return store.decideApproval({ workflow_id: wf, run_number: run, job_id: jobId, decision, decided_by: by, comment, now_ms: now });
}

function decided(out: DecideApprovalOutcome) {
  assert.equal(out.kind, 'decided', JSON.stringify(out));
  return out as Extract<DecideApprovalOutcome, { kind: 'decided' }>;
}

/** build completed at 2000: the gate starts waiting then. */
async function toGate(store: Store, wf = 'rel'): Promise<void> {
  await startPlanned(store, release(wf), 1000);
  const b = await claimOne(store, 1000, 'build');
  await complete(store, b.lease.lease_id, { v: '1' }, 2000);
}

export function approvalCases(withStore: Case): void {
  withStore('a gate waits once its needs end, is never claimable, and its approve lets its dependents run', async (store) => {
    await startPlanned(store, release(), 1000);
    assert.equal((await job(store, 'rel', 'gate')).status, 'pending');
    const b = await claimOne(store, 1000, 'build');
    const done = await complete(store, b.lease.lease_id, { v: '1' }, 2000);
    assert.deepEqual(done.enqueued, [], 'a gate is not queued');
    assert.ok(done.changes.some((c) => c.job_id === 'gate'), 'the wait is a change of the gate');
    const gate = await job(store, 'rel', 'gate');
    assert.equal(gate.status, 'awaiting_approval');
    assert.deepEqual(gate.approval, { message: 'ship it?', timeout_secs: 60, requested_at_ms: 2000, deadline_ms: 62_000, decision: null, decided_by: null, decided_at_ms: null, comment: null });
    assert.deepEqual(gate.upstream_outputs, { build: { v: '1' } });
    assert.deepEqual(await claim(store, 3000, { max: 5 }), [], 'nothing is claimable while the gate waits');
    assert.equal((await runStatus(store, 'rel')).status, 'running');

    const out = decided(await decide(store, 'rel', 'gate', 'approved', 4000, 'alice', 'looks good'));
    assert.equal(out.job.status, 'success');
    assert.deepEqual(out.job.approval, { ...gate.approval, decision: 'approved', decided_by: 'alice', decided_at_ms: 4000, comment: 'looks good' });
    assert.deepEqual(new Set(out.changes.map((c) => c.job_id)), new Set(['gate', 'deploy', 'cleanup']));
    const deploy = await job(store, 'rel', 'deploy');
    assert.deepEqual([deploy.status, deploy.enqueued_at_ms, deploy.upstream_outputs], ['queued', 4000, { gate: {} }]);
    for (const id of ['deploy', 'cleanup']) {
      const c = await claimOne(store, 5000, id);
      await complete(store, c.lease.lease_id, {}, 6000);
    }
    assert.deepEqual(await runStatus(store, 'rel'), { status: 'success', finished_at_ms: 6000 });
  });

  withStore('a root that gates its own command waits from the run start; approved, it is queued and runs', async (store) => {
    await startPlanned(store, gatedRoot('g', 30), 1000);
    const ship = await job(store, 'g', 'ship');
    assert.equal(ship.status, 'awaiting_approval');
    assert.deepEqual([ship.approval?.requested_at_ms, ship.approval?.deadline_ms], [1000, 31_000]);
    assert.deepEqual(await claim(store, 1500), []);
    const out = decided(await decide(store, 'g', 'ship', 'approved', 2000, null));
    assert.deepEqual([out.job.status, out.job.enqueued_at_ms, out.job.approval?.decision, out.job.approval?.decided_by], ['queued', 2000, 'approved', null]);
    assert.deepEqual(out.changes.map((c) => c.job_id), ['ship']);
    // An approved job is no longer timed out by its gate: only waits are.
    assert.deepEqual((await store.timeOutApprovals(100_000, 10)).ended, []);
    const c = await claimOne(store, 3000, 'ship');
    await complete(store, c.lease.lease_id, {}, 4000);
    const n = await claimOne(store, 4000, 'notify');
    await complete(store, n.lease.lease_id, {}, 5000);
    assert.deepEqual(await runStatus(store, 'g'), { status: 'success', finished_at_ms: 5000 });
    assert.equal((await job(store, 'g', 'ship')).approval?.decision, 'approved', 'the decision stays on the job');
  });

  withStore('a reject fails the gate for good (no retry): success() below is skipped, always() runs, the run fails', async (store) => {
    await toGate(store);
    const out = decided(await decide(store, 'rel', 'gate', 'rejected', 3000, 'bob', 'not today'));
    assert.deepEqual([out.job.status, out.job.error, out.job.attempt], ['failed', 'approval rejected by bob: not today', 0]);
    assert.deepEqual([out.job.approval?.decision, out.job.approval?.decided_by, out.job.approval?.decided_at_ms, out.job.approval?.comment], ['rejected', 'bob', 3000, 'not today']);
    const deploy = await job(store, 'rel', 'deploy');
    assert.deepEqual([deploy.status, deploy.error], ['skipped', 'upstream job "gate" failed']);
    const cleanup = await job(store, 'rel', 'cleanup');
    assert.deepEqual([cleanup.status, cleanup.needs_results], ['queued', { gate: 'failure' }]);
    const c = await claimOne(store, 4000, 'cleanup');
    await complete(store, c.lease.lease_id, {}, 5000);
    assert.deepEqual(await runStatus(store, 'rel'), { status: 'failed', finished_at_ms: 5000 });
  });

  withStore('deciding a job that is not waiting changes nothing and says its state; an unknown job or run is not_found', async (store) => {
    await startPlanned(store, release(), 1000);
    const early = await decide(store, 'rel', 'gate', 'approved', 1500);
    assert.equal(early.kind, 'not_waiting');
    assert.equal(early.kind === 'not_waiting' && early.job.status, 'pending');
    const b = await claimOne(store, 1500, 'build');
    await complete(store, b.lease.lease_id, {}, 2000);
    decided(await decide(store, 'rel', 'gate', 'rejected', 3000));
    const again = await decide(store, 'rel', 'gate', 'approved', 3500, 'carol');
    assert.equal(again.kind, 'not_waiting');
    assert.deepEqual(again.kind === 'not_waiting' && [again.job.status, again.job.approval?.decision, again.job.approval?.decided_by], ['failed', 'rejected', 'alice']);
    const plain = await decide(store, 'rel', 'build', 'approved', 3500);
    assert.equal(plain.kind === 'not_waiting' && plain.job.status, 'success');
    assert.deepEqual(await decide(store, 'rel', 'nope', 'approved', 3500), { kind: 'not_found' });
    assert.deepEqual(await decide(store, 'rel', 'gate', 'approved', 3500, 'x', null, 7), { kind: 'not_found' });
  });

  withStore('timeOutApprovals fails waits past their deadline (timed_out, by no one), never before, never one without a timeout', async (store) => {
    await toGate(store);
    await startPlanned(store, gatedRoot('forever', null), 2000);
    assert.deepEqual((await store.timeOutApprovals(62_000, 10)).ended, [], 'at the deadline the wait is still on');
    const out = await store.timeOutApprovals(62_001, 10);
    assert.deepEqual(out.ended.map((j) => [j.job_id, j.status, j.approval?.decision, j.approval?.decided_by, j.approval?.decided_at_ms]), [['gate', 'failed', 'timed_out', null, 62_001]]);
    assert.equal(out.ended[0]!.error, 'approval timed out after 60s with no decision');
    assert.deepEqual(new Set(out.changes.map((c) => c.job_id)), new Set(['gate', 'deploy', 'cleanup']));
    assert.equal((await job(store, 'rel', 'deploy')).status, 'skipped');
    assert.deepEqual((await store.timeOutApprovals(10_000_000, 10)).ended, [], 'each wait times out once; one without timeout_secs never');
    assert.equal((await job(store, 'forever', 'ship')).status, 'awaiting_approval');
    assert.equal((await decide(store, 'rel', 'gate', 'approved', 70_000)).kind, 'not_waiting', 'a timed-out gate cannot be approved afterwards');
  });

  withStore('a cancel of the run ends the wait (cancelled, even for an always() gate); a decision afterwards changes nothing', async (store) => {
    const def = gatedRoot('c');
    def.jobs.push(spec('tidy', { condition: 'always', approval: { message: null, timeout_secs: null } }));
    await startPlanned(store, def, 1000);
    assert.equal((await job(store, 'c', 'tidy')).status, 'awaiting_approval');
    const out = await store.cancelRun('c', 2000);
    assert.equal(out.kind, 'cancelled');
    assert.deepEqual(out.kind === 'cancelled' && new Set(out.jobs), new Set(['ship', 'notify', 'tidy']));
    for (const id of ['ship', 'tidy']) {
      const j = await job(store, 'c', id);
      assert.deepEqual([j.status, j.approval?.decision], ['cancelled', null], id);
    }
    assert.deepEqual(await runStatus(store, 'c'), { status: 'cancelled', finished_at_ms: 2000 });
    const late = await decide(store, 'c', 'ship', 'approved', 3000);
    assert.equal(late.kind === 'not_waiting' && late.job.status, 'cancelled');
    assert.deepEqual((await store.timeOutApprovals(10_000_000, 10)).ended, []);
  });
  withStore('a queued run (concurrency: queue) begins its gated roots\' wait when it starts, not when it was asked for', async (store) => {
    const def: WorkflowDefinition = { ...gatedRoot('q', 10), concurrency: { max_runs: 1, when_full: 'queue' } };
    await startPlanned(store, def, 1000);
    const { jobs, labelSets } = planRun(def, 2000);
    const second = await store.startRun({ workflow_id: 'q', expected_hash: HASH, jobs, label_sets: labelSets, now_ms: 2000 });
    assert.equal(second.kind, 'queued');
    assert.equal((await store.cancelRun('q', 3000, 1)).kind, 'cancelled');
    const started = await store.startQueuedRuns('q', 4000);
    assert.deepEqual(started.started.map((r) => r.run_number), [2]);
    const ship = await job(store, 'q', 'ship', 2);
    assert.deepEqual([ship.status, ship.approval?.requested_at_ms, ship.approval?.deadline_ms], ['awaiting_approval', 4000, 14_000]);
    decided(await decide(store, 'q', 'ship', 'approved', 5000, 'x', null, 2));
    assert.equal((await job(store, 'q', 'ship', 2)).status, 'queued');
  });
}

/** Decisions racing on one gate, from stores of their own (PostgreSQL: separate pools, real parallel transactions). */
export function approvalRaceCases(withStore: Case, rounds: number): void {
  withStore(`approve, reject, timeout and cancel racing on one gate, ${rounds} runs: exactly one decision lands each time`, async (store, h) => {
    const others = await Promise.all(Array.from({ length: 4 }, () => h.another()));
    try {
      // One round at a time: a timeout pass sees every due wait, so another round's gate must not be due meanwhile.
      await pool(Array.from({ length: rounds }, (_, i) => i), 1, async (i) => {
        const wf = `race${i}`;
        await startPlanned(store, gatedRoot(wf, 1), 1000);
        const at = 5000;
        const racers: Array<Promise<string>> = [
          ...others.slice(0, 3).map((s, k) => decide(s, wf, 'ship', k % 2 === 0 ? 'approved' : 'rejected', at, `p${k}`).then((o) => (o.kind === 'decided' ? `decided:${o.job.approval?.decision}` : o.kind))),
          others[3]!.timeOutApprovals(at, 10).then((o) => (o.ended.length > 0 ? 'decided:timed_out' : 'nothing')),
          ...(i % 3 === 0 ? [store.cancelRun(wf, at).then((o) => (o.kind === 'cancelled' && o.jobs.includes('ship') ? 'cancelled' : 'nothing'))] : []),
        ];
        const results = await Promise.all(racers);
        const decisions = results.filter((r) => r.startsWith('decided:')).map((r) => r.slice('decided:'.length));
        const cancelled = results.includes('cancelled');
        const why = `${wf}: ${JSON.stringify(results)}`;
        // A cancel may also end a gate that an approve queued a moment before; a decision never lands twice.
        assert.equal(decisions.length, cancelled ? decisions.length : 1, why);
        assert.ok(decisions.length <= 1 && (decisions.length === 1 || cancelled), why);
        const ship = await job(store, wf, 'ship');
        const decision = decisions[0] ?? null;
        const state = cancelled ? 'cancelled' : decision === 'approved' ? 'queued' : 'failed';
        assert.deepEqual([ship.status, ship.approval?.decision ?? null], [state, decision], why);
      });
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  }, { timeout: 120_000 });
}
