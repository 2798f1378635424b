/**
 * A scenario both stores must pass (test/integration/batches.test.ts on SQLite,
 * test/integration/postgres-server.test.ts on PostgreSQL): a worker steps through a chain with
 * report-batch calls carrying a claim, while its own long-poll claim-batch (its other free slots) and
 * another worker's wait. Each job a complete enqueues must come back in that report's answer, not go
 * to a waiting claim, which would cost that claim's worker another request and the report's claim an
 * empty try (Claims.firstPick). The waiting claims must still be served afterwards.
 */
import assert from 'node:assert/strict';
import { client, until } from './http.js';

async function waitingClaims(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('weft_claim_waiters '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

export async function reportClaimsBeforeWaiters(base: string, steps = 12): Promise<void> {
  const api = client(base);
  const jobs = Object.fromEntries(Array.from({ length: steps }, (_, i) => [`s${i}`, i === 0 ? { run: 'true' } : { run: 'true', needs: `s${i - 1}` }]));
  await api.createWorkflow({ id: 'chain', jobs });
  await api.createWorkflow({ id: 'later', jobs: { l: { run: 'true' } } });
  await api.run('chain');
  const claim = { worker_id: 'w', labels: [], lease_ttl_secs: 30, max_jobs: 1 };
  let held = (await api.post('/api/jobs/claim-batch', claim)).body.claims[0];
  assert.equal(held?.job.job_id, 's0');

  const leave = new AbortController();
  const answered: string[] = [];
  const longPoll = (worker: string) => {
    const poll = fetch(`${base}/api/jobs/claim-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ worker_id: worker, labels: [], max_jobs: 7, wait_secs: 60 }),
      signal: leave.signal,
    }).then(async (r) => (await r.json()) as { claims: Array<{ job: { workflow_id: string; job_id: string } }> });
    void poll.then(() => answered.push(worker), () => undefined);
    return poll;
  };
  const own = longPoll('w');
  try {
    await until(async () => (await waitingClaims(base)) === 1, 'the own long poll to wait');
    void longPoll('other');
    await until(async () => (await waitingClaims(base)) === 2, "the other worker's long poll to wait");
    for (let i = 1; i < steps; i++) {
      const r = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: held.lease.lease_id, outcome: 'complete' }], claim });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.results[0].status, 200, r.text);
      assert.equal(r.body.claims[0]?.job.job_id, `s${i}`, `step ${i}: the report's claim came back without the job its complete enqueued (${r.text})`);
      held = r.body.claims[0];
    }
    assert.deepEqual(answered, [], 'a waiting claim took a job meant for the report');
    const last = await api.post('/api/jobs/report-batch', { reports: [{ lease_id: held.lease.lease_id, outcome: 'complete' }] });
    assert.equal(last.body.results[0].status, 200, last.text);
    // Not held for good: the next job queued goes to the first waiting claim.
    await api.run('later');
    const got = await own;
    assert.deepEqual(got.claims.map((c) => `${c.job.workflow_id}/${c.job.job_id}`), ['later/l']);
  } finally {
    leave.abort();
  }
}
