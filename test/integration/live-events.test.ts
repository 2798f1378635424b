/**
 * Run history and live events (docs/api.md "Runs" and "Live events"), over real HTTP against a real
 * server: the dashboard's view of past runs and of changes as they happen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, request } from '../helpers/http.js';
import { json, openSse, type SseEvent } from '../helpers/sse.js';
import { startInProcess } from '../helpers/server.js';

const DAG = { id: 'dag', jobs: [{ id: 'a', command: 'true' }, { id: 'b', command: 'true', depends_on: ['a'] }] };

/** Runs the workflow to its end by claiming and reporting through the worker protocol. */
async function drive(base: string, outcome: 'success' | 'fail'): Promise<void> {
  for (;;) {
    const c = await client(base).claim('w1');
    if (!c) return;
    const path = outcome === 'success' || c.job.job_id === 'a' ? 'complete' : 'fail';
    const body = path === 'complete' ? { outputs: { from: c.job.job_id } } : { error: 'boom', retryable: false };
    const r = await request('POST', `${base}/api/jobs/${c.lease.lease_id}/${path}`, body);
    assert.equal(r.status, 200, r.text);
  }
}

const jobEvents = (evs: SseEvent[], id: string) => evs.filter((e) => e.event === 'job' && json(e).id === id).map((e) => json(e).state);

test('run history: newest first with job counts, paged; any run by number; 404 for unknown runs', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow(DAG);
  assert.deepEqual((await request('GET', `${s.url}/api/workflows/dag/runs`)).body, [], 'never run: no history');
  await api.run('dag');
  await drive(s.url, 'success');
  await api.run('dag');
  await drive(s.url, 'fail');
  await api.run('dag'); // left running: a queued

  const all = await request('GET', `${s.url}/api/workflows/dag/runs`);
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(
    all.body.map((r: any) => [r.run_number, r.status, r.job_counts]),
    [
      [3, 'running', { queued: 1, pending: 1 }],
      [2, 'failed', { success: 1, failed: 1 }],
      [1, 'success', { success: 2 }],
    ],
  );
  for (const r of all.body) {
    assert.equal(typeof r.created_at_ms, 'number');
    assert.equal(r.finished_at_ms === null, r.status === 'running');
  }
  const page = await request('GET', `${s.url}/api/workflows/dag/runs?limit=1&offset=1`);
  assert.deepEqual(
    page.body.map((r: any) => r.run_number),
    [2],
  );

  const second = await request('GET', `${s.url}/api/workflows/dag/runs/2`);
  assert.equal(second.status, 200, second.text);
  assert.equal(second.body.run_number, 2);
  assert.equal(second.body.status, 'failed');
  assert.deepEqual(
    second.body.jobs.map((j: any) => [j.id, j.state]),
    [
      ['a', 'success'],
      ['b', 'failed'],
    ],
  );
  assert.equal((await request('GET', `${s.url}/api/workflows/dag/runs/3`)).body.status, 'running');

  const missing = await request('GET', `${s.url}/api/workflows/dag/runs/9`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'run_not_found');
  assert.equal((await request('GET', `${s.url}/api/workflows/nope/runs`)).body.error, 'workflow_not_found');
  assert.equal((await request('GET', `${s.url}/api/workflows/nope/runs/1`)).status, 404);
  assert.equal((await request('GET', `${s.url}/api/workflows/dag/runs/0`)).status, 400);
  assert.equal((await request('GET', `${s.url}/api/workflows/dag/runs?limit=-1`)).status, 400);
  assert.equal((await request('GET', `${s.url}/api/workflows/dag/runs?page=2`)).status, 400, 'unknown query parameters are refused');
});

test('a workflow event stream tells each job change and the run starting and ending, with resumable ids', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow(DAG);
  const events = await openSse(`${s.url}/api/workflows/dag/events`);
  t.after(() => events.close());
  assert.equal(events.status, 200);
  assert.match(events.headers.get('content-type') ?? '', /text\/event-stream/);

  await api.run('dag');
  await events.waitFor((evs) => evs.some((e) => e.event === 'run'), 'run started');
  const c = (await api.claim('w1'))!;
  await events.waitFor((evs) => jobEvents(evs, 'a').includes('running'), 'a running');
  const done = await request('POST', `${s.url}/api/jobs/${c.lease.lease_id}/complete`, { outputs: { k: 'v' } });
  assert.equal(done.status, 200);
  const all = await events.waitFor((evs) => jobEvents(evs, 'b').includes('queued'), 'b queued');

  const runs = all.filter((e) => e.event === 'run').map(json);
  assert.deepEqual(runs[0], { run_number: 1, status: 'running' });
  const a = all.filter((e) => e.event === 'job' && json(e).id === 'a').map(json);
  assert.deepEqual(
    a.map((j) => j.state),
    ['queued', 'running', 'success'],
  );
  assert.equal(a[1].worker_id, 'w1');
  assert.deepEqual(a[2].outputs, { k: 'v' });
  assert.equal(a[2].run_number, 1);
  // Ids rise, and each is `<boot>.<seq>`.
  const seqs = all.map((e) => {
    assert.match(e.id ?? '', /^[0-9a-z]+\.\d+$/);
    return Number(e.id!.split('.')[1]);
  });
  assert.deepEqual(
    seqs,
    [...seqs].sort((x, y) => x - y),
  );

  // Resume: everything after the given id, nothing before it.
  const cut = all.find((e) => e.event === 'job' && json(e).id === 'a' && json(e).state === 'running')!;
  events.close();
  const c2 = (await api.claim('w1'))!;
  assert.equal((await request('POST', `${s.url}/api/jobs/${c2.lease.lease_id}/complete`, {})).status, 200);
  const resumed = await openSse(`${s.url}/api/workflows/dag/events`, { 'last-event-id': cut.id! });
  t.after(() => resumed.close());
  const after = await resumed.waitFor(
    (evs) => evs.some((e) => e.event === 'run' && json(e).status === 'success'),
    'the run ends, including what happened while disconnected',
  );
  // Changes closer together than the gathering window come as one event with the state at the end.
  const missed = after.filter((e) => e.event === 'job').map((e) => `${json(e).id}:${json(e).state}`);
  assert.equal(missed[0], 'a:success', missed.join(' '));
  assert.equal(missed.at(-1), 'b:success', missed.join(' '));
  assert.ok(after.every((e) => Number(e.id!.split('.')[1]) > Number(cut.id!.split('.')[1])));

  // An id this server process did not issue cannot be resumed: the client is told to refetch.
  const foreign = await openSse(`${s.url}/api/workflows/dag/events`, { 'last-event-id': 'zzz.3' });
  t.after(() => foreign.close());
  await foreign.waitFor((evs) => evs[0]?.event === 'resync', 'resync');
  const bad = await openSse(`${s.url}/api/workflows/dag/events`, { 'last-event-id': 'not an id' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'invalid_last_event_id');
  const unknown = await openSse(`${s.url}/api/workflows/nope/events`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error, 'workflow_not_found');
});

test('the all-workflows stream sends each changed workflow as its summary, the item of GET /api/workflows?jobs=false', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  const events = await openSse(`${s.url}/api/events`);
  t.after(() => events.close());
  await api.createWorkflow(DAG);
  await api.createWorkflow({ id: 'other', jobs: [{ id: 'x', command: 'true' }] });
  await events.waitFor((evs) => evs.some((e) => json(e).id === 'other'), 'created workflows appear');
  await api.run('dag');
  await drive(s.url, 'success');
  const all = await events.waitFor(
    (evs) => evs.some((e) => json(e).id === 'dag' && json(e).status === 'success'),
    'the finished run appears',
  );
  const removed = await request('DELETE', `${s.url}/api/workflows/other`);
  assert.equal(removed.status, 200, removed.text);
  await events.waitFor((evs) => evs.some((e) => e.event === 'deleted' && json(e).id === 'other'), 'the deletion is told');
  for (const e of all.filter((x) => x.event !== 'deleted')) {
    assert.equal(e.event, 'workflow');
    const doc = json(e);
    assert.ok(doc.jobs === undefined && typeof doc.job_counts === 'object' && typeof doc.trigger === 'string', 'a summary, without the jobs');
  }
  const last = json(all.filter((e) => json(e).id === 'dag').at(-1)!);
  assert.deepEqual(last.job_counts, { success: 2 });
  const listed = await request('GET', `${s.url}/api/workflows?jobs=false`);
  assert.deepEqual(last, listed.body.find((w: any) => w.id === 'dag'), 'the event is the list item');
});
