/**
 * One behavioural suite for every Store implementation, through the public `Store` methods only.
 * Each backend's test file calls `storeConformance` with a factory that makes a fresh, empty
 * database and can open more stores (and child processes) on that same database, which the
 * concurrency cases need to race for real.
 */
import { describe, test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { runCases } from './conformance-runs.js';
import { claimCases } from './conformance-claim.js';
import { leaseCases } from './conformance-leases.js';
import { reaperAndLogCases } from './conformance-reaper.js';
import { concurrencyCases } from './conformance-concurrency.js';
import { retentionCases } from './conformance-retention.js';
import { artifactCases } from './conformance-artifacts.js';
import { secretCases } from './conformance-secrets.js';
import { notificationCases, notificationClaimRace } from './conformance-notifications.js';
import { groupStartRace, runGroupCases } from './conformance-run-groups.js';
import { jobGroupCases, jobGroupRaces } from './conformance-job-groups.js';
import { scheduleCases } from './conformance-schedules.js';
import { runEndCases } from './conformance-run-ends.js';
import { conditionCases, conditionRaceCases } from './conformance-conditions.js';
import { approvalCases, approvalRaceCases } from './conformance-approvals.js';
import { fanOutCases, fanOutRaceCases, matrixCases, matrixRaceCases } from './conformance-matrix.js';
import { concurrentRunCases, queuedStartRace, scheduledConcurrentRunCases } from './conformance-concurrent-runs.js';
import { deliveryRace, triggerCases } from './conformance-triggers.js';
import { callCases, callRaces } from './conformance-calls.js';
import { togetherCases } from './conformance-together.js';

/** Where a child process finds the same database. */
export type ChildTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

export interface StoreHandle {
  /** The first store on the fresh database, already migrated. */
  store: Store;
  /** Another store on the same database: its own connection (SQLite) or pool (PostgreSQL). */
  another(): Promise<Store>;
  target: ChildTarget;
  /** Removes the database; every store on it is closed by then. */
  dispose(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreHandle>;

export interface ConformanceOptions {
  /** How many runs race their join's two sibling completions (the issue asks 1,000 on PostgreSQL). */
  joinRaces: number;
  /** False for a database only one store can open (SQLite :memory:): the concurrency cases need more. */
  concurrency?: boolean;
}

export type Case = (title: string, fn: (store: Store, handle: StoreHandle) => Promise<void>, opts?: { timeout?: number }) => void;

export function storeConformance(name: string, factory: StoreFactory, opts: ConformanceOptions): void {
  describe(`Store conformance: ${name}`, () => {
    const withStore: Case = (title, fn, o) =>
      test(title, { timeout: o?.timeout ?? 30_000 }, async () => {
        const handle = await factory();
        try {
          await fn(handle.store, handle);
        } finally {
          await handle.store.close();
          await handle.dispose();
        }
      });
    describe('workflows and runs', () => runCases(withStore));
    describe('claim', () => claimCases(withStore));
    describe('lease calls', () => leaseCases(withStore));
    describe('claims and completes arriving together', () => togetherCases(withStore));
    describe('reaper, logs, workers, reads', () => reaperAndLogCases(withStore));
    describe('retention and deleting workflows', () => retentionCases(withStore));
    describe('artifacts', () => artifactCases(withStore));
    describe('secrets', () => secretCases(withStore));
    describe('notifications', () => notificationCases(withStore));
    describe('concurrency groups', () => runGroupCases(withStore));
    describe('concurrency groups of jobs', () => jobGroupCases(withStore));
    describe('schedules', () => scheduleCases(withStore, opts));
    describe('the run-end outbox', () => runEndCases(withStore, opts));
    describe('conditional jobs', () => conditionCases(withStore));
    describe('approval gates', () => approvalCases(withStore));
    describe('matrix jobs', () => matrixCases(withStore));
    describe('fan-out jobs', () => fanOutCases(withStore));
    describe('concurrent runs', () => {
      concurrentRunCases(withStore);
      scheduledConcurrentRunCases(withStore);
    });
    describe('runs started from outside', () => triggerCases(withStore));
    describe('workflows calling workflows', () => callCases(withStore));
    if (opts.concurrency !== false) describe('concurrency', () => concurrencyCases(withStore, opts));
    if (opts.concurrency !== false) describe('concurrency of conditional jobs', () => conditionRaceCases(withStore, opts));
    if (opts.concurrency !== false) describe('concurrency of approval gates', () => approvalRaceCases(withStore, Math.max(10, Math.round(opts.joinRaces / 20))));
    if (opts.concurrency !== false) {
      describe('concurrency of matrix and fan-out jobs', () => {
        matrixRaceCases(withStore);
        fanOutRaceCases(withStore, Math.max(3, Math.round(opts.joinRaces / 50)));
      });
    }
    if (opts.concurrency !== false) {
      describe('concurrency of queued runs', () => withStore('two runs settling at once start each queued run exactly once', (store, h) => queuedStartRace(store, h), { timeout: 60_000 }));
      describe('concurrency of group starts', () => withStore('six starts of one group on three connections at once: one runs, one waits', (store, h) => groupStartRace(store, h), { timeout: 60_000 }));
      describe('concurrency of notification claims', () => withStore('four connections claiming the same due notifications: each claimed once', (store, h) => notificationClaimRace(store, h), { timeout: 60_000 }));
      describe('concurrency of job groups', () => withStore('claims and settlings of one group on three connections at once: one job runs, each replaced job is cancelled once', (store, h) => jobGroupRaces(store, h), { timeout: 60_000 }));
      describe('concurrency of deliveries', () => withStore('twelve starts of one delivery key on three connections at once: one run, every other answers it', (store, h) => deliveryRace(store, h), { timeout: 60_000 }));
      describe('concurrency of calls', () => withStore('child starts, child ends and saves closing cycles on three connections at once: each happens once', (store, h) => callRaces(store, h), { timeout: 60_000 }));
    }
  });
}
