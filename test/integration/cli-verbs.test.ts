/**
 * `weft list`, `weft runs`, `weft cancel` and `weft status --run` as real processes against a spawned
 * server; the test plays the worker over HTTP.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { fileServer, runCli, type Finished } from '../helpers/cli.js';

const server = fileServer('weft-verbs-');

function weft(t: TestContext, args: string[]): Promise<Finished> {
  return runCli(t, server, args);
}

/** Claims the one queued job of `wf` (every job is labelled with its workflow's id) and completes it or fails it for good. */
async function finishNext(wf: string, how: 'complete' | 'fail'): Promise<void> {
  const c = await server.api.claim(`w-${wf}`, [wf]);
  assert.ok(c && c.job.workflow_id === wf, `a job of ${wf} to claim`);
  const r = await server.api.post(`/api/jobs/${c.lease.lease_id}/${how}`, how === 'complete' ? {} : { error: 'no', retryable: false });
  assert.equal(r.status, 200, r.text);
}

test('list: every workflow with status, run and progress; --status filters; --json is the raw list', async (t) => {
  await server.api.createWorkflow({ id: 'list-a', name: 'Nightly', trigger: 'cron', jobs: [{ id: 'x', command: 'true', required_labels: ['list-a'] }, { id: 'y', command: 'true', depends_on: ['x'], required_labels: ['list-a'] }] });
  await server.api.createWorkflow({ id: 'list-b', jobs: [{ id: 'z', command: 'true' }] });
  await server.api.createWorkflow({ id: 'list-c', on: { schedule: [{ cron: '0 0 1 1 *' }] }, jobs: { z: { run: 'true' } } });
  await server.api.run('list-a');
  await finishNext('list-a', 'complete');

  const r = await weft(t, ['list']);
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, /^WORKFLOW\s+NAME\s+STATUS\s+RUN\s+JOBS\s+TRIGGER\s+NEXT\s+CHANGED$/m);
  assert.match(r.stdout, /^list-a\s+Nightly\s+running\s+1\s+1\/2 done\s+cron\s+-\s+\d+s ago$/m);
  assert.match(r.stdout, /^list-b\s+idle\s+-\s+1 jobs\s+-\s+-\s+\d+s ago$/m);
  // The next 1 January, 00:00 UTC, is days away (or hours, on 31 December).
  assert.match(r.stdout, /^list-c\s+idle\s+-\s+1 jobs\s+schedule: \[\{cron: 0 0 1 1 \*\}\]\s+in \d+[dh]\s+\d+s ago$/m);

  const queued = await weft(t, ['list', '--status', 'queued']);
  assert.match(queued.stdout, /^list-a\s/m);
  assert.doesNotMatch(queued.stdout, /^list-b\s/m);
  const found = await weft(t, ['list', '--search', 'NIGHT']);
  assert.match(found.stdout, /^list-a\s/m, 'by name, case ignored');
  assert.doesNotMatch(found.stdout, /^list-b\s/m);
  assert.match((await weft(t, ['list', '--search', 'zzz'])).stdout, /no workflows match/);
  const json = await weft(t, ['list', '--json', '--limit', '1']);
  assert.equal(JSON.parse(json.stdout).length, 1);
  const bad = await weft(t, ['list', '--status', 'sleeping']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.output, /Allowed choices are/);
});

test('runs: newest first with status and job counts; status --run shows an earlier run', async (t) => {
  await server.api.createWorkflow({ id: 'hist', jobs: [{ id: 'x', command: 'true', required_labels: ['hist'] }] });
  const none = await weft(t, ['runs', 'hist']);
  assert.match(none.stdout, /has not run yet/);
  await server.api.run('hist');
  await finishNext('hist', 'fail');
  await server.api.run('hist');
  await finishNext('hist', 'complete');

  const r = await weft(t, ['runs', 'hist']);
  assert.equal(r.code, 0, r.output);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0]!, /^RUN\s+STATUS\s+STARTED\s+DURATION\s+JOBS$/);
  assert.match(lines[1]!, /^2\s+success\s+\d+s ago\s+[\d.]+s\s+1 success$/);
  assert.match(lines[2]!, /^1\s+failed\s+\d+s ago\s+[\d.]+s\s+1 failed$/);
  const json = JSON.parse((await weft(t, ['runs', 'hist', '--json'])).stdout);
  assert.deepEqual(
    json.map((x: any) => [x.run_number, x.status]),
    [
      [2, 'success'],
      [1, 'failed'],
    ],
  );

  const first = await weft(t, ['status', 'hist', '--run', '1']);
  assert.equal(first.code, 0, first.output);
  assert.match(first.stdout, /^workflow hist: failed, run 1$/m);
  const missing = await weft(t, ['status', 'hist', '--run', '7']);
  assert.equal(missing.code, 1);
  assert.match(missing.output, /404.*no run #7/);
  const unknown = await weft(t, ['runs', 'nope']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.output, /404.*workflow "nope" does not exist/);
});

test('cancel: cancels the active run and names its jobs; with nothing active it says so', async (t) => {
  await server.api.createWorkflow({ id: 'stop', jobs: [{ id: 'x', command: 'true', required_labels: ['stop'] }, { id: 'y', command: 'true', depends_on: ['x'] }] });
  const idle = await weft(t, ['cancel', 'stop']);
  assert.equal(idle.code, 0, idle.output);
  assert.match(idle.stdout, /no active run; nothing to cancel/);
  await server.api.run('stop');
  const r = await weft(t, ['cancel', 'stop']);
  assert.equal(r.code, 0, r.output);
  assert.match(r.stdout, /^cancelled 2 jobs of run 1: x, y$/m);
  assert.equal((await server.api.status('stop')).status, 'cancelled');
  const json = JSON.parse((await weft(t, ['cancel', 'stop', '--json'])).stdout);
  assert.deepEqual(json.cancelled_jobs, []);
});

test('run --input gives the run its inputs; a missing required one, a malformed or repeated --input are refused', async (t) => {
  await server.api.createWorkflow({ id: 'inp', inputs: { branch: { required: true }, mode: { default: 'fast' } }, jobs: { a: { run: 'true', labels: ['inp'] } } });
  const missing = await weft(t, ['run', 'inp']);
  assert.equal(missing.code, 1, missing.output);
  assert.match(missing.output, /400 Bad Request: .*required input "branch" not given/);
  const malformed = await weft(t, ['run', 'inp', '--input', 'branch']);
  assert.notEqual(malformed.code, 0);
  assert.match(malformed.output, /expected name=value, got 'branch'/);
  const twice = await weft(t, ['run', 'inp', '--input', 'branch=a', '-i', 'branch=b']);
  assert.notEqual(twice.code, 0);
  assert.match(twice.output, /input 'branch' given twice/);

  const r = await weft(t, ['run', 'inp', '--input', 'branch=release/1.0=rc', '--json']);
  assert.equal(r.code, 0, r.output);
  const doc = JSON.parse(r.stdout);
  assert.deepEqual(doc.run.inputs, { branch: 'release/1.0=rc', mode: 'fast' });
  const c = await server.api.claim('w-inp', ['inp']);
  assert.equal(c?.job.env.WEFT_INPUT_BRANCH, 'release/1.0=rc');
  assert.equal(c?.job.env.WEFT_INPUT_MODE, 'fast');
});

test('rerun: the latest run by default, keeping what succeeded; --from, --all, --run, --json; and its refusals', async (t) => {
  await server.api.createWorkflow({
    id: 'again',
    jobs: { x: { run: 'true', labels: ['again'] }, y: { run: 'true', needs: ['x'], labels: ['again'] } },
  });
  const never = await weft(t, ['rerun', 'again']);
  assert.equal(never.code, 1);
  assert.match(never.output, /workflow again has not run yet/);
  await server.api.run('again');
  await finishNext('again', 'complete');
  await finishNext('again', 'fail');

  const r = await weft(t, ['rerun', 'again']);
  assert.equal(r.code, 0, r.output);
  assert.equal(r.stdout.trim(), 'started run 2 of again (re-run of run 1; kept x)');
  assert.deepEqual((await server.api.status('again')).jobs.map((j: any) => [j.id, j.state]), [['x', 'success'], ['y', 'queued']]);
  const busy = await weft(t, ['rerun', 'again', '--run', '1']);
  assert.equal(busy.code, 1);
  assert.match(busy.output, /409 Conflict: .*active run \(#2\)/);
  await finishNext('again', 'complete');

  const nothing = await weft(t, ['rerun', 'again']);
  assert.equal(nothing.code, 1);
  assert.match(nothing.output, /every job of run #2 .* succeeded; nothing to re-run/);
  const both = await weft(t, ['rerun', 'again', '--all', '--from', 'x']);
  assert.equal(both.code, 1);
  assert.match(both.output, /--all and --from do not go together/);
  const badJob = await weft(t, ['rerun', 'again', '--from', 'zz']);
  assert.equal(badJob.code, 1);
  assert.match(badJob.output, /400 Bad Request: .*has no job "zz"/);

  const from = await weft(t, ['rerun', 'again', '--from', 'y', '--json']);
  assert.equal(from.code, 0, from.output);
  const doc = JSON.parse(from.stdout);
  assert.equal(doc.run.number, 3);
  assert.equal(doc.run.rerun_of, 2);
  assert.deepEqual(doc.jobs.map((j: any) => [j.id, j.state]), [['x', 'success'], ['y', 'queued']]);
  await finishNext('again', 'complete');

  const all = await weft(t, ['rerun', 'again', '--run', '1', '--all']);
  assert.equal(all.code, 0, all.output);
  assert.equal(all.stdout.trim(), 'started run 4 of again (re-run of run 1)');
  assert.deepEqual((await server.api.status('again')).jobs.map((j: any) => [j.id, j.state]), [['x', 'queued'], ['y', 'pending']]);
  const gone = await weft(t, ['rerun', 'again', '--run', '9']);
  assert.equal(gone.code, 1);
  assert.match(gone.output, /404 Not Found: .*has no run #9/);
});
