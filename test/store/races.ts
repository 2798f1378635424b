/**
 * The races of the concurrency cases, each written once against a set of actors (stores in this
 * process or in child processes) and checked through a separate observer store. None of them can
 * pass by luck of timing alone: each checks an invariant that any lost update or double settlement
 * would break.
 */
import assert from 'node:assert/strict';
import { LEASE_EXPIRED_ERROR } from '../../src/domain/retry.js';
import type { CancelRunOutcome, Claimed, CompleteOutcome, JobRecord, RunKey, Store } from '../../src/store/store.js';
import type { Actor } from './actors.js';
import { claim, claimRequest, pool, start } from './fixtures.js';

/** When the actors of one race start: at once in this process, a little ahead across processes. */
export type Instant = () => number;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const chunks = <T>(xs: readonly T[], size: number) => range(Math.ceil(xs.length / size)).map((i) => xs.slice(i * size, (i + 1) * size));

/** Every claimable job at `now`, by "workflow/job". */
async function claimEverything(store: Store, now: number, ttl = 30): Promise<Map<string, Claimed>> {
  const out = new Map<string, Claimed>();
  for (;;) {
    const got = await claim(store, now, { max: 200, ttl });
    for (const c of got) out.set(`${c.job.workflow_id}/${c.job.job_id}`, c);
    if (got.length < 200) return out;
  }
}

async function jobsOf(store: Store, wfs: readonly string[]): Promise<Map<string, JobRecord>> {
  const out = new Map<string, JobRecord>();
  for (const part of chunks(wfs, 250)) {
    const keys: RunKey[] = part.map((workflow_id) => ({ workflow_id, run_number: 1 }));
    for (const j of await store.read((r) => r.getJobsOfRuns(keys))) out.set(`${j.workflow_id}/${j.job_id}`, j);
  }
  return out;
}

async function runStates(store: Store, wfs: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const part of chunks(wfs, 250)) {
    const runs = await store.read((r) => r.getRuns(part.map((workflow_id) => ({ workflow_id, run_number: 1 }))));
    for (const r of runs) out.set(r.workflow_id, r.status);
  }
  return out;
}

/** Completes every claimable job (no outputs), split across the actors, until nothing is left. */
async function finishAll(store: Store, actors: readonly Actor[], now: number, instant: Instant): Promise<void> {
  for (;;) {
    const leases = [...(await claimEverything(store, now)).values()].map((c) => ({ lease_id: c.lease.lease_id, outputs: {} }));
    if (leases.length === 0) return;
    const at = instant();
    const outs = await Promise.all(actors.map((a, k) => a.complete(leases.filter((_, i) => i % actors.length === k), now, at)));
    for (const o of outs.flat()) assert.equal(o.kind, 'completed');
  }
}

/** 64 claims at once on 10 jobs: each job handed out exactly once, 54 empty answers. */
export async function claimRace(store: Store, actors: readonly Actor[], instant: Instant): Promise<void> {
  await start(store, 'w', 1000, Object.fromEntries(range(10).map((i) => [`j${i}`, {}])));
  const reqs = range(64).map((i) => claimRequest(2000, { worker: `wk${i}` }));
  const at = instant();
  const answers = (await Promise.all(actors.map((a, k) => a.claim(reqs.filter((_, i) => i % actors.length === k), at)))).flat();
  assert.equal(answers.length, 64);
  assert.deepEqual(answers.map((a) => a.length).filter((n) => n > 1), [], 'max 1 means at most one job');
  const won = answers.flat();
  assert.equal(won.length, 10, 'every job handed out');
  assert.equal(answers.filter((a) => a.length === 0).length, 54);
  assert.equal(new Set(won.map((c) => c.job.job_id)).size, 10, 'no job handed out twice');
  const jobs = await store.read((r) => r.getRunJobs('w', 1));
  for (const j of jobs) {
    const winner = won.find((c) => c.job.job_id === j.job_id)!;
    assert.deepEqual([j.status, j.lease_id, j.worker_id], ['running', winner.lease.lease_id, winner.lease.worker_id], j.job_id);
  }
  const active = await store.read((r) => r.activeLeases());
  assert.deepEqual(active.map((l) => l.lease_id).sort(), won.map((c) => c.lease.lease_id).sort(), 'one active lease per job');
}

/** Joins per run in joinRace: few runs to set up, and a wave still spreads over many run rows. */
const JOINS_PER_RUN = 10;

/**
 * `n` joins d<i> <- b<i>, c<i>, ten to a run. The two siblings of each join complete at the same
 * instant through two actors: the join is queued exactly once, with both outputs, and every run settles
 * (its unfinished count, decremented by every completion of the run at once, reaches zero once).
 */
export async function joinRace(store: Store, actors: readonly Actor[], n: number, instant: Instant): Promise<void> {
  const [left, right] = actors;
  assert.ok(left && right, 'two actors race');
  // Pair k belongs to run k mod R: consecutive pairs, which race in one wave, are in different runs.
  const runs = Math.ceil(n / JOINS_PER_RUN);
  const pairs = range(n).map((k) => ({ wf: `join${k % runs}`, i: Math.floor(k / runs) }));
  const wfs = [...new Set(pairs.map((p) => p.wf))];
  const specs = (count: number) =>
    Object.fromEntries(range(count).flatMap((i) => [[`b${i}`, {}], [`c${i}`, {}], [`d${i}`, { needs: [`b${i}`, `c${i}`] }]]));
  await pool(wfs, 8, (wf) => start(store, wf, 1000, specs(pairs.filter((p) => p.wf === wf).length)));
  const claimed = await claimEverything(store, 2000, 600);
  assert.equal(claimed.size, 2 * n);
  const leaseOf = (wf: string, j: string) => claimed.get(`${wf}/${j}`)!.lease.lease_id;
  for (const wave of chunks(pairs, 100)) {
    const at = instant();
    const [bs, cs] = await Promise.all([
      left.complete(wave.map(({ wf, i }) => ({ lease_id: leaseOf(wf, `b${i}`), outputs: { B: `${wf}.${i}` } })), 3000, at),
      right.complete(wave.map(({ wf, i }) => ({ lease_id: leaseOf(wf, `c${i}`), outputs: { C: `${wf}.${i}` } })), 3000, at),
    ]);
    wave.forEach(({ wf, i }, k) => {
      const b = bs[k]!;
      const c = cs[k]!;
      assert.deepEqual([b.kind, c.kind], ['completed', 'completed'], `${wf}/${i}`);
      const enqueued = [b, c].flatMap((o) => (o.kind === 'completed' ? o.enqueued : []));
      assert.deepEqual(enqueued, [`d${i}`], `${wf}/${i}: the join is queued by exactly one of its two needs`);
    });
  }
  const jobs = await jobsOf(store, wfs);
  for (const { wf, i } of pairs) {
    const d = jobs.get(`${wf}/d${i}`)!;
    assert.deepEqual(
      [d.status, d.pending_needs, d.upstream_outputs],
      ['queued', 0, { [`b${i}`]: { B: `${wf}.${i}` }, [`c${i}`]: { C: `${wf}.${i}` } }],
      `${wf}/d${i}: the join waits for nothing and carries both outputs`,
    );
  }
  await finishAll(store, actors, 4000, instant);
  const states = await runStates(store, wfs);
  assert.deepEqual(wfs.filter((wf) => states.get(wf) !== 'success'), [], 'every run settled success');
}

/**
 * A worker completes leases that the reaper finds out of time at the same moment. With the worker's
 * clock still inside the lease (`completerLate` false) either the completion or the expiry applies;
 * with both clocks past it, the expiry applies once, by whichever call came first. Never both, never
 * twice, and the run counters stay right: every run settles success once its job finally succeeds.
 */
export async function completeVersusExpiry(
  store: Store,
  actors: readonly Actor[],
  n: number,
  base: number,
  completerLate: boolean,
  instant: Instant,
): Promise<void> {
  const [completer, ...reapers] = actors;
  assert.ok(completer && reapers.length > 0, 'a completer and at least one reaper');
  const wfs = range(n).map((i) => `race${base}_${i}`);
  await pool(wfs, 8, (wf) => start(store, wf, base, { a: { max_retries: 3 } }));
  const claimed = await claimEverything(store, base, 10);
  const expires = base + 10_000;
  // Shuffled, so the completer and the reapers (oldest expiry first) meet at many points.
  const order = [...wfs].sort(() => Math.random() - 0.5);
  const at = instant();
  const items = order.map((wf) => ({ lease_id: claimed.get(`${wf}/a`)!.lease.lease_id, outputs: { ok: wf } }));
  const [outcomes, swept] = await Promise.all([
    completer.complete(items, completerLate ? expires + 1 : expires, at),
    Promise.all(reapers.map((r) => r.reap(expires + 1, 3, at))),
  ]);
  const reaped = swept.flat().map((c) => c.workflow_id);
  assert.equal(new Set(reaped).size, reaped.length, 'no lease settled twice by the reapers');
  const jobs = await jobsOf(store, wfs);
  const states = await runStates(store, wfs);
  const leaseStates = await store.read(async (r) => Promise.all(items.map(async (i) => (await r.getLease(i.lease_id))?.state)));
  order.forEach((wf, i) => {
    const out = outcomes[i]!;
    const job = jobs.get(`${wf}/a`)!;
    const byReaper = reaped.includes(wf);
    if (out.kind === 'completed') {
      assert.ok(!completerLate, `${wf}: a complete past the expiry cannot succeed`);
      assert.equal(byReaper, false, `${wf}: completed, yet the reaper also settled it`);
      assert.deepEqual([job.status, job.attempt, job.outputs, states.get(wf)], ['success', 0, { ok: wf }, 'success'], wf);
      assert.equal(leaseStates[i], 'completed', `${wf}: the completed lease stays completed`);
      return;
    }
    assert.equal(leaseStates[i], 'expired', wf);
    if (out.kind === 'expired') {
      assert.ok(completerLate, `${wf}: a complete inside the lease found it expired`);
      assert.equal(byReaper, false, `${wf}: expired by the call and by the reaper`);
    }
    else assert.deepEqual([out, byReaper], [{ kind: 'settled', state: 'expired' }, true], wf);
    assert.deepEqual(
      [job.status, job.attempt, job.error, job.outputs, states.get(wf)],
      ['queued', 1, LEASE_EXPIRED_ERROR, null, 'running'],
      `${wf}: the expiry applied exactly once`,
    );
  });
  await finishAll(store, actors, expires + 2, instant);
  const after = await runStates(store, wfs);
  assert.deepEqual(wfs.filter((wf) => after.get(wf) !== 'success'), [], 'every run settled success');
}

/** Two completes of the same lease at once: one completes, the other finds it settled; counted once. */
export async function doubleComplete(store: Store, actors: readonly Actor[], n: number, instant: Instant): Promise<void> {
  const [left, right] = actors;
  assert.ok(left && right, 'two actors race');
  const wfs = range(n).map((i) => `twice${i}`);
  await pool(wfs, 8, (wf) => start(store, wf, 1000, { a: {}, x: {}, j: { needs: ['a', 'x'] } }));
  const claimed = await claimEverything(store, 2000, 600);
  const items = wfs.map((wf) => ({ lease_id: claimed.get(`${wf}/a`)!.lease.lease_id, outputs: { A: wf } }));
  const at = instant();
  const [one, two] = await Promise.all([left.complete(items, 3000, at), right.complete(items, 3000, at)]);
  wfs.forEach((wf, i) => {
    const kinds = [one[i]!, two[i]!].map((o) => (o.kind === 'settled' ? `settled ${o.state}` : o.kind)).sort();
    assert.deepEqual(kinds, ['completed', 'settled completed'], wf);
  });
  const jobs = await jobsOf(store, wfs);
  for (const wf of wfs) {
    const j = jobs.get(`${wf}/j`)!;
    assert.deepEqual([j.status, j.pending_needs], ['pending', 1], `${wf}: one completion counted once`);
  }
  const xs = wfs.map((wf) => claimed.get(`${wf}/x`)!.lease.lease_id);
  const outs = await pool(xs, 8, (id) => store.complete(id, {}, 4000));
  for (const o of outs) assert.deepEqual(o.kind === 'completed' && o.enqueued, ['j']);
  const mid = await runStates(store, wfs);
  assert.deepEqual(wfs.filter((wf) => mid.get(wf) !== 'running'), [], 'no run settles while its join is still queued');
  await finishAll(store, actors, 5000, instant);
  const after = await runStates(store, wfs);
  assert.deepEqual(wfs.filter((wf) => after.get(wf) !== 'success'), [], 'every run settled success');
}

/**
 * Workers complete the jobs of runs that are being cancelled at the same moment, through another
 * store. Each job ends either a success (its completion came first) or cancelled (with the cancel's
 * list naming it), never both; every run ends cancelled and settled, so its next run can start. The
 * cancels go in the opposite order, so early runs see completions win, late ones cancels, and the
 * runs in between a real race.
 */
export async function cancelVersusComplete(store: Store, completer: Store, canceller: Store, n: number): Promise<void> {
  const wfs = range(n).map((i) => `cancel${i}`);
  await pool(wfs, 8, (wf) => start(store, wf, 1000, { a: {}, b: {}, c: { needs: ['a', 'b'] } }));
  const claimed = await claimEverything(store, 2000, 600);
  const completes: Array<Promise<CompleteOutcome>> = [];
  const cancels: Array<Promise<CancelRunOutcome>> = [];
  wfs.forEach((wf, i) => {
    for (const j of ['a', 'b']) completes.push(completer.complete(claimed.get(`${wf}/${j}`)!.lease.lease_id, {}, 3000));
    cancels.unshift(canceller.cancelRun(wfs[n - 1 - i]!, 3000));
  });
  const outcomes = await Promise.all(completes);
  const cancelled = await Promise.all(cancels);
  const jobs = await jobsOf(store, wfs);
  wfs.forEach((wf, i) => {
    const cancel = cancelled[i]!;
    assert.equal(cancel.kind, 'cancelled', `${wf}: the run was running when cancelled`);
    const listed = cancel.kind === 'cancelled' ? cancel.jobs : [];
    for (const [k, j] of ['a', 'b'].entries()) {
      const out = outcomes[i * 2 + k]!;
      const status = jobs.get(`${wf}/${j}`)!.status;
      if (out.kind === 'completed') assert.deepEqual([status, listed.includes(j)], ['success', false], `${wf}/${j}`);
      else assert.deepEqual([out.kind, status, listed.includes(j)], ['cancelled', 'cancelled', true], `${wf}/${j}`);
    }
    assert.deepEqual([jobs.get(`${wf}/c`)!.status, listed.includes('c')], ['cancelled', true], `${wf}/c`);
  });
  const states = await runStates(store, wfs);
  assert.deepEqual(wfs.filter((wf) => states.get(wf) !== 'cancelled'), [], 'every run ended cancelled');
  const next = await pool(wfs, 8, (wf) => start(store, wf, 4000, { a: {} }));
  assert.deepEqual(next.filter((r) => r !== 2), [], 'and is over: the next run starts');
}

/**
 * Workers claim the queued jobs of runs being cancelled at the same moment. Whatever a claim took, the
 * cancel must find: afterwards no job of those runs is queued or running, every lease granted on them
 * is cancelled, and each cancel lists all three of its run's jobs.
 */
export async function claimVersusCancel(store: Store, claimer: Store, canceller: Store, n: number): Promise<void> {
  const wfs = range(n).map((i) => `fence${i}`);
  await pool(wfs, 8, (wf) => start(store, wf, 1000, { a: {}, b: {}, c: {} }));
  const claims: Array<Promise<Claimed[]>> = [];
  const cancels: Array<Promise<CancelRunOutcome>> = [];
  wfs.forEach((_wf, i) => {
    for (let k = 0; k < 3; k++) claims.push(claimer.claim(claimRequest(2000, { worker: `wk${i % 7}` })));
    cancels.unshift(canceller.cancelRun(wfs[n - 1 - i]!, 2000));
  });
  const granted = (await Promise.all(claims)).flat();
  const cancelled = await Promise.all(cancels);
  wfs.forEach((wf, i) => {
    const c = cancelled[i]!;
    assert.deepEqual(c.kind === 'cancelled' && [...c.jobs].sort(), ['a', 'b', 'c'], `${wf}: every job of the run cancelled`);
  });
  const jobs = await jobsOf(store, wfs);
  assert.deepEqual([...jobs.values()].filter((j) => j.status !== 'cancelled').map((j) => `${j.workflow_id}/${j.job_id} ${j.status}`), []);
  const leases = await store.read(async (r) => Promise.all(granted.map((g) => r.getLease(g.lease.lease_id))));
  assert.deepEqual(leases.filter((l) => l?.state !== 'cancelled').map((l) => `${l?.workflow_id}/${l?.job_id} ${l?.state}`), [], 'every lease granted on them is void');
  assert.deepEqual(await store.read((r) => r.activeLeases()), []);
}
