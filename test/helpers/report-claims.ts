/**
 * A scenario both stores must pass (test/integration/batches.test.ts on SQLite,
 * test/integration/postgres-server.test.ts on PostgreSQL): a worker steps through a chain with
 * report-batch calls carrying a claim, while its own long-poll claim-batch (its other free slots)
 * waits. Each job a complete enqueues must come back in that report's answer, not go to the waiting
 * claim, which would cost the worker another request for the slot the report freed
 * (Claims.holdWaiters). The waiting claim must still be served afterwards.
 */
import assert from 'node:assert/strict';
import { client, until } from './http.js';

async function waitingClaims(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('weft_claim_waiters '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

export async function reportClaimsBeforeOwnWaiter(base: string, steps = 12): Promise<void> {
  const api = client(base);
  const jobs = Object.fromEntries(Array.from({ length: steps }, (_, i) => [`s${i}`, i === 0 ? { run: 'true' } : { run: 'true', needs: `s${i - 1}` }]));
  await api.createWorkflow({ id: 'chain', jobs });
  await api.createWorkflow({ id: 'later', jobs: { l: { run: 'true' } } });
  await api.run('chain');
  const claim = { worker_id: 'w', labels: [], lease_ttl_secs: 30, max_jobs: 1 };
  let held = (await api.post('/api/jobs/claim-batch', claim)).body.claims[0];
  assert.equal(held?.job.job_id, 's0');

  const leave = new AbortController();
  const longPoll = fetch(`${base}/api/jobs/claim-batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ worker_id: 'w', labels: [], max_jobs: 7, wait_secs: 60 }),
    signal: leave.signal,
  }).then(async (r) => (await r.json()) as { claims: Array<{ job: { workflow_id: string; job_id: string } }> });
  let answered = false;
  void longPoll.then(() => (answered = true), () => undefined);
  try {
    await until(async () => (await waitingClaims(base)) === 1, 'the long poll to wait');
    for (let i = 1; i < steps; i++) {
      const r = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: held.lease.lease_id, outcome: 'complete' }], claim });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.results[0].status, 200, r.text);
      assert.equal(r.body.claims[0]?.job.job_id, `s${i}`, `step ${i}: the report's claim came back without the job its complete enqueued (${r.text})`);
      held = r.body.claims[0];
    }
    assert.equal(answered, false, 'the waiting claim took a job meant for the report');
    const last = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: held.lease.lease_id, outcome: 'complete' }] });
    assert.equal(last.body.results[0].status, 200, last.text);
    // Not held for good: the next job queued goes to it.
    await api.run('later');
    const got = await longPoll;
    assert.deepEqual(got.claims.map((c) => `${c.job.workflow_id}/${c.job.job_id}`), ['later/l']);
  } finally {
    leave.abort();
  }
}
