import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { normalizeLabels } from '../domain/labels.js';
import { DEFAULT_LEASE_TTL_SECS, newLeaseId } from '../domain/lease.js';
import type { ClaimResult } from '../protocol/wire.js';
import type { Claimed, JobChange, Store } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import type { ClaimAnswers } from './claim-answers.js';
import { ClaimWaiters, type ClaimTry, type NormalizedClaim } from './claim-waiters.js';
import type { ClaimWait, WorkerClaim } from './engine-options.js';
import type { LabelSetCache } from './label-cache.js';
import type { OutageWarnings } from './outage.js';

export interface ClaimsContext {
  store: Store;
  now: () => number;
  log: Logger;
  outage: OutageWarnings;
  labelSets: LabelSetCache;
  answers: () => ClaimAnswers;
  /** Jobs just claimed (their state changed to running). */
  claimed: (claimed: readonly Claimed[]) => void;
  /** Durable changes of jobs handed back. */
  announce: (changes: readonly JobChange[]) => void;
  /** A claim starts waiting (long poll): other servers' changes matter here now. */
  waiting?: () => void;
  claimSweepMs?: number;
}

/**
 * The worker protocol's claims (SPEC "Claiming"; README "How a run works"): one store claim over the
 * label sets a worker fits, long polls that wait for a fitting job (claim-waiters.ts), and the hand-back
 * of claims whose answer never reached their worker.
 */
export class Claims {
  private readonly waiters: ClaimWaiters;

  constructor(private readonly ctx: ClaimsContext) {
    this.waiters = new ClaimWaiters(
      (ask) =>
        this.claimOnce(ask, true).catch((err: unknown) => {
          // The waiters keep waiting; their next wake-up or sweep tries again.
          if (err instanceof StoreUnavailableError) ctx.outage.warn('long-poll claims', err);
          throw err;
        }),
      ctx.claimSweepMs,
    );
  }

  /**
   * Up to `max` jobs at once, each with its own lease, in the same order. With `waitMs`, a claim
   * that finds nothing waits for a job to become claimable until then (long poll), and answers [] at
   * the deadline or when `signal` aborts.
   */
  async claimMany(req: WorkerClaim, max: number, wait: ClaimWait = {}): Promise<ClaimResult[]> {
    const ask = { worker_id: req.worker_id, labels: normalizeLabels(req.labels), lease_ttl_secs: req.lease_ttl_secs, max, token_name: req.token_name ?? null };
    const received = this.ctx.now();
    const wakeCount = this.waiters.wakeCount;
    let now: ClaimResult[];
    try {
      now = await this.claimOnce(ask, false, wait.afterCompletes);
    } catch (err) {
      // It says nothing of what is left to claim.
      wait.tried?.(null);
      throw err;
    }
    wait.tried?.({ wakeCount, filled: now.length >= max, labels: ask.labels });
    if (now.length > 0 || !wait.waitMs || wait.signal?.aborted) return withWait(now, received);
    this.ctx.waiting?.();
    return withWait(await this.waiters.wait(ask, wait.waitMs, wait.signal), received);
  }

  /**
   * Puts the jobs of claims that never reached their client back in the queue at once, attempt and
   * place unchanged, instead of leaving them leased until the lease runs out.
   */
  async release(claims: readonly ClaimResult[]): Promise<void> {
    if (claims.length === 0) return;
    const changes = await this.ctx.store.releaseLeases(claims.map((c) => c.lease.lease_id));
    this.ctx.log.info({ leases: claims.map((c) => c.lease.lease_id) }, 'claim answer undeliverable; jobs put back');
    this.ctx.announce(changes);
  }

  /**
   * Gives a claim the first pick of what becomes claimable until the returned function is called with
   * what its try found (ClaimWaiters.firstPick): a report-batch's claim (docs/api.md "Batches") takes
   * the job its complete enqueued for the slot the report freed, instead of a waiting claim taking it
   * first.
   */
  firstPick(): (tried?: ClaimTry | null) => void {
    return this.waiters.firstPick();
  }

  /** Something may have become claimable: waiting claims look again. */
  wake(): void {
    this.waiters.wake();
  }

  /** A job becomes claimable at `atMs` (a retry's backoff ends). */
  wakeAt(atMs: number): void {
    this.waiters.wakeAt(atMs, this.ctx.now());
  }

  /** How many claims are waiting for a job right now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Ends every waiting claim with nothing (graceful shutdown). */
  close(): void {
    this.waiters.close();
  }

  /**
   * One try of a claim. `retry`: a waiting long poll tried again on a wake-up, which is not a call of
   * the worker: it records the worker only when it takes a job (StoreClaim.retry), or when the worker
   * was last recorded by this claim RETRY_SIGHTING_MS ago, so that one waiting in a long poll never
   * looks offline. Most wake-ups of a waiting claim find nothing (another claim took the job), and
   * such a try then writes nothing.
   */
  private async claimOnce(ask: NormalizedClaim, retry = false, afterCompletes = false): Promise<ClaimResult[]> {
    const now = this.ctx.now();
    const sighting = !retry || now - (ask.seen_at_ms ?? Number.NEGATIVE_INFINITY) >= RETRY_SIGHTING_MS;
    if (sighting) ask.seen_at_ms = now;
    const keys = await this.ctx.labelSets.keysFitting(ask.labels, now);
    if (keys.length === 0) {
      // Still a sign of life from the worker, as every claim is.
      if (sighting) await this.ctx.store.registerWorker(ask.worker_id, ask.labels, now);
      return [];
    }
    const claimed = await this.ctx.store.claim({
      worker_id: ask.worker_id,
      worker_labels: ask.labels,
      label_keys: keys,
      ttl_secs: ask.lease_ttl_secs ?? DEFAULT_LEASE_TTL_SECS,
      max: ask.max,
      lease_ids: Array.from({ length: ask.max }, () => newLeaseId(now, randomUUID)),
      now_ms: now,
      token_name: ask.token_name ?? null,
      retry: !sighting,
      after_completes: afterCompletes,
    });
    if (claimed.length === 0) return [];
    this.ctx.claimed(claimed);
    return this.ctx.answers().answer(claimed, ask.token_name ?? null);
  }
}

/** How often a waiting claim's tries record its worker as seen when they take nothing (Claims.claimOnce). */
const RETRY_SIGHTING_MS = 10_000;

/** Each lease says how long the claim waited on the server before it was granted (LeaseView.waited_ms). */
function withWait(results: ClaimResult[], receivedMs: number): ClaimResult[] {
  for (const r of results) r.lease.waited_ms = Math.max(0, r.lease.granted_at_ms - receivedMs);
  return results;
}
