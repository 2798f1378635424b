/** Conformance: retention (pruneRuns) and deleting workflows (README "Retention"). */
import assert from 'node:assert/strict';
import type { PruneOutcome, PruneRequest, Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { claimOne, complete, read, start, wfRecord } from './fixtures.js';

/** A run of `wf` (jobs a, then b needing a) worked to success; `logs` chunks per job; finished at `at`. */
export async function finishedRun(store: Store, wf: string, at: number, logs = 0): Promise<{ run: number; leases: string[] }> {
  const run = await start(store, wf, at, { a: {}, b: { needs: ['a'] } });
  const leases: string[] = [];
  for (const id of ['a', 'b']) {
    const c = await claimOne(store, at, id);
    if (logs > 0) await store.pushLogs(c.lease.lease_id, Array.from({ length: logs }, (_, i) => ({ sequence: i, data: `${id} ${i}` })), at);
    await complete(store, c.lease.lease_id, { from: id }, at);
    leases.push(c.lease.lease_id);
  }
  return { run, leases };
}

const request = (over: Partial<PruneRequest>): PruneRequest => ({
  retain_runs: null,
  finished_before_ms: null,
  max_runs: 100,
  max_log_chunks: 10_000,
  dry_run: false,
  ...over,
});

const names = (out: PruneOutcome) => out.runs.map((r) => `${r.workflow_id}#${r.run_number}`);

async function runNumbers(store: Store, wf: string, upTo: number): Promise<number[]> {
  const found: number[] = [];
  for (let n = 1; n <= upTo; n++) if (await read(store, (r) => r.getRun(wf, n))) found.push(n);
  return found;
}

const logsOf = (store: Store, wf: string, run: number, job: string) =>
  read(store, (r) => r.getLogChunks({ workflow_id: wf, run_number: run, job_id: job, attempt: 0 }));

export function retentionCases(withStore: Case): void {
  withStore('retain_runs keeps the N newest runs of each workflow, oldest finished deleted first', async (store) => {
    for (let i = 1; i <= 5; i++) await finishedRun(store, 'a', 1000 * i);
    await finishedRun(store, 'b', 1500);
    await finishedRun(store, 'b', 2500);
    await store.createWorkflow(wfRecord('idle'));
    const out = await store.pruneRuns(request({ retain_runs: 2 }));
    assert.deepEqual(names(out), ['a#1', 'a#2', 'a#3']);
    assert.deepEqual(out.runs[0], { workflow_id: 'a', run_number: 1, status: 'success', finished_at_ms: 1000, jobs: 2, log_chunks: 0 });
    assert.deepEqual([out.partial, out.more], [null, false]);
    assert.deepEqual(await runNumbers(store, 'a', 5), [4, 5]);
    assert.deepEqual(await runNumbers(store, 'b', 2), [1, 2]);
    assert.equal((await read(store, (r) => r.getWorkflow('a')))?.latest_run, 5, 'the run numbering goes on');
    assert.deepEqual(names(await store.pruneRuns(request({ retain_runs: 2 }))), [], 'nothing left to delete');
    assert.deepEqual(names(await store.pruneRuns(request({ retain_runs: 1 }))), ['b#1', 'a#4']);
  });

  withStore('finished_before_ms deletes runs finished before it, but never a workflow’s latest run', async (store) => {
    for (const at of [1000, 2000, 3000]) await finishedRun(store, 'a', at);
    await finishedRun(store, 'old', 500);
    const out = await store.pruneRuns(request({ finished_before_ms: 2500 }));
    assert.deepEqual(names(out), ['a#1', 'a#2']);
    assert.deepEqual(await runNumbers(store, 'a', 3), [3]);
    assert.deepEqual(await runNumbers(store, 'old', 1), [1], 'its only run stays, so its status still shows it');
    assert.deepEqual(names(await store.pruneRuns(request({ finished_before_ms: 2000 }))), [], 'the cutoff is exclusive');
  });

  withStore('either rule is enough: a run beyond N or finished before the cutoff goes', async (store) => {
    for (const at of [1000, 2000, 3000, 4000]) await finishedRun(store, 'a', at);
    const out = await store.pruneRuns(request({ retain_runs: 3, finished_before_ms: 2500 }));
    assert.deepEqual(names(out), ['a#1', 'a#2']);
  });

  withStore('never deletes a running run, nor a cancelled one that is its workflow’s latest', async (store) => {
    await finishedRun(store, 'a', 1000);
    await finishedRun(store, 'a', 2000);
    await start(store, 'a', 3000, { a: {}, b: { needs: ['a'] } });
    await claimOne(store, 3000, 'a');
    await start(store, 'c', 1000, { a: {} });
    await store.cancelRun('c', 1100);
    const out = await store.pruneRuns(request({ retain_runs: 1, finished_before_ms: 1e15 }));
    assert.deepEqual(names(out), ['a#1', 'a#2']);
    assert.equal((await read(store, (r) => r.getRun('a', 3)))?.status, 'running');
    assert.equal((await read(store, (r) => r.getRun('c', 1)))?.status, 'cancelled');
    assert.equal((await read(store, (r) => r.activeLeases())).length, 1, 'the running job keeps its lease');
  });

  withStore('a pruned run takes its jobs, outputs, leases and log chunks with it; a kept run keeps them', async (store) => {
    const old = await finishedRun(store, 'a', 1000, 3);
    const kept = await finishedRun(store, 'a', 2000, 2);
    const out = await store.pruneRuns(request({ retain_runs: 1 }));
    assert.deepEqual(out.runs, [{ workflow_id: 'a', run_number: 1, status: 'success', finished_at_ms: 1000, jobs: 2, log_chunks: 6 }]);
    assert.equal(await read(store, (r) => r.getRun('a', 1)), null);
    assert.deepEqual(await read(store, (r) => r.getRunJobs('a', 1)), []);
    assert.equal(await read(store, (r) => r.getJob('a', 1, 'b')), null);
    for (const id of old.leases) assert.equal(await read(store, (r) => r.getLease(id)), null);
    assert.deepEqual(await logsOf(store, 'a', 1, 'a'), []);
    assert.equal(await read(store, (r) => r.latestLogAttempt('a', 1, 'a')), null);
    // The run that stays is whole.
    assert.deepEqual((await read(store, (r) => r.getRunJobs('a', 2))).map((j) => [j.job_id, j.outputs]), [['a', { from: 'a' }], ['b', { from: 'b' }]]);
    assert.deepEqual((await logsOf(store, 'a', 2, 'b')).map((c) => c.data), ['b 0', 'b 1']);
    for (const id of kept.leases) assert.equal((await read(store, (r) => r.getLease(id)))?.state, 'completed');
    // A settled lease of the pruned run is unknown from now on.
    assert.equal((await store.heartbeat(old.leases[0]!, 5000)).kind, 'not_found');
  });

  withStore('a dry run deletes nothing and lists what the same call deletes', async (store) => {
    for (let i = 1; i <= 4; i++) await finishedRun(store, 'a', 1000 * i, 1);
    const req = { retain_runs: 1, max_runs: 2 };
    const dry = await store.pruneRuns(request({ ...req, dry_run: true }));
    assert.deepEqual(names(dry), ['a#1', 'a#2']);
    assert.deepEqual(dry.runs.map((r) => [r.jobs, r.log_chunks]), [[2, 2], [2, 2]]);
    assert.deepEqual([dry.partial, dry.more], [null, true]);
    assert.deepEqual(await runNumbers(store, 'a', 4), [1, 2, 3, 4]);
    assert.equal((await logsOf(store, 'a', 1, 'a')).length, 1);
    // The same runs; the real call also reports the blobs it left unnamed (none here: no artifacts).
    const { unnamed_blobs, ...deleted } = await store.pruneRuns(request(req));
    assert.deepEqual(deleted, dry);
    assert.deepEqual(unnamed_blobs, []);
  });

  withStore('max_runs and max_log_chunks bound each call; `more` and `partial` say what is left', async (store) => {
    for (let i = 1; i <= 5; i++) await finishedRun(store, 'w', 1000 * i, 2); // 4 chunks a run
    const two = await store.pruneRuns(request({ retain_runs: 1, max_runs: 2 }));
    assert.deepEqual([names(two), two.more], [['w#1', 'w#2'], true]);
    // 6 chunks may go: run 3 whole (4), then 2 of run 4's, which itself waits for the next call.
    const bounded = await store.pruneRuns(request({ retain_runs: 1, max_log_chunks: 6 }));
    assert.deepEqual(names(bounded), ['w#3']);
    assert.deepEqual([bounded.partial, bounded.more], [{ workflow_id: 'w', run_number: 4, log_chunks: 2 }, true]);
    assert.deepEqual(await runNumbers(store, 'w', 5), [4, 5], 'run 4 is still there, with part of its logs');
    const rest = await store.pruneRuns(request({ retain_runs: 1, max_log_chunks: 6 }));
    assert.deepEqual(rest.runs.map((r) => [r.run_number, r.log_chunks]), [[4, 2]]);
    assert.deepEqual([rest.partial, rest.more], [null, false]);
    // Runs with more chunks than a whole call may delete still go, over several calls: run 5 (4
    // chunks) and run 6 (10), 3 chunks a call.
    await finishedRun(store, 'w', 7000, 5);
    await finishedRun(store, 'w', 8000);
    let calls = 0;
    let chunks = 0;
    for (let out: PruneOutcome | null = null; out === null || out.more; calls++) {
      out = await store.pruneRuns(request({ retain_runs: 1, max_log_chunks: 3 }));
      chunks += out.runs.reduce((n, r) => n + r.log_chunks, 0) + (out.partial?.log_chunks ?? 0);
      assert.ok(calls < 10, 'the calls end');
    }
    assert.deepEqual([calls, chunks], [5, 14]);
    assert.deepEqual(await runNumbers(store, 'w', 7), [7]);
  });

  withStore('deleteWorkflow: not_found, active while a run runs, then deleted with everything of it', async (store) => {
    assert.equal(await store.deleteWorkflow('nope', { max_runs: 10, max_log_chunks: 100 }), 'not_found');
    const first = await finishedRun(store, 'w', 1000, 2);
    await finishedRun(store, 'other', 1000, 1);
    await start(store, 'w', 2000, { a: {} });
    const running = await claimOne(store, 2000, 'a');
    await store.pushLogs(running.lease.lease_id, [{ sequence: 0, data: 'last words' }], 2100);
    assert.equal(await store.deleteWorkflow('w', { max_runs: 10, max_log_chunks: 100 }), 'active');
    assert.deepEqual(await runNumbers(store, 'w', 2), [1, 2], 'nothing was deleted');

    await store.cancelRun('w', 2200);
    assert.equal(await store.deleteWorkflow('w', { max_runs: 10, max_log_chunks: 100 }), 'deleted');
    assert.equal(await read(store, (r) => r.getWorkflow('w')), null);
    assert.deepEqual(await runNumbers(store, 'w', 2), []);
    assert.deepEqual(await read(store, (r) => r.getRunJobs('w', 2)), []);
    for (const id of [...first.leases, running.lease.lease_id]) assert.equal(await read(store, (r) => r.getLease(id)), null);
    assert.deepEqual(await logsOf(store, 'w', 1, 'a'), []);
    assert.deepEqual(await logsOf(store, 'w', 2, 'a'), []);
    assert.deepEqual(await read(store, (r) => r.activeLeases()), []);
    assert.equal(await store.deleteWorkflow('w', { max_runs: 10, max_log_chunks: 100 }), 'not_found');
    // Other workflows are untouched.
    assert.deepEqual(await runNumbers(store, 'other', 1), [1]);
    assert.equal((await logsOf(store, 'other', 1, 'a')).length, 1);

    // The id can be created again, and its runs count from 1 with nothing of the old ones.
    assert.equal(await store.createWorkflow(wfRecord('w', 5000)), 'created');
    assert.equal(await start(store, 'w', 5000, { a: {} }), 1);
    assert.deepEqual(await logsOf(store, 'w', 1, 'a'), []);
    assert.equal((await read(store, (r) => r.getJob('w', 1, 'a')))?.status, 'queued');
  });

  withStore('deleteWorkflow within limits answers `more`, keeping the latest run until the last call', async (store) => {
    for (let i = 1; i <= 4; i++) await finishedRun(store, 'w', 1000 * i, 2);
    const limits = { max_runs: 1, max_log_chunks: 3 };
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const out = await store.deleteWorkflow('w', limits);
      outcomes.push(out);
      if (out !== 'more') break;
      const wf = await read(store, (r) => r.getWorkflow('w'));
      assert.ok(wf && (await read(store, (r) => r.getRun('w', wf.latest_run))), 'the latest run stays while the workflow does');
    }
    // Four runs of 4 chunks, 3 chunks a call: two calls a run.
    assert.deepEqual(outcomes, [...Array<string>(7).fill('more'), 'deleted']);
    assert.equal(await read(store, (r) => r.getWorkflow('w')), null);
    assert.deepEqual(await runNumbers(store, 'w', 4), []);
  });
}
