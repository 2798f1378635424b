/**
 * Approval gates (README "Approvals") through the whole stack, on SQLite and on PostgreSQL: a spawned
 * `weft server`, a real `weft worker` running the jobs, and decisions made with `weft approve|reject`
 * and over HTTP. Each path: approve lets the gated work run, reject fails the gate and decides what is
 * below it, a timeout fails it (the reaper's pass), a cancel ends the wait, a re-run waits again, and
 * of many decisions sent at once exactly one lands.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, request, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox, serverProcess, spawnWeft, track, type Sandbox } from '../helpers/server.js';

const jobOf = (doc: any, id: string) => doc.jobs.find((j: any) => j.id === id);

/** build → gate (an approval alone) → deploy; `rollback` runs only when something above failed. */
const RELEASE = {
  id: 'release',
  jobs: {
    build: { run: 'echo "::set-output version=1.2.3"' },
    gate: { needs: 'build', approval: { message: 'Ship 1.2.3 to production?' } },
    deploy: { needs: ['build', 'gate'], run: 'echo "deploying $UPSTREAM_BUILD_VERSION"' },
    rollback: { needs: 'deploy', if: 'failure()', run: 'echo "rolling back"' },
  },
};

/** One job gating its own command, with a timeout long enough never to matter here. */
const SELF = { id: 'self', jobs: { ship: { approval: { message: 'go?', timeout_secs: 3600 }, run: 'echo shipped' } } };

/** A gate that times out after a second: the reaper (every 0.3 s here) fails it. */
const SLOW = { id: 'slow', jobs: { gate: { approval: { timeout_secs: 1 } }, after: { needs: 'gate', run: 'echo never' } } };

async function stack(t: TestContext, sb: Sandbox, databaseUrl?: string) {
  const env = { ...sb.env, REAP_INTERVAL_SECS: '0.3', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  const server = await serverProcess(t, sb, env);
  const worker = track(t, spawnWeft(['worker'], { SERVER_URL: server.url, POLL_SECS: '0.2', WORKER_LABELS: undefined, WORKER_ID: 'approvals-worker', CONCURRENCY: '2' }, sb.dir));
  await worker.waitFor(/weft worker \S+ started/);
  const api = client(server.url);
  for (const def of [RELEASE, SELF, SLOW]) await api.createWorkflow(def);
  const cli = (args: string[]) => spawnWeft([...args, '--server', server.url], { WEFT_TOKEN: undefined }, sb.dir);
  return { server, worker, api, cli };
}

/** Waits until job `job` of the latest run of `wf` is in `state`; answers the status document. */
function stateOf(api: ReturnType<typeof client>, wf: string, job: string, state: string) {
  return until(async () => {
    const doc = await api.status(wf);
    return jobOf(doc, job).state === state ? doc : null;
  }, `${wf}/${job} to be ${state}`);
}

async function logText(api: ReturnType<typeof client>, wf: string, job: string, run: number): Promise<string> {
  const r = await api.get(`/api/workflows/${wf}/jobs/${job}/logs?run=${run}`);
  assert.equal(r.status, 200, r.text);
  return r.body.map((c: any) => c.data).join('');
}

function approvalCases(kind: string, databaseUrl: (t: TestContext) => Promise<string | undefined>) {
  test(`${kind}: approve, reject, timeout, cancel and re-run of gates with a real worker`, { timeout: 600_000 }, async (t) => {
    const sb = sandbox(t, 'weft-approvals-');
    const { api, cli, server } = await stack(t, sb, await databaseUrl(t));

    // Approve: the gate waits once build is done, nothing below runs, then `weft approve` lets deploy run.
    await api.run('release');
    const waiting = await stateOf(api, 'release', 'gate', 'awaiting_approval');
    assert.equal(jobOf(waiting, 'gate').status, 'queued', "workflow-graph's vocabulary shows the wait as queued");
    assert.equal(jobOf(waiting, 'gate').approval.message, 'Ship 1.2.3 to production?');
    assert.equal(typeof jobOf(waiting, 'gate').approval.requested_at_ms, 'number');
    assert.equal(jobOf(waiting, 'deploy').state, 'pending');
    const approve = cli(['approve', 'release', 'gate', '--comment', 'checked the notes']);
    assert.equal(await approve.exited, 0, approve.output());
    assert.match(approve.output(), /approved job gate of run 1 of workflow release: its dependents proceed/);
    const ok = await api.settled('release', 60_000);
    assert.deepEqual(ok.jobs.map((j: any) => [j.id, j.state]), [['build', 'success'], ['gate', 'success'], ['deploy', 'success'], ['rollback', 'skipped']]);
    assert.deepEqual(
      [jobOf(ok, 'gate').approval.decision, jobOf(ok, 'gate').approval.decided_by, jobOf(ok, 'gate').approval.comment],
      ['approved', null, 'checked the notes'],
      'tokens are off: nobody is named',
    );
    assert.match(await logText(api, 'release', 'deploy', 1), /deploying 1\.2\.3/);

    // Reject: the gate fails, deploy is skipped, the failure() job runs; the run fails.
    await api.run('release');
    await stateOf(api, 'release', 'gate', 'awaiting_approval');
    const reject = await api.post('/api/workflows/release/runs/2/jobs/gate/reject', { comment: 'freeze' });
    assert.equal(reject.status, 200, reject.text);
    assert.deepEqual([reject.body.decision, reject.body.job.state, reject.body.job.error], ['rejected', 'failed', 'approval rejected: freeze']);
    const failed = await api.settled('release', 60_000);
    assert.equal(failed.status, 'failed');
    assert.deepEqual(failed.jobs.map((j: any) => [j.id, j.state]), [['build', 'success'], ['gate', 'failed'], ['deploy', 'skipped'], ['rollback', 'success']]);
    assert.equal(jobOf(failed, 'gate').attempt, 0, 'a reject is never retried');
    const late = await api.post('/api/workflows/release/runs/2/jobs/gate/approve');
    assert.equal(late.status, 409, late.text);
    assert.equal(late.body.error, 'job_not_awaiting_approval');
    assert.equal(late.body.state, 'failed');
    assert.match(late.body.message, /not awaiting approval: it is failed \(already rejected\)/);

    // Re-run of the failed run: build is kept, the gate asks again; approved this time, deploy runs.
    const rerun = await api.post('/api/workflows/release/runs/2/rerun');
    assert.equal(rerun.status, 202, rerun.text);
    const again = await stateOf(api, 'release', 'gate', 'awaiting_approval');
    assert.equal(again.run_number, 3);
    assert.equal(jobOf(again, 'build').state, 'success');
    assert.equal(jobOf(again, 'gate').approval.decision, null, 'the re-run waits for a decision of its own');
    const approveRerun = cli(['approve', 'release', 'gate', '--run', '3', '--json']);
    assert.equal(await approveRerun.exited, 0, approveRerun.output());
    assert.equal(JSON.parse(approveRerun.output()).job.approval.decision, 'approved');
    assert.equal((await api.settled('release', 60_000)).status, 'success');

    // A job that gates its own command: approved, the worker runs it.
    await api.run('self');
    await stateOf(api, 'self', 'ship', 'awaiting_approval');
    const approved = await api.post('/api/workflows/self/runs/1/jobs/ship/approve');
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.job.state, 'queued');
    const shipped = await api.settled('self', 60_000);
    assert.equal(shipped.status, 'success');
    assert.equal(jobOf(shipped, 'ship').worker_id, 'approvals-worker');
    assert.match(await logText(api, 'self', 'ship', 1), /shipped/);

    // Cancel ends the wait: cancelled, the cancelled endpoint says so, a decision afterwards is refused.
    await api.run('self');
    await stateOf(api, 'self', 'ship', 'awaiting_approval');
    const cancel = await api.post('/api/workflows/self/cancel');
    assert.equal(cancel.status, 202, cancel.text);
    assert.deepEqual(cancel.body.cancelled_jobs, ['ship']);
    const cancelled = await api.settled('self', 60_000);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await api.get('/api/jobs/self/ship/cancelled')).body, true);
    const afterCancel = cli(['reject', 'self', 'ship']);
    assert.equal(await afterCancel.exited, 1);
    assert.match(afterCancel.output(), /409[\s\S]*not awaiting approval: it is cancelled/);

    // Timeout: the reaper fails the gate (timed_out, by no one) and skips what is below it.
    await api.run('slow');
    const timedOut = await api.settled('slow', 60_000);
    assert.equal(timedOut.status, 'failed');
    const gate = jobOf(timedOut, 'gate');
    assert.deepEqual([gate.state, gate.approval.decision, gate.approval.decided_by, gate.error], ['failed', 'timed_out', null, 'approval timed out after 1s with no decision']);
    assert.ok(gate.approval.decided_at_ms > gate.approval.deadline_ms, 'failed only once past its deadline');
    assert.equal(jobOf(timedOut, 'after').state, 'skipped');

    // Unknown names are 404s, a bad body a 400, never a 500.
    assert.equal((await api.post('/api/workflows/nope/runs/1/jobs/gate/approve')).body.error, 'workflow_not_found');
    assert.equal((await api.post('/api/workflows/release/runs/99/jobs/gate/approve')).body.error, 'run_not_found');
    assert.equal((await api.post('/api/workflows/release/runs/1/jobs/nope/approve')).body.error, 'job_not_found');
    const badBody = await api.post('/api/workflows/release/runs/3/jobs/gate/approve', { comment: 3 });
    assert.equal(badBody.status, 400, badBody.text);
    const unknownField = await api.post('/api/workflows/release/runs/3/jobs/gate/approve', { coment: 'x' });
    assert.equal(unknownField.status, 400, unknownField.text);
    assert.match(unknownField.body.message, /unknown field "coment"/);

    // Of many decisions sent at once, exactly one lands; the others are told the job's state.
    await api.run('self');
    await stateOf(api, 'self', 'ship', 'awaiting_approval');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => request('POST', `${server.url}/api/workflows/self/runs/3/jobs/ship/${i % 2 === 0 ? 'approve' : 'reject'}`, { comment: `r${i}` })),
    );
    const landed = answers.filter((a) => a.status === 200);
    assert.equal(landed.length, 1, answers.map((a) => `${a.status} ${a.text}`).join('\n'));
    assert.ok(answers.every((a) => a.status === 200 || (a.status === 409 && a.body.error === 'job_not_awaiting_approval')));
    const final = await api.settled('self', 60_000);
    const decision = landed[0]!.body.decision;
    assert.equal(jobOf(final, 'ship').approval.decision, decision);
    assert.equal(jobOf(final, 'ship').approval.comment, landed[0]!.body.job.approval.comment);
    assert.equal(final.status, decision === 'approved' ? 'success' : 'failed');
  });
}

describe('approval gates', () => {
  approvalCases('sqlite', async () => undefined);
  approvalCases('postgres', async (t) => {
    const db = await createDatabase();
    t.after(() => db.drop());
    return db.url;
  });
});
