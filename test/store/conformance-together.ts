/**
 * Claims and completes that reach one store at the same moment (docs/performance.md "PostgreSQL":
 * the PostgreSQL store serves them with one statement). Whatever a store does with them, each caller
 * must get exactly its own answer: its own leases, worker, ttl, token and time for a claim, its own
 * outcome for a complete, a refused lease refused alone while the others around it go through.
 */
import assert from 'node:assert/strict';
import type { Claimed, CompleteOutcome, Store, StoreClaim } from '../../src/store/store.js';
import { labelKey } from '../../src/domain/labels.js';
import type { Actor } from './actors.js';
import type { Case } from './conformance.js';
import { claim, claimRequest, job, read, start, type Spec } from './fixtures.js';
import type { Instant } from './races.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const GPU = labelKey(['gpu']);

/** Checks one claimer's answer against its own request: its leases, in its order, with its terms. */
function assertOwnAnswer(req: StoreClaim, got: readonly Claimed[], what: string): void {
  assert.ok(got.length <= req.max, `${what}: at most max (${req.max}) jobs, got ${got.length}`);
  got.forEach((c, k) => {
    assert.equal(c.lease.lease_id, req.lease_ids[k], `${what}: its k-th job takes its k-th lease id`);
    assert.equal(c.job.lease_id, req.lease_ids[k], `${what}: the job runs under that lease`);
    assert.deepEqual(
      [c.lease.worker_id, c.job.worker_id, c.lease.ttl_secs, c.lease.token_name, c.lease.granted_at_ms, c.lease.expires_at_ms, c.job.started_at_ms],
      [req.worker_id, req.worker_id, req.ttl_secs, req.token_name ?? null, req.now_ms, req.now_ms + req.ttl_secs * 1000, req.now_ms],
      `${what}: lease ${k} carries its own worker, ttl, token and time`,
    );
    assert.ok(req.label_keys.includes(c.job.label_key), `${what}: ${c.job.job_id} fits its label keys`);
  });
}

export function togetherCases(withStore: Case): void {
  withStore('40 claims at once, of every shape: each answer is the claimer\'s own, no job twice, the best jobs first', async (store) => {
    // 30 jobs without labels, 12 needing gpu and ahead of them: a gpu claimer takes those first, so
    // in any order of the claims the demand of each kind outruns its supply.
    const specs: Record<string, Spec> = {};
    for (const i of range(30)) specs[`p${i}`] = { priority: i };
    for (const i of range(12)) specs[`g${i}`] = { labels: ['gpu'], priority: 50 + i };
    await start(store, 'w', 1000, specs);
    const reqs = range(40).map((i) =>
      claimRequest(2000 + (i % 3), {
        // Several claims per worker, each worker always with the same labels.
        worker: i % 4 === 0 ? `gpu${i % 3}` : `wk${i % 11}`,
        labels: i % 4 === 0 ? ['gpu'] : [],
        keys: i % 4 === 0 ? ['', GPU] : [''],
        max: 1 + (i % 3),
        ttl: 10 + i,
        ...(i % 5 === 0 ? {} : { token: `tok${i % 2}` }),
      }),
    );
    const answers = await Promise.all(reqs.map((r) => store.claim(r)));
    answers.forEach((got, i) => assertOwnAnswer(reqs[i]!, got, `claim ${i}`));
    const won = answers.flat();
    assert.equal(new Set(won.map((c) => c.job.job_id)).size, won.length, 'no job handed out twice');
    assert.equal(won.length, 42, 'demand outruns supply: every job is handed out');
    const jobs = await read(store, (r) => r.getRunJobs('w', 1));
    for (const j of jobs) {
      const winner = won.find((c) => c.job.job_id === j.job_id);
      assert.ok(winner, `${j.job_id} handed out`);
      assert.deepEqual([j.status, j.lease_id, j.worker_id], ['running', winner.lease.lease_id, winner.lease.worker_id], j.job_id);
    }
    const active = await read(store, (r) => r.activeLeases());
    assert.deepEqual(
      active.map((l) => [l.lease_id, l.worker_id, l.ttl_secs, l.token_name, l.expires_at_ms]).sort(),
      won.map((c) => [c.lease.lease_id, c.lease.worker_id, c.lease.ttl_secs, c.lease.token_name, c.lease.expires_at_ms]).sort(),
      'the stored leases are the ones answered',
    );
    // Each worker recorded once, with its labels, seen at the time of one of its claims.
    for (const w of new Set(reqs.map((r) => r.worker_id))) {
      const mine = reqs.filter((r) => r.worker_id === w);
      const rec = await read(store, (r) => r.getWorker(w));
      assert.deepEqual(rec && rec.labels, mine[0]!.worker_labels, `${w} labels`);
      assert.ok(rec && mine.some((r) => r.now_ms === rec.last_seen_ms), `${w} seen at one of its claims`);
    }
  });

  withStore('claims at once with supply to spare take exactly the highest-priority jobs, each claimer in claim order', async (store) => {
    const specs: Record<string, Spec> = {};
    for (const i of range(60)) specs[`p${i}`] = { priority: (i * 37) % 60 - 30 };
    await start(store, 'w', 1000, specs);
    const reqs = range(12).map((i) => claimRequest(2000, { worker: `wk${i}`, max: 1 + (i % 4) }));
    const answers = await Promise.all(reqs.map((r) => store.claim(r)));
    answers.forEach((got, i) => {
      assertOwnAnswer(reqs[i]!, got, `claim ${i}`);
      assert.equal(got.length, reqs[i]!.max, `claim ${i} gets all it asked for`);
      const ps = got.map((c) => c.job.priority);
      assert.deepEqual(ps, [...ps].sort((a, b) => b - a), `claim ${i} gets its jobs in claim order`);
    });
    const demand = reqs.reduce((a, r) => a + r.max, 0);
    const best = Object.entries(specs).sort((a, b) => b[1].priority! - a[1].priority!).slice(0, demand).map(([id]) => id).sort();
    assert.deepEqual(answers.flat().map((c) => c.job.job_id).sort(), best);
  });

  withStore('completes at once, one stale, one foreign, one twice, one cancelled, two needs of one join: each gets its own outcome', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: {}, join: { needs: ['a', 'b'] }, ok1: {}, ok2: {}, late: { max_retries: 1 }, foreign: {}, twice: {} });
    await start(store, 'x', 1000, { gone: {} });
    const held = new Map<string, Claimed>();
    for (const c of await claim(store, 2000, { max: 20, ttl: 30 })) held.set(c.job.job_id, c);
    assert.equal(held.size, 8);
    // `late` was claimed with a short ttl by another worker, `foreign` with a token.
    for (const id of ['late', 'foreign']) {
      const c = held.get(id)!;
      assert.equal((await store.releaseLeases([c.lease.lease_id])).length, 1);
    }
    const [late] = await claim(store, 2000, { worker: 'slow', ttl: 1 });
    const [foreign] = await claim(store, 2000, { worker: 'other', token: 'theirs' });
    // Put back in their places (row order), they are claimed again in that order.
    assert.deepEqual([late!.job.job_id, foreign!.job.job_id], ['late', 'foreign']);
    held.set('late', late!);
    held.set('foreign', foreign!);
    assert.equal((await store.cancelRun('x', 3000)).kind, 'cancelled');
    const now = 5000; // past `late`'s expiry (3000), well within the others' (32000)
    const calls: Array<[id: string, outputs: Record<string, string>, holder: string | null]> = [
      ['a', { from: 'a' }, null],
      ['ok1', {}, null],
      ['late', {}, null],
      ['twice', { n: '1' }, null],
      ['foreign', {}, 'mine'],
      ['b', { from: 'b' }, null],
      ['gone', {}, null],
      ['twice', { n: '2' }, null],
      ['ok2', { k: 'v' }, null],
    ];
    const outs: CompleteOutcome[] = await Promise.all(calls.map(([id, outputs, holder]) => store.complete(held.get(id)!.lease.lease_id, outputs, now, holder)));
    const kinds = outs.map((o) => o.kind);
    assert.deepEqual(kinds, ['completed', 'completed', 'expired', kinds[3], 'not_yours', 'completed', 'cancelled', kinds[7], 'completed']);
    assert.deepEqual(
      [outs[3], outs[7]].map((o) => o!.kind).sort(),
      ['completed', 'settled'],
      'a lease completed twice at once: one completes, the other finds it settled',
    );
    const enqueued = outs.flatMap((o) => (o.kind === 'completed' ? o.enqueued : []));
    assert.deepEqual(enqueued, ['join'], 'the join is enqueued once, by one of its needs');
    for (const [i, [id, outputs]] of calls.entries()) {
      const o = outs[i]!;
      if (o.kind === 'completed' && o.job.job_id === id) {
        assert.deepEqual([o.job.status, o.job.outputs], ['success', outputs], `${id}: its own outputs`);
      }
    }
    const joined = await job(store, 'w', 'join');
    assert.equal(joined.status, 'queued');
    assert.deepEqual(Object.keys(joined.upstream_outputs), ['a', 'b'], 'upstream outputs in needs order');
    assert.deepEqual(joined.upstream_outputs, { a: { from: 'a' }, b: { from: 'b' } });
    assert.equal((await job(store, 'w', 'late')).status, 'queued', 'the stale lease expired, its job back in the queue');
    assert.equal((await job(store, 'w', 'foreign')).status, 'running', 'a foreign call changes nothing');
    assert.equal((await job(store, 'x', 'gone')).status, 'cancelled');
  });
  withStore('a claim after completes, handed over with them, takes the jobs they enqueue', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: { needs: ['a'] }, c: {}, d: { needs: ['c'] } });
    const held = await claim(store, 2000, { max: 2 });
    assert.deepEqual(held.map((c) => c.job.job_id).sort(), ['a', 'c']);
    // As a report-batch hands them over: the completes, then its claims, in one turn.
    const completes = held.map((c) => store.complete(c.lease.lease_id, {}, 3000, null));
    const reqs = [claimRequest(3000, { worker: 'r1', max: 1 }), claimRequest(3000, { worker: 'r2', max: 2 })];
    const claims = reqs.map((r) => store.claim({ ...r, after_completes: true }));
    const outs = await Promise.all(completes);
    assert.deepEqual(outs.map((o) => (o.kind === 'completed' ? o.enqueued : o.kind)), [['b'], ['d']]);
    const answers = await Promise.all(claims);
    answers.forEach((got, i) => assertOwnAnswer(reqs[i]!, got, `claim ${i}`));
    assert.deepEqual(answers.flat().map((c) => c.job.job_id).sort(), ['b', 'd'], 'the claims took both jobs the completes enqueued');
    assert.deepEqual(answers.map((a) => a.length), [1, 1], 'each claim in its order');
  });

  withStore('a claim after completes whose statement is already out waits for it, and sees what it enqueued', async (store) => {
    await start(store, 'w', 1000, { a: {}, b: { needs: ['a'] } });
    const [held] = await claim(store, 2000);
    const completed = store.complete(held!.lease.lease_id, {}, 3000, null);
    // A turn later the complete has gone out (or, where writes share a commit, is on its way).
    await new Promise<void>((r) => setImmediate(r));
    const got = await store.claim({ ...claimRequest(3000, { worker: 'late' }), after_completes: true });
    assert.equal((await completed).kind, 'completed');
    assert.deepEqual(got.map((c) => c.job.job_id), ['b']);
  });

}

/**
 * Many claims from several processes at once, then completes the same way: every job handed out
 * once and completed once, the run settled.
 */
export async function claimCompleteFlood(store: Store, actors: readonly Actor[], instant: Instant): Promise<void> {
  await start(store, 'w', 1000, Object.fromEntries(range(150).map((i) => [`j${i}`, { priority: i % 7 }])));
  const reqs = range(120).map((i) => claimRequest(2000, { worker: `wk${i}`, max: 1 + (i % 3) }));
  const parts = actors.map((_, k) => reqs.filter((_, i) => i % actors.length === k));
  const at = instant();
  const answers = await Promise.all(actors.map((a, k) => a.claim(parts[k]!, at)));
  answers.forEach((part, k) => part.forEach((got, i) => assertOwnAnswer(parts[k]![i]!, got, `${actors[k]!.name} claim ${i}`)));
  const won = answers.flat(2);
  assert.equal(won.length, 150, 'every job handed out');
  assert.equal(new Set(won.map((c) => c.job.job_id)).size, 150, 'no job handed out twice');
  const leases = won.map((c) => ({ lease_id: c.lease.lease_id, outputs: { job: c.job.job_id } }));
  const at2 = instant();
  const outs = (await Promise.all(actors.map((a, k) => a.complete(leases.filter((_, i) => i % actors.length === k), 3000, at2)))).flat();
  assert.deepEqual(outs.filter((o) => o.kind !== 'completed'), [], 'every complete completes');
  const jobs = await read(store, (r) => r.getRunJobs('w', 1));
  for (const j of jobs) assert.deepEqual([j.status, j.outputs], ['success', { job: j.job_id }], j.job_id);
  const run = await read(store, (r) => r.getRun('w', 1));
  assert.equal(run?.status, 'success');
}
