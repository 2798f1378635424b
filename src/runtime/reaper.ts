import type { Logger } from 'pino';
import type { Housekeeping } from '../engine/housekeeping.js';
import { hasRetention, type RetentionPolicy } from '../engine/retention.js';

/**
 * Runs the engine's housekeeping passes (src/engine/housekeeping.ts) every interval
 * (REAP_INTERVAL_SECS). One pass at start settles leases that expired while no process was running. A failing pass is logged and the next one still runs. With a
 * retention policy (RETAIN_RUNS, RETAIN_DAYS), each pass then deletes a bounded share of the finished
 * runs that are due (README "Retention"). Each pass also starts the scheduled runs whose time has come
 * (docs/api.md "Schedules"), so the one at start is the catch-up for times missed meanwhile, and
 * deletes the workers unseen for WORKER_RETAIN_SECS that hold no lease. With ARTIFACTS_DIR, a pass
 * also sweeps for the artifact files no row names any more (at most once a minute).
 */
export class Reaper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly passes: Housekeeping,
    private readonly intervalMs: number,
    private readonly log: Logger,
    private readonly retention: RetentionPolicy | null = null,
  ) {}

  start(): void {
    this.stopped = false;
    this.tick();
  }

  private tick(): void {
    const retention = this.retention && hasRetention(this.retention) ? this.retention : null;
    this.running = this.passes
      .reap()
      .then(() => this.passes.pruneWorkers())
      .then(() => this.passes.fireSchedules())
      .then(() => (retention ? this.passes.applyRetention(retention) : null))
      .then(() => this.passes.collectBlobs())
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
