/**
 * Runs of 10,000 jobs (docs/performance.md "Large runs"): a layered workflow is created, updated,
 * started and run to the end; the answers to the create, the update and the start, and the run's
 * status document, written a slice or a page of jobs at a time, are complete and equal, key for key,
 * to the documents read whole in one snapshot; the holder of a concurrency group shows on a job of a
 * late page; a read is answered while a large document is still being written to a reader that has
 * not read it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { client, request } from '../helpers/http.js';
import { completeAll } from '../helpers/load.js';
import { startInProcess } from '../helpers/server.js';

const LAYERS = 100;
const WIDTH = 100;
const id = (i: number, k: number) => `l${String(i).padStart(3, '0')}k${String(k).padStart(3, '0')}`;

/**
 * 100 layers of 100: each job needs the job above it and that job's right-hand neighbour; then three
 * jobs at the end of the definition (so in the last page of rows): `holder` and `blocker` in group
 * `g`, `blocker` needing `gate`, priorities putting `holder` and then `gate` first in the queue.
 */
function layered(): { id: string; jobs: Record<string, Record<string, unknown>> } {
  const jobs: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < LAYERS; i++) {
    for (let k = 0; k < WIDTH; k++) jobs[id(i, k)] = i === 0 ? { run: 'true' } : { run: 'true', needs: [id(i - 1, k), id(i - 1, (k + 1) % WIDTH)] };
  }
  jobs.holder = { run: 'true', concurrency: 'g', priority: 10 };
  jobs.gate = { run: 'true', priority: 9 };
  jobs.blocker = { run: 'true', needs: ['gate'], concurrency: 'g' };
  return { id: 'big', jobs };
}

/** GETs `path` and stops reading after the first chunk; `rest()` reads the remainder. */
function openSlowly(url: string): Promise<{ first: string; rest(): Promise<string> }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.once('data', (chunk: Buffer) => {
          res.pause();
          const first = chunk.toString('utf8');
          resolve({
            first,
            rest: () =>
              new Promise((done, fail) => {
                const parts: Buffer[] = [];
                res.on('data', (c: Buffer) => parts.push(c));
                res.once('end', () => done(first + Buffer.concat(parts).toString('utf8')));
                res.once('error', fail);
                res.resume();
              }),
          });
        });
        res.once('error', reject);
      })
      .once('error', reject);
  });
}

test('a 10,000-job layered run: its status document, written in pages, equals the one read whole, shows a late holder, and the run finishes', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  const def = layered();
  const ids = Object.keys(def.jobs);
  const total = ids.length;
  const created = await api.post('/api/workflows', def);
  assert.equal(created.status, 201, created.text.slice(0, 300));
  // Written a slice at a time, the answers to a create and an update are JSON.stringify's, key for key.
  const idle = await s.engine.status('big');
  assert.equal(created.text, JSON.stringify(idle));
  const same = await api.put('/api/workflows/big', def);
  assert.equal(same.status, 200);
  assert.equal(same.text, JSON.stringify({ ...idle, outcome: 'unchanged' }));

  const started = await api.post('/api/workflows/big/run');
  assert.equal(started.status, 202, started.text.slice(0, 300));
  assert.equal(started.body.jobs.length, total, 'the answer to the start holds every job');
  assert.equal(started.text, JSON.stringify(await s.engine.status('big')));
  assert.deepEqual(started.body.jobs.map((j: any) => j.id), ids, 'in the order of the definition');

  // holder (priority 10) runs; gate (9) ends, so blocker arrives in group g and waits for holder.
  const held = await api.claim('w1');
  assert.ok(held);
  assert.equal(held.job.job_id, 'holder');
  const gate = await api.claim('w2');
  assert.ok(gate);
  assert.equal(gate.job.job_id, 'gate');
  assert.equal((await api.post(`/api/jobs/${gate.lease.lease_id}/complete`, {})).status, 200);

  const whole = JSON.stringify(await s.engine.runStatus('big', 1));
  for (const path of ['/api/workflows/big/runs/1', '/api/workflows/big', '/api/workflows/big/status']) {
    const r = await request('GET', `${s.url}${path}`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(r.text, whole, `${path} is the document read whole, key for key`);
  }
  const doc = JSON.parse(whole);
  const byId = new Map(doc.jobs.map((j: any) => [j.id, j]));
  assert.equal(doc.jobs.length, total);
  assert.deepEqual((byId.get('blocker') as any).concurrency_holder, { workflow_id: 'big', run_number: 1, job_id: 'holder' });
  const states: Record<string, number> = {};
  for (const j of doc.jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  assert.deepEqual(states, { queued: WIDTH + 1, running: 1, success: 1, pending: total - WIDTH - 3 });

  // A reader that takes the first piece and stops: a small read is answered meanwhile.
  const slow = await openSlowly(`${s.url}/api/workflows/big/runs/1`);
  assert.ok(slow.first.startsWith('{"id":"big"'), slow.first.slice(0, 100));
  const other = await request('GET', `${s.url}/api/workflows/big/runs?limit=1`);
  assert.equal(other.status, 200);
  assert.equal(other.body[0].status, 'running');
  assert.equal(await slow.rest(), whole, 'the paused answer, read to its end, is whole');

  assert.equal((await api.post(`/api/jobs/${held.lease.lease_id}/complete`, {})).status, 200);
  assert.equal(await completeAll(s.url, { batch: 200 }), total - 2);
  const end = await api.get('/api/workflows/big/runs/1');
  assert.equal(end.body.status, 'success');
  assert.ok(end.body.jobs.every((j: any) => j.state === 'success'));
  assert.equal(end.text, JSON.stringify(await s.engine.runStatus('big', 1)));
});

test('status documents of unknown workflows and runs are 404 before anything is written; small runs are answered whole', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  assert.equal((await api.get('/api/workflows/none/runs/1')).body.error, 'workflow_not_found');
  await api.createWorkflow({ id: 'w', jobs: [{ id: 'a', command: 'true' }] });
  const none = await api.get('/api/workflows/w/runs/1');
  assert.equal(none.status, 404);
  assert.equal(none.body.error, 'run_not_found');
  assert.equal((await api.get('/api/workflows/none')).status, 404);
  assert.equal((await api.post('/api/workflows/none/run')).body.error, 'workflow_not_found');
  const run = await api.post('/api/workflows/w/run');
  assert.equal(run.status, 202);
  assert.equal(run.headers.get('content-length'), String(Buffer.byteLength(run.text)), 'a small document is sent whole');
  assert.equal(run.text, JSON.stringify(await s.engine.status('w')));
  assert.equal((await api.get('/api/workflows/w/runs/2')).body.error, 'run_not_found');
  assert.equal((await api.get('/api/workflows/none/runs?limit=1')).body.error, 'workflow_not_found');
  assert.deepEqual((await api.get('/api/workflows/w/runs?offset=5')).body, []);
});
