/**
 * Priorities (README "Priorities") through HTTP and the CLI against a real `weft server`: a job's
 * priority comes from the run, then the job, then the workflow; a claim takes the highest first and
 * the oldest within one; every bad value is a 400 naming the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileServer, runCli } from '../helpers/cli.js';

const server = fileServer('weft-priorities-');
const priorities = (doc: any) => Object.fromEntries(doc.jobs.map((j: any) => [j.id, j.priority]));

test('priority comes from the run, else the job, else the workflow, else 0; a claim takes the highest first', async () => {
  const { api } = server;
  await api.createWorkflow({ id: 'nightly', jobs: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`n${i}`, { run: 'true', labels: ['prio'] }])) });
  await api.createWorkflow({
    id: 'hotfix',
    priority: 10,
    jobs: { patch: { run: 'true', labels: ['prio'], priority: 20 }, notify: { run: 'true', labels: ['prio'] } },
  });
  await api.createWorkflow({ id: 'cleanup', priority: -5, jobs: { sweep: { run: 'true', labels: ['prio'] } } });

  // The definition keeps what was written; an idle workflow already shows the priorities its jobs will have.
  const def = await api.get('/api/workflows/hotfix/definition');
  assert.equal(def.status, 200, def.text);
  assert.equal(def.body.priority, 10);
  assert.equal(def.body.jobs.patch.priority, 20);
  assert.equal(def.body.jobs.notify.priority, undefined, 'a job without its own priority is written without one');
  assert.deepEqual(priorities(await api.status('hotfix')), { patch: 20, notify: 10 });

  // The backlog and the low-priority run are older than the hotfix.
  assert.deepEqual(priorities(await api.run('nightly')), { n0: 0, n1: 0, n2: 0, n3: 0, n4: 0 });
  await api.run('cleanup');
  assert.deepEqual(priorities(await api.run('hotfix')), { patch: 20, notify: 10 });

  const order: string[] = [];
  for (let c = await api.claim('w', ['prio']); c !== null; c = await api.claim('w', ['prio'])) order.push(c.job.job_id);
  assert.deepEqual(order, ['patch', 'notify', 'n0', 'n1', 'n2', 'n3', 'n4', 'sweep']);
});

test('a run started with a priority queues every job with it, ahead of an older backlog; a re-run may take one too', async (t) => {
  const { api } = server;
  await api.createWorkflow({ id: 'backlog', jobs: { b1: { run: 'true', labels: ['urgent'] }, b2: { run: 'true', labels: ['urgent'] } } });
  await api.createWorkflow({ id: 'deploy', jobs: { ship: { run: 'true', labels: ['urgent'], priority: -20 } } });
  await api.run('backlog');
  const started = await api.post('/api/workflows/deploy/run', { priority: 50 });
  assert.equal(started.status, 202, started.text);
  assert.deepEqual(priorities(started.body), { ship: 50 }, "the run's priority wins over the job's own");
  const first = await api.claim('w', ['urgent']);
  assert.equal(first?.job.job_id, 'ship');
  const failed = await api.post(`/api/jobs/${first!.lease.lease_id}/fail`, { error: 'boom', retryable: false });
  assert.equal(failed.status, 200, failed.text);

  // `weft rerun --priority` and `weft run --priority` send it; a negative one too.
  const rerun = await runCli(t, server, ['rerun', 'deploy', '--priority', '75', '--json']);
  assert.equal(rerun.code, 0, rerun.output);
  assert.deepEqual(priorities(JSON.parse(rerun.stdout)), { ship: 75 });
  assert.equal((await api.claim('w', ['urgent']))?.job.job_id, 'ship', 'the re-run jumps the backlog');
  assert.equal((await api.claim('w', ['urgent']))?.job.job_id, 'b1');

  await api.createWorkflow({ id: 'later', jobs: { l: { run: 'true', labels: ['cli-prio'] } } });
  const low = await runCli(t, server, ['run', 'later', '--priority', '-7', '--json']);
  assert.equal(low.code, 0, low.output);
  assert.deepEqual(priorities(JSON.parse(low.stdout)), { l: -7 });
});

test('a priority that is not an integer from -100 to 100 is refused with the field named, and nothing starts', async (t) => {
  const { api } = server;
  await api.createWorkflow({ id: 'strict', jobs: { a: { run: 'true' } } });
  for (const priority of [101, -101, 1.5, '10', null]) {
    const r = await api.post('/api/workflows/strict/run', { priority });
    assert.equal(r.status, 400, `${JSON.stringify(priority)}: ${r.text}`);
    assert.equal(r.body.error, 'invalid_request');
    assert.match(r.body.message, /body\.priority/, r.text);
  }
  const rerun = await api.post('/api/workflows/strict/runs/1/rerun', { priority: 500 });
  assert.equal(rerun.status, 400, rerun.text);
  assert.match(rerun.body.message, /body\.priority/);
  assert.equal((await api.status('strict')).run_number, null, 'no run was started');

  for (const [doc, field] of [
    [{ id: 'bad-job', jobs: { a: { run: 'true', priority: 200 } } }, /a\.priority|priority.*a/],
    [{ id: 'bad-wf', priority: 'high', jobs: { a: { run: 'true' } } }, /priority/],
    [{ id: 'bad-frac', jobs: { a: { run: 'true', priority: 0.5 } } }, /priority/],
  ] as const) {
    const r = await api.post('/api/workflows', doc);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'invalid_workflow');
    assert.match(JSON.stringify(r.body), field, r.text);
    assert.match(JSON.stringify(r.body), /-100 \(least urgent\) to 100 \(most urgent\)/, r.text);
  }

  const cli = await runCli(t, server, ['run', 'strict', '--priority', '101']);
  assert.notEqual(cli.code, 0);
  assert.match(cli.stderr, /-100 \(least urgent\) to 100 \(most urgent\)/, cli.output);
  const word = await runCli(t, server, ['run', 'strict', '--priority', 'high']);
  assert.notEqual(word.code, 0);
  assert.equal((await api.status('strict')).run_number, null, 'the CLI refused before sending anything');
});
