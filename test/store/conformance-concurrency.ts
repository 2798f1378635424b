/**
 * Conformance under real concurrency (docs/architecture.md "Store"): several stores on one database,
 * each with its own connection (SQLite) or pool (PostgreSQL), and then several processes. Nothing in
 * the test serializes the racers; whatever keeps the outcomes right must be the store's own locking.
 */
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { ChildActor, inProcessActor, startSoon, type Actor } from './actors.js';
import type { Case, ConformanceOptions, StoreHandle } from './conformance.js';
import { buildJobs, HASH, labelSetsOf } from './fixtures.js';
import { finishedRun } from './conformance-retention.js';
import { claimCompleteFlood } from './conformance-together.js';
import { cancelVersusComplete, claimRace, claimVersusCancel, completeVersusExpiry, doubleComplete, joinRace, type Instant } from './races.js';

const RACE_TIMEOUT = 120_000;
/** In one process the racers start in the same tick; children get a moment to receive the request. */
const together: Instant = () => Date.now();
const acrossProcesses: Instant = () => startSoon(60);

async function withActors(h: StoreHandle, n: number, fn: (actors: Actor[], stores: Store[]) => Promise<void>): Promise<void> {
  const stores = await Promise.all(Array.from({ length: n }, () => h.another()));
  try {
    await fn(stores.map((s, i) => inProcessActor(`store${i + 1}`, s)), stores);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

export function concurrencyCases(withStore: Case, opts: ConformanceOptions): void {
  describe('stores on one database', () => {
    withStore('64 concurrent claims on 10 jobs hand each job out exactly once', async (store, h) => {
      await withActors(h, 2, (actors) => claimRace(store, actors, together));
    });

    withStore('120 claims of 1 to 3 jobs from two stores at once on 150 jobs, then their completes: each job once, each answer its own', async (store, h) => {
      await withActors(h, 2, (actors) => claimCompleteFlood(store, actors, together));
    }, { timeout: RACE_TIMEOUT });

    withStore(`siblings of a join complete at the same instant, ${opts.joinRaces} joins: each queued once, every run settles`, async (store, h) => {
      await withActors(h, 2, (actors) => joinRace(store, actors, opts.joinRaces, together));
    }, { timeout: RACE_TIMEOUT });

    withStore('complete racing expireLeases on a lease out of time: exactly one outcome applies', async (store, h) => {
      await withActors(h, 3, async (actors) => {
        await completeVersusExpiry(store, actors, 100, 1000, false, together);
        await completeVersusExpiry(store, actors, 100, 100_000, true, together);
      });
    }, { timeout: RACE_TIMEOUT });

    withStore('two completes of one lease: one completes, the other finds it settled', async (store, h) => {
      await withActors(h, 2, (actors) => doubleComplete(store, actors, 100, together));
    }, { timeout: RACE_TIMEOUT });

    withStore('cancelRun racing completes of its jobs: each job ends success or cancelled, never both; the run settles', async (store, h) => {
      await withActors(h, 2, (_actors, [completer, canceller]) => cancelVersusComplete(store, completer!, canceller!, 100));
    }, { timeout: RACE_TIMEOUT });

    withStore('claims racing cancelRun: whatever was claimed gets cancelled with its lease', async (store, h) => {
      await withActors(h, 2, (_actors, [claimer, canceller]) => claimVersusCancel(store, claimer!, canceller!, 100));
    }, { timeout: RACE_TIMEOUT });

    withStore('concurrent startRun on one workflow: one run starts, the others see it active; numbers stay gapless', async (store, h) => {
      await withActors(h, 2, async (_actors, stores) => {
        await store.createWorkflow({
          id: 'w', name: 'W', trigger: null, definition: { id: 'w', name: 'W', trigger: null, env: {}, jobs: [] },
          source: 'api', hash: HASH, created_at_ms: 1, updated_at_ms: 1, latest_run: 0,
        });
        for (const round of [1, 2, 3]) {
          const now = round * 1000;
          const jobs = buildJobs('w', now, { a: {} });
          const req = { workflow_id: 'w', expected_hash: HASH, jobs, label_sets: labelSetsOf(jobs), now_ms: now };
          const outs = await Promise.all(stores.flatMap((s) => [s.startRun(req), s.startRun(req), s.startRun(req), s.startRun(req)]));
          const started = outs.filter((o) => o.kind === 'started');
          assert.equal(started.length, 1, `round ${round}: exactly one run starts`);
          assert.equal(started[0]!.kind === 'started' && started[0]!.run.run_number, round);
          assert.deepEqual(
            outs.filter((o) => o.kind !== 'started'),
            Array.from({ length: outs.length - 1 }, () => ({ kind: 'active', run_number: round, run_numbers: [round] })),
          );
          assert.equal((await store.cancelRun('w', now + 1)).kind, 'cancelled');
        }
        const runs = await store.read((r) => r.getRuns([1, 2, 3, 4].map((n) => ({ workflow_id: 'w', run_number: n }))));
        assert.deepEqual(runs.map((r) => r.run_number).sort(), [1, 2, 3]);
      });
    });
  });

  describe('retention on one database', () => {
    withStore('two stores pruning while a third deletes a workflow: each run deleted once, nothing left behind', async (store, h) => {
      for (let i = 1; i <= 30; i++) {
        await finishedRun(store, 'a', i * 10, 1);
        await finishedRun(store, 'b', i * 10 + 5, 1);
      }
      await withActors(h, 3, async (_actors, [p1, p2, deleter]) => {
        const req = { retain_runs: 1, finished_before_ms: null, max_runs: 4, max_log_chunks: 12, dry_run: false };
        const pruner = async (s: Store) => {
          const got: string[] = [];
          for (let more = true; more; ) {
            const out = await s.pruneRuns(req);
            got.push(...out.runs.map((r) => `${r.workflow_id}#${r.run_number}`));
            more = out.more;
          }
          return got;
        };
        const deleting = (async () => {
          for (;;) {
            const out = await deleter!.deleteWorkflow('b', { max_runs: 3, max_log_chunks: 8 });
            if (out !== 'more') return out;
          }
        })();
        const [one, two, deleted] = await Promise.all([pruner(p1!), pruner(p2!), deleting]);
        assert.equal(deleted, 'deleted');
        const pruned = [...one, ...two];
        assert.equal(new Set(pruned).size, pruned.length, `no run deleted twice: ${pruned.join(' ')}`);
        const rest = await pruner(store);
        const ofA = [...pruned, ...rest].filter((k) => k.startsWith('a#')).sort();
        assert.deepEqual(ofA, Array.from({ length: 29 }, (_, i) => `a#${i + 1}`).sort());
      });
      assert.equal(await store.read((r) => r.getWorkflow('b')), null);
      const left = await store.read((r) => r.getRuns(Array.from({ length: 30 }, (_, i) => ({ workflow_id: 'a', run_number: i + 1 }))));
      assert.deepEqual(left.map((r) => r.run_number), [30]);
      assert.deepEqual(await store.read((r) => r.getRunJobs('b', 30)), []);
    }, { timeout: RACE_TIMEOUT });
  });

  describe('separate processes on one database', () => {
    const children: ChildActor[] = [];
    before(() => {
      for (let i = 1; i <= 3; i++) children.push(new ChildActor(`process${i}`));
    });
    after(() => Promise.all(children.map((c) => c.close())));

    const withChildren = (title: string, n: number, fn: (store: Store, actors: Actor[]) => Promise<void>) =>
      withStore(title, async (store, h) => {
        const used = children.slice(0, n);
        await Promise.all(used.map((c) => c.open(h.target)));
        try {
          await fn(store, used);
        } finally {
          await Promise.all(used.map((c) => c.release()));
        }
      }, { timeout: RACE_TIMEOUT });

    withChildren('64 concurrent claims from 3 processes on 10 jobs hand each job out exactly once', 3, (store, actors) =>
      claimRace(store, actors, acrossProcesses),
    );

    withChildren('120 claims of 1 to 3 jobs from 3 processes at once on 150 jobs, then their completes: each job once, each answer its own', 3, (store, actors) =>
      claimCompleteFlood(store, actors, acrossProcesses),
    );

    const n = Math.min(opts.joinRaces, 100);
    withChildren(`siblings of a join completed by two processes at once, ${n} joins: each queued once, every run settles`, 2, (store, actors) =>
      joinRace(store, actors, n, acrossProcesses),
    );

    withChildren('a process completing while two processes reap the same leases: exactly one outcome applies', 3, async (store, actors) => {
      await completeVersusExpiry(store, actors, 100, 1000, false, acrossProcesses);
      await completeVersusExpiry(store, actors, 100, 100_000, true, acrossProcesses);
    });

    withChildren('two processes completing the same leases: one completes, the other finds it settled', 2, (store, actors) =>
      doubleComplete(store, actors, 100, acrossProcesses),
    );
  });
}
