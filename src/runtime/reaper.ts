import type { Logger } from 'pino';
import type { Engine } from '../engine/engine.js';

/**
 * Runs the engine's reaper every interval (REAP_INTERVAL_SECS). One pass at start settles leases that
 * expired while no process was running. A failing pass is logged and the next one still runs.
 */
export class Reaper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly engine: Engine,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    this.tick();
  }

  private tick(): void {
    this.running = this.engine
      .reap()
      .then(() => undefined)
      .catch((err: unknown) => this.log.error({ err }, 'reaper pass failed'))
      .finally(() => {
        this.running = null;
        if (!this.stopped) this.timer = setTimeout(() => this.tick(), this.intervalMs);
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
