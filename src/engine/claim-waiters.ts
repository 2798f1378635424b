import type { ClaimResult } from '../protocol/wire.js';

/** A WorkerClaim with its labels normalized and the most jobs it takes: what is tried, or waits here. */
export interface NormalizedClaim {
  worker_id: string;
  /** Normalized: waiters with the same labels queue together. */
  labels: string[];
  lease_ttl_secs?: number;
  max: number;
  /** The claim's token, recorded on its leases. */
  token_name?: string | null;
  /** When a try of this claim last recorded its worker as seen (Claims.claimOnce). */
  seen_at_ms?: number;
}

/** What a claim's first try found (ClaimWaiters.firstPick). */
export interface ClaimTry {
  /** ClaimWaiters.wakeCount when the try began. */
  wakeCount: number;
  /** It took as many jobs as it asked for (more may be left). */
  filled: boolean;
  /** Its labels, normalized. */
  labels: string[];
}

/** A claim with the first pick (ClaimWaiters.firstPick), until it has had its try. */
interface Pick {
  ended: Promise<void>;
  tried: ClaimTry | null;
}

interface Waiter {
  ask: NormalizedClaim;
  signal?: AbortSignal;
  resolve: (claims: ClaimResult[]) => void;
  timer: NodeJS.Timeout;
  onAbort?: () => void;
  /** A claim for this waiter is in flight: whatever it grants must reach the waiter. */
  claiming: boolean;
  /** Its deadline passed or its client left while claiming: answered as soon as that claim returns. */
  over: boolean;
}

/**
 * Long-poll claims (docs/api.md "POST /api/jobs/claim"). A claim that finds nothing waits here until
 * something may have become claimable: a job was queued (a run started, a completion unblocked a job,
 * a lease was reaped), a retry's backoff ended, or, as a safety net for changes made by another
 * process, a periodic look. Waiters with the same labels form one FIFO queue, and a wake-up tries only
 * the head of each queue until a claim comes back empty, so a thousand idle waiters cost one claim
 * per distinct label set per wake-up, not one each.
 *
 * The claim a report carries has the first pick ({@link firstPick}): a wake-up serves no waiter until
 * it has had its try, so the job a complete enqueues goes to the slot the report freed, in the
 * report's answer, rather than to a waiting claim, which would cost that claim's worker another
 * request and the report's claim an empty try (docs/performance.md "Sixth round").
 */
export class ClaimWaiters {
  private readonly queues = new Map<string, Waiter[]>();
  private cycle: Promise<void> | null = null;
  private again = false;
  private readonly delayTimers = new Map<number, NodeJS.Timeout>();
  private sweep: NodeJS.Timeout | null = null;
  /** Counts wake-ups: what a claim's try may have missed is told by the count when it began. */
  private wakes = 0;
  /** Claims with the first pick that have not had their try yet. */
  private readonly picks = new Set<Pick>();

  constructor(
    /** One claim attempt; [] when nothing fits. */
    private readonly tryClaim: (ask: NormalizedClaim) => Promise<ClaimResult[]>,
    private readonly sweepEveryMs = 1000,
  ) {}

  get size(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /** Waits until claims are granted (resolves with them) or the wait ends (resolves with []). */
  wait(ask: NormalizedClaim, waitMs: number, signal?: AbortSignal): Promise<ClaimResult[]> {
    if (signal?.aborted) return Promise.resolve([]);
    return new Promise((resolve) => {
      const key = JSON.stringify(ask.labels);
      const w: Waiter = { ask, signal, resolve, timer: setTimeout(() => this.end(key, w), waitMs), claiming: false, over: false };
      if (signal) {
        w.onAbort = () => this.end(key, w);
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      const q = this.queues.get(key);
      if (q) q.push(w);
      else this.queues.set(key, [w]);
      this.armSweep();
      // Something may have been queued between the caller's empty claim and now.
      this.wake();
    });
  }

  /** Something may have become claimable: give every queue's head a try (coalesced). */
  wake(): void {
    this.wakes++;
    if (this.size === 0) return;
    if (this.cycle) {
      this.again = true;
      return;
    }
    this.cycle = (async () => {
      try {
        do {
          this.again = false;
          await this.serveAll();
        } while (this.again);
      } finally {
        this.cycle = null;
      }
    })();
  }

  /** How many wake-ups there have been so far (a claim's try notes it as it begins; see hold). */
  get wakeCount(): number {
    return this.wakes;
  }

  /**
   * Gives a claim the first pick until the returned function is called (once is enough; later calls
   * do nothing) with what its try found (null or nothing: it failed or never ran): a wake-up meanwhile
   * waits for it before serving any waiter. A waiter with the claim's labels is then not tried if
   * the claim shows that would find nothing: it took fewer jobs than it asked for (none fitting those
   * labels was left), and its try began after every wake-up being served, so every change they were
   * woken for was committed before it and seen by it.
   */
  firstPick(): (tried?: ClaimTry | null) => void {
    let ended!: () => void;
    const pick: Pick = { ended: new Promise<void>((r) => (ended = r)), tried: null };
    this.picks.add(pick);
    return (tried) => {
      if (!this.picks.delete(pick)) return;
      pick.tried = tried ?? null;
      ended();
    };
  }

  /** A job becomes claimable at `atMs` (a retry's backoff ends): wake then. */
  wakeAt(atMs: number, nowMs: number): void {
    if (this.delayTimers.has(atMs)) return;
    const t = setTimeout(() => {
      this.delayTimers.delete(atMs);
      this.wake();
    }, Math.max(0, atMs - nowMs) + 1);
    t.unref();
    this.delayTimers.set(atMs, t);
  }

  /** Ends every wait with [] (graceful shutdown). */
  close(): void {
    for (const [key, q] of this.queues) for (const w of [...q]) this.end(key, w);
    for (const t of this.delayTimers.values()) clearTimeout(t);
    this.delayTimers.clear();
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
  }

  private async serveAll(): Promise<void> {
    const through = this.wakes;
    const empty = this.picks.size > 0 ? await this.afterPicks(through) : null;
    for (const [key, q] of [...this.queues]) {
      if (empty?.has(key)) continue;
      for (;;) {
        const head = q[0];
        if (!head) break;
        if (head.signal?.aborted) {
          this.drop(key, head, []);
          continue;
        }
        let claims: ClaimResult[];
        head.claiming = true;
        try {
          claims = await this.tryClaim(head.ask);
        } catch {
          // A failing store must not strand the waiter; its own deadline or the next wake retries.
          claims = [];
        } finally {
          head.claiming = false;
        }
        if (claims.length === 0) {
          // Its deadline (or its client) went while the claim was out: it is answered now, empty.
          if (head.over) {
            this.drop(key, head, []);
            continue;
          }
          break;
        }
        // Leased to this waiter: it is answered even if it just disconnected; the caller hands the
        // leases back in that case (see the claim route).
        this.drop(key, head, claims);
      }
    }
  }

  /**
   * Waits until the claims with the first pick now out have had their try; answers the label sets
   * (queue keys) one of them showed to have nothing left as of wake-up `through` (see firstPick).
   */
  private async afterPicks(through: number): Promise<Set<string>> {
    const picks = [...this.picks];
    await Promise.all(picks.map((p) => p.ended));
    const empty = new Set<string>();
    for (const { tried } of picks) if (tried && !tried.filled && tried.wakeCount >= through) empty.add(JSON.stringify(tried.labels));
    return empty;
  }

  /**
   * A waiter's deadline passed, its client left, or the server is closing. Not while a claim for it is
   * in flight: that claim may grant leases, which must be answered (the claim route hands them back
   * when the client is gone) rather than left to expire unseen.
   */
  private end(key: string, w: Waiter): void {
    if (w.claiming) w.over = true;
    else this.drop(key, w, []);
  }

  private drop(key: string, w: Waiter, claims: ClaimResult[]): void {
    const q = this.queues.get(key);
    const i = q ? q.indexOf(w) : -1;
    if (i < 0) return;
    q!.splice(i, 1);
    if (q!.length === 0) this.queues.delete(key);
    clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
    if (this.size === 0 && this.sweep) {
      clearInterval(this.sweep);
      this.sweep = null;
    }
    w.resolve(claims);
  }

  private armSweep(): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => this.wake(), this.sweepEveryMs);
    this.sweep.unref();
  }
}
