/**
 * Conformance: workflows calling workflows (README "Workflows calling workflows"; docs/architecture.md
 * "Workflows calling workflows"): a calling job is never claimed; startChildRun starts the called
 * workflow's run and moves the calling job in one step, once per attempt; settleCall ends the job's
 * attempt once, guarded by the run it runs on; orphaned child runs are found; saves refuse a cycle or
 * a chain deeper than five; and the races of each on several connections at once.
 */
import assert from 'node:assert/strict';
import { CALL_LABEL_KEY } from '../../src/domain/calls.js';
import type { Concurrency, JobSpec } from '../../src/domain/model.js';
import type { NewJob, Store, StartChildRunOutcome } from '../../src/store/store.js';
import type { Case, StoreHandle } from './conformance.js';
import { HASH, buildJobs, claim, claimOne, complete, job, labelSetsOf, read, runStatus, wfRecord, type Spec } from './fixtures.js';

/** The jobs of a run whose `calls` jobs call the given workflows (as run-plan.ts builds them). */
function callerJobs(wf: string, now: number, specs: Record<string, Spec>, calls: Record<string, string>): NewJob[] {
  return buildJobs(wf, now, specs).map((j) =>
    calls[j.job_id] === undefined ? j : { ...j, command: '', labels: [], label_key: CALL_LABEL_KEY, env: {}, call: { uses: calls[j.job_id]!, with: {} }, child_run: null },
  );
}

async function startCaller(store: Store, wf: string, now: number, specs: Record<string, Spec>, calls: Record<string, string>): Promise<number> {
  await store.saveWorkflow(wfRecord(wf, now));
  const jobs = callerJobs(wf, now, specs, calls);
  // As the engine: a calling job's key is recorded as no label set.
  const out = await store.startRun({ workflow_id: wf, expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs.filter((j) => !j.call)), now_ms: now });
  if (out.kind !== 'started') throw new Error(`startRun(${wf}) answered ${JSON.stringify(out)}`);
  return out.run.run_number;
}

async function define(store: Store, wf: string, concurrency?: Concurrency): Promise<void> {
  const rec = wfRecord(wf, 1000);
  await store.saveWorkflow(concurrency ? { ...rec, definition: { ...rec.definition, concurrency } } : rec);
}

/** The start of a run of `callee` for attempt `attempt` of job `jobId` of `wf`'s run `run`. */
function startChild(store: Store, callee: string, now: number, parent: { wf: string; run?: number; job: string; attempt?: number }, specs: Record<string, Spec> = { a: {} }, hash = HASH): Promise<StartChildRunOutcome> {
  const jobs = buildJobs(callee, now, specs);
  return store.startChildRun({
    workflow_id: callee,
    expected_hash: hash,
    jobs,
    label_sets: labelSetsOf(jobs),
    now_ms: now,
    trigger: 'call',
    parent: { workflow_id: parent.wf, run_number: parent.run ?? 1, job_id: parent.job, attempt: parent.attempt ?? 0 },
  });
}

/** A definition whose one job calls `callee` (or runs a command), as saves record its calls. */
function callingRecord(id: string, callees: readonly string[]) {
  const jobs: JobSpec[] = callees.length === 0
    ? [{ id: 'go', name: 'go', command: 'true', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null }]
    : callees.map((c, i) => ({ id: `go${i}`, name: `go${i}`, command: '', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null, uses: c }));
  const rec = wfRecord(id, 1000, { hash: `h-${id}-${callees.join(',')}` });
  return { ...rec, definition: { ...rec.definition, jobs } };
}

const kind = (o: unknown) => (typeof o === 'object' && o !== null ? (o as { kind: string }).kind : o);

export function callCases(withStore: Case): void {
  withStore('a calling job is never claimed, whatever label keys a claim offers; queuedCalls lists it once ready', async (store) => {
    await define(store, 'c');
    await startCaller(store, 'p', 1000, { call: {}, plain: { labels: ['linux'] } }, { call: 'c' });
    const sets = await read(store, (r) => r.labelSetsSince(0));
    assert.ok(!sets.some((s) => s.key === CALL_LABEL_KEY), 'the call key is no label set');
    const got = await claim(store, 2000, { max: 10, labels: ['linux'], keys: ['', ...sets.map((s) => s.key)] });
    assert.deepEqual(got.map((c) => c.job.job_id), ['plain']);
    assert.deepEqual(await claim(store, 2000, { max: 10, keys: [''] }), []);
    const call = await job(store, 'p', 'call');
    assert.equal(call.status, 'queued');
    assert.deepEqual(call.call, { uses: 'c', with: {} });
    assert.equal(call.child_run, null);
    assert.equal((await job(store, 'p', 'plain')).call, undefined, 'an ordinary job carries no call');
    assert.deepEqual((await read(store, (r) => r.queuedCalls(2000, 10))).map((j) => j.job_id), ['call']);
    assert.deepEqual(await read(store, (r) => r.queuedCalls(999, 10)), [], 'not ready before it was queued');
  });

  withStore('startChildRun starts the called run and moves the calling job to running in one step, once per attempt', async (store) => {
    await define(store, 'c');
    await startCaller(store, 'p', 1000, { call: {} }, { call: 'c' });
    const out = await startChild(store, 'c', 2000, { wf: 'p', job: 'call' });
    assert.equal(out.kind, 'started');
    if (out.kind !== 'started') return;
    assert.deepEqual(out.run.parent, { workflow_id: 'p', run_number: 1, job_id: 'call' });
    assert.equal(out.run.trigger, 'call');
    assert.equal(out.parent.status, 'running');
    assert.equal(out.parent.child_run, 1);
    assert.ok(out.changes.some((c) => c.workflow_id === 'p' && c.job_id === 'call'), 'the calling job is among the changes');
    assert.ok(out.changes.some((c) => c.workflow_id === 'c' && c.job_id === 'a'));
    const call = await job(store, 'p', 'call');
    assert.deepEqual([call.status, call.child_run, call.started_at_ms, call.worker_id, call.lease_id], ['running', 1, 2000, null, null]);
    assert.deepEqual((await read(store, (r) => r.getRun('c', 1)))?.parent, { workflow_id: 'p', run_number: 1, job_id: 'call' });
    assert.equal((await read(store, (r) => r.getRun('p', 1)))?.parent, undefined);
    assert.deepEqual(await read(store, (r) => r.queuedCalls(3000, 10)), []);
    assert.deepEqual(await startChild(store, 'c', 2100, { wf: 'p', job: 'call' }), { kind: 'moved' }, 'the same attempt again');
    assert.deepEqual(await startChild(store, 'c', 2100, { wf: 'p', job: 'call', attempt: 1 }), { kind: 'moved' }, 'another attempt');
    assert.deepEqual(await startChild(store, 'c', 2100, { wf: 'p', job: 'nope' }), { kind: 'moved' }, 'no such job');
    assert.equal((await read(store, (r) => r.getWorkflow('c')))?.latest_run, 1, 'no second run');
    // The called run's jobs are claimable as any run's.
    await claimOne(store, 3000, 'a');
  });

  withStore("startChildRun obeys the called workflow's concurrency; its refusals leave the calling job queued", async (store) => {
    await define(store, 'busy');
    await define(store, 'waits', { max_runs: 1, when_full: 'queue' });
    await startCaller(store, 'p', 1000, { one: {}, two: {}, three: {}, four: {} }, { one: 'busy', two: 'waits', three: 'ghost', four: 'busy' });
    assert.equal((await startChild(store, 'busy', 1100, { wf: 'p', job: 'one' })).kind, 'started');
    const active = await startChild(store, 'busy', 1200, { wf: 'p', job: 'four' });
    assert.deepEqual(active, { kind: 'active', run_number: 1, run_numbers: [1] });
    assert.equal((await job(store, 'p', 'four')).status, 'queued');
    assert.deepEqual(await startChild(store, 'ghost', 1200, { wf: 'p', job: 'three' }), { kind: 'not_found' });
    assert.deepEqual(await startChild(store, 'waits', 1200, { wf: 'p', job: 'two' }, { a: {} }, 'another-hash'), { kind: 'stale' });
    for (const id of ['two', 'three']) assert.equal((await job(store, 'p', id)).status, 'queued');
    // A workflow whose slot is taken with when_full queue: the child waits queued, its caller runs on it.
    const first = await store.startRun({ workflow_id: 'waits', expected_hash: HASH, jobs: buildJobs('waits', 1300, { a: {} }), label_sets: [], now_ms: 1300 });
    assert.equal(first.kind, 'started');
    const queued = await startChild(store, 'waits', 1400, { wf: 'p', job: 'two' });
    assert.equal(queued.kind, 'queued');
    if (queued.kind !== 'queued') return;
    assert.deepEqual([queued.run.run_number, queued.run.status, queued.parent.status, queued.parent.child_run], [2, 'queued', 'running', 2]);
    assert.deepEqual((await read(store, (r) => r.getRun('waits', 2)))?.parent, { workflow_id: 'p', run_number: 1, job_id: 'two' });
  });

  withStore("settleCall: the child's success ends the calling job with its outputs, the jobs after it get them; a second delivery changes nothing", async (store) => {
    await define(store, 'c');
    await startCaller(store, 'p', 1000, { call: {}, after: { needs: ['call'] } }, { call: 'c' });
    await startChild(store, 'c', 1100, { wf: 'p', job: 'call' });
    const req = { workflow_id: 'p', run_number: 1, job_id: 'call', expect: { child_run: 1 }, result: { kind: 'success' as const, outputs: { version: '1.2' } }, now_ms: 2000 };
    assert.deepEqual(await store.settleCall({ ...req, expect: { child_run: 2 } }), { kind: 'moved' }, 'not the run it runs on');
    const out = await store.settleCall(req);
    assert.equal(out.kind, 'settled');
    if (out.kind !== 'settled') return;
    assert.deepEqual([out.job.status, out.job.outputs, out.job.finished_at_ms, out.job.child_run], ['success', { version: '1.2' }, 2000, 1]);
    assert.ok(out.changes.some((c) => c.job_id === 'after'));
    const after = await job(store, 'p', 'after');
    assert.deepEqual([after.status, after.upstream_outputs], ['queued', { call: { version: '1.2' } }]);
    assert.deepEqual(await store.settleCall(req), { kind: 'moved' }, 'the second delivery');
    assert.deepEqual(await store.settleCall({ ...req, result: { kind: 'failed', error: 'late', retryable: false } }), { kind: 'moved' });
    assert.equal((await job(store, 'p', 'call')).status, 'success');
    // The child's own job is older in the queue; the caller's dependent comes next.
    const got = await claim(store, 3000, { max: 2 });
    assert.deepEqual(got.map((c) => `${c.job.workflow_id}/${c.job.job_id}`), ['c/a', 'p/after']);
    await complete(store, got[1]!.lease.lease_id, {}, 3100);
    assert.deepEqual(await runStatus(store, 'p'), { status: 'success', finished_at_ms: 3100 });
  });

  withStore("settleCall: a failure follows the job's retry plan (next attempt after its backoff, a new child), then fails for good, skipping what is below", async (store) => {
    await define(store, 'c', { max_runs: 10, when_full: 'reject' });
    await startCaller(store, 'p', 1000, { call: { max_retries: 1, backoff: { kind: 'fixed', delay_secs: 5 } }, after: { needs: ['call'] } }, { call: 'c' });
    await startChild(store, 'c', 1100, { wf: 'p', job: 'call' });
    const failed = (child: number, now: number) =>
      store.settleCall({ workflow_id: 'p', run_number: 1, job_id: 'call', expect: { child_run: child }, result: { kind: 'failed', error: `child ${child} failed`, retryable: true }, now_ms: now });
    const first = await failed(1, 2000);
    assert.equal(first.kind, 'settled');
    const again = await job(store, 'p', 'call');
    assert.deepEqual([again.status, again.attempt, again.ready_at_ms, again.delayed_until_ms, again.error, again.child_run], ['queued', 1, 7000, 7000, 'child 1 failed', 1]);
    assert.deepEqual(await failed(1, 2100), { kind: 'moved' }, 'the first child ended already');
    assert.deepEqual(await read(store, (r) => r.queuedCalls(6999, 10)), [], 'not before its backoff');
    assert.deepEqual((await read(store, (r) => r.queuedCalls(7000, 10))).map((j) => j.attempt), [1]);
    assert.deepEqual(await startChild(store, 'c', 7000, { wf: 'p', job: 'call', attempt: 0 }), { kind: 'moved' });
    const second = await startChild(store, 'c', 7000, { wf: 'p', job: 'call', attempt: 1 });
    assert.equal(second.kind === 'started' && second.parent.child_run, 2);
    const last = await failed(2, 8000);
    assert.equal(last.kind === 'settled' && last.job.status, 'failed');
    assert.equal((await job(store, 'p', 'after')).status, 'skipped');
    assert.deepEqual(await runStatus(store, 'p'), { status: 'failed', finished_at_ms: 8000 });
  });

  withStore('settleCall of a call whose child could not start is guarded by its attempt', async (store) => {
    await startCaller(store, 'p', 1000, { call: { max_retries: 3 } }, { call: 'ghost' });
    const req = { workflow_id: 'p', run_number: 1, job_id: 'call', expect: { attempt: 0 }, result: { kind: 'failed' as const, error: 'called workflow "ghost" does not exist', retryable: false }, now_ms: 2000 };
    const out = await store.settleCall(req);
    assert.equal(out.kind === 'settled' && out.job.status, 'failed', 'not retryable: failed at once, retries or not');
    assert.deepEqual(await store.settleCall(req), { kind: 'moved' });
    assert.deepEqual(await runStatus(store, 'p'), { status: 'failed', finished_at_ms: 2000 });
    assert.deepEqual(
      await store.settleCall({ workflow_id: 'p', run_number: 1, job_id: 'nope', expect: { attempt: 0 }, result: req.result, now_ms: 2000 }),
      { kind: 'moved' },
    );
  });

  withStore("cancelling the caller's run cancels the running calling job; its child is then an orphan until cancelled, one whose always() jobs a cancel spared is not", async (store) => {
    await define(store, 'c', { max_runs: 10, when_full: 'reject' });
    await startCaller(store, 'p', 1000, { call: {}, after: { needs: ['call'], condition: 'always' } }, { call: 'c' });
    await startChild(store, 'c', 1100, { wf: 'p', job: 'call' }, { a: {}, b: { needs: ['a'], condition: 'always' } });
    assert.deepEqual(await read(store, (r) => r.orphanedChildRuns(10)), []);
    const cancelled = await store.cancelRun('p', 2000, 1);
    assert.equal(cancelled.kind, 'cancelled');
    assert.deepEqual(cancelled.kind === 'cancelled' && cancelled.jobs, ['call']);
    assert.equal((await job(store, 'p', 'call')).status, 'cancelled');
    assert.deepEqual(
      await store.settleCall({ workflow_id: 'p', run_number: 1, job_id: 'call', expect: { child_run: 1 }, result: { kind: 'success', outputs: {} }, now_ms: 2100 }),
      { kind: 'moved' },
      "the child's end reaches a cancelled job",
    );
    assert.deepEqual((await read(store, (r) => r.orphanedChildRuns(10))).map((r) => [r.workflow_id, r.run_number, r.parent?.job_id]), [['c', 1, 'call']]);
    const child = await store.cancelRun('c', 2200, 1);
    assert.deepEqual(child.kind === 'cancelled' && child.jobs, ['a']);
    assert.equal((await job(store, 'c', 'b')).status, 'queued', 'its always() job was spared and runs');
    assert.deepEqual(await read(store, (r) => r.orphanedChildRuns(10)), [], 'a run a cancel reached is not cancelled again');
    // A child whose parent's run is gone altogether is an orphan too.
    await startCaller(store, 'q', 3000, { call: {} }, { call: 'c' });
    await startChild(store, 'c', 3100, { wf: 'q', job: 'call' });
    assert.deepEqual(await read(store, (r) => r.orphanedChildRuns(10)), []);
    await store.cancelRun('q', 3200);
    assert.deepEqual((await read(store, (r) => r.orphanedChildRuns(10))).map((r) => [r.workflow_id, r.run_number]), [['c', 2]]);
  });

  withStore('saves refuse a cycle of calls or a chain of more than five, naming it; deleting a workflow drops its calls', async (store) => {
    for (const [id, callee] of [['f', null], ['e', 'f'], ['d', 'e'], ['c', 'd'], ['b', 'c'], ['a', 'b']] as const) {
      assert.equal(await store.saveWorkflow(callingRecord(id, callee ? [callee] : [])), 'created');
    }
    assert.deepEqual(await store.saveWorkflow(callingRecord('top', ['a'])), { kind: 'call_chain', problem: { kind: 'depth', chain: ['top', 'a', 'b', 'c', 'd', 'e', 'f'] } });
    assert.deepEqual(await store.createWorkflow(callingRecord('top', ['x', 'a'])), { kind: 'call_chain', problem: { kind: 'depth', chain: ['top', 'a', 'b', 'c', 'd', 'e', 'f'] } });
    assert.equal(await read(store, (r) => r.getWorkflow('top')), null);
    assert.deepEqual(await store.saveWorkflow(callingRecord('f', ['g'])), { kind: 'call_chain', problem: { kind: 'depth', chain: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] } });
    assert.deepEqual(await store.saveWorkflow(callingRecord('e', ['b'])), { kind: 'call_chain', problem: { kind: 'cycle', chain: ['e', 'b', 'c', 'd', 'e'] } });
    assert.deepEqual(await store.saveWorkflow(callingRecord('c', ['c'])), { kind: 'call_chain', problem: { kind: 'cycle', chain: ['c', 'c'] } });
    assert.equal(await store.saveWorkflow(callingRecord('e', ['f'])), 'unchanged', 'an unchanged save is not checked again');
    assert.equal(await store.createWorkflow(callingRecord('a', ['b'])), 'exists');
    assert.deepEqual(await read(store, (r) => r.callingWorkflows(100)), ['a', 'b', 'c', 'd', 'e']);
    // A call of a workflow not saved yet counts: saving that one later to call back is a cycle.
    assert.equal(await store.saveWorkflow(callingRecord('x', ['later'])), 'created');
    assert.deepEqual(await store.createWorkflow(callingRecord('later', ['x'])), { kind: 'call_chain', problem: { kind: 'cycle', chain: ['later', 'x', 'later'] } });
    // Calling nothing any more drops the calls; deleting a workflow drops its own.
    assert.equal(await store.saveWorkflow(callingRecord('b', [])), 'updated');
    assert.equal(await store.saveWorkflow(callingRecord('top', ['a'])), 'created', 'a → b is the chain now');
    assert.equal(await store.deleteWorkflow('x', { max_runs: 10, max_log_chunks: 100 }), 'deleted');
    assert.equal(await store.createWorkflow(callingRecord('later', ['x'])), 'created');
    assert.deepEqual(await read(store, (r) => r.callingWorkflows(100)), ['a', 'c', 'd', 'e', 'later', 'top']);
  });
}

/**
 * The races, on three connections (SQLite: three stores on one file; PostgreSQL: three pools): every
 * connection starts the child of every calling job at once (each job's child starts exactly once, for
 * its attempt), two deliveries of each child's end at once (each ends its job once), and saves that
 * would together close a cycle (one of each pair is refused).
 */
export async function callRaces(store: Store, h: StoreHandle): Promise<void> {
  const others = await Promise.all([h.another(), h.another()]);
  const stores = [store, ...others];
  try {
    const n = 12;
    await define(store, 'c', { max_runs: 100, when_full: 'reject' });
    const specs = Object.fromEntries(Array.from({ length: n }, (_, i) => [`call${i}`, {}]));
    await startCaller(store, 'p', 1000, specs, Object.fromEntries(Object.keys(specs).map((id) => [id, 'c'])));
    const starts = await Promise.all(stores.flatMap((s) => Object.keys(specs).map((id) => startChild(s, 'c', 2000, { wf: 'p', job: id }))));
    assert.equal(starts.filter((o) => o.kind === 'started').length, n, JSON.stringify(starts.map(kind)));
    assert.equal(starts.filter((o) => o.kind === 'moved').length, 2 * n);
    const jobs = await read(store, (r) => r.getRunJobs('p', 1));
    const runs = await read(store, (r) => r.getRuns(Array.from({ length: n + 1 }, (_, i) => ({ workflow_id: 'c', run_number: i + 1 }))));
    assert.equal(runs.length, n, 'one child per calling job');
    for (const j of jobs) {
      const child = runs.find((r) => r.run_number === j.child_run);
      assert.deepEqual(child?.parent, { workflow_id: 'p', run_number: 1, job_id: j.job_id }, `${j.job_id} runs on its own child`);
    }
    const ends = await Promise.all(
      stores.flatMap((s) =>
        jobs.map((j) => s.settleCall({ workflow_id: 'p', run_number: 1, job_id: j.job_id, expect: { child_run: j.child_run! }, result: { kind: 'failed', error: 'x', retryable: false }, now_ms: 3000 })),
      ),
    );
    assert.equal(ends.filter((o) => o.kind === 'settled').length, n, JSON.stringify(ends.map(kind)));
    assert.deepEqual(await runStatus(store, 'p'), { status: 'failed', finished_at_ms: 3000 });

    for (let i = 0; i < 6; i++) {
      const pair = [callingRecord(`x${i}`, [`y${i}`]), callingRecord(`y${i}`, [`x${i}`])];
      const saves = await Promise.all(pair.map((rec, k) => stores[(i + k) % stores.length]!.saveWorkflow(rec)));
      assert.deepEqual(saves.map(kind).sort(), ['call_chain', 'created'], `pair ${i}: ${JSON.stringify(saves)}`);
    }
  } finally {
    await Promise.all(others.map((s) => s.close()));
  }
}
