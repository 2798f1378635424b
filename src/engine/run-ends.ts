import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import { RUN_END_CONSUMERS, type RunEnd, type RunEndConsumer } from '../store/run-end-types.js';
import { SingleFlight } from '../util/single-flight.js';

/** How many entries one read takes; a read that fills it is followed by another. */
const ENDS_PER_READ = 100;

/**
 * After a change, how long before the outbox is looked at: changes come by the thousand a second under
 * load, while a run ends far more rarely, so looks are spaced by this much at most (docs/architecture.md
 * "Run ends").
 */
const DEFAULT_SPACING_MS = 200;

export type RunEndHandler = (ends: readonly RunEnd[]) => Promise<void>;

/**
 * The engine's side of the run-end outbox (docs/architecture.md "Run ends"): each consumer's pending
 * entries are handed to its handler, then finished. Looked at soon after changes (this server's or a
 * peer's) and on every reaper pass, so a server that crashed between acting and finishing, or a run
 * another server ended, is handled by whoever looks next. A handler may therefore see an entry more
 * than once, on one server or on two at once: each handler's effect is made once by the store (a
 * unique key or a guarded update). A handler that throws leaves its entries for the next look.
 * Consumers with no handler on this build are finished at once, so their entries do not pile up.
 */
export class RunEnds {
  private readonly handlers = new Map<RunEndConsumer, RunEndHandler>();
  private readonly passes = new SingleFlight(() => this.round(), () => !this.stopped);
  private timer: NodeJS.Timeout | null = null;
  private lastLookMs = 0;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly spacingMs = DEFAULT_SPACING_MS,
  ) {}

  /** Registers what `consumer` does with ended runs; one handler per consumer. */
  handle(consumer: RunEndConsumer, handler: RunEndHandler): void {
    if (this.handlers.has(consumer)) throw new Error(`run-end consumer "${consumer}" already has a handler`);
    this.handlers.set(consumer, handler);
  }

  /** Durable changes happened: a run may have ended. Looks soon, at most once per spacing. */
  afterChanges(): void {
    if (this.timer || this.stopped) return;
    const wait = Math.max(0, this.lastLookMs + this.spacingMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.pass().catch(() => undefined);
    }, wait);
    this.timer.unref();
  }

  /**
   * Hands every pending entry to its consumer; resolves once the entries pending when it was called
   * are handled (or left after a handler's error). One pass runs at a time; a call meanwhile makes it
   * run once more.
   */
  pass(): Promise<void> {
    return this.passes.run();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async round(): Promise<void> {
    this.lastLookMs = Date.now();
    for (const consumer of RUN_END_CONSUMERS) await this.drain(consumer);
  }

  private async drain(consumer: RunEndConsumer): Promise<void> {
    const handler = this.handlers.get(consumer);
    for (;;) {
      const ends = await this.store.pendingRunEnds(consumer, ENDS_PER_READ);
      if (ends.length === 0) return;
      if (handler) {
        try {
          await handler(ends);
        } catch (err) {
          // Left pending: the next look (at the latest the reaper's pass) hands them over again.
          if (!(err instanceof StoreUnavailableError)) this.log.error({ err, consumer, runs: ends.length }, 'acting on ended runs failed; retried on the next pass');
          return;
        }
      }
      await this.store.finishRunEnds(consumer, ends.map((e) => e.seq));
      if (ends.length < ENDS_PER_READ) return;
    }
  }
}
