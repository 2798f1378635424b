/** The worker's clock, its retry backoff and the wake-ups its loops wait on. */
import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds: lease expiry and deadlines must not move with the wall clock. */
export const now = () => performance.now();

export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Capped exponential backoff with ±20 % jitter; `n` counts failures from 0. */
export function backoffMs(n: number, capMs: number, baseMs = 250): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(n, 30));
  return Math.min(capMs, raw * (0.8 + Math.random() * 0.4));
}

/**
 * A resettable wake-up: `wait()` resolves at the next `poke()` (or after `ms`). Plain callbacks, not
 * an AbortController: a worker pokes several times per job, and each abort without a reason builds a
 * DOMException with its stack.
 */
export class Wakeup {
  private waiting = new Set<() => void>();
  poke(): void {
    if (this.waiting.size === 0) return;
    const woken = this.waiting;
    this.waiting = new Set();
    for (const wake of woken) wake();
  }
  wait(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      this.waiting.add(wake);
      // Without `ms` it holds no timer, so it keeps nothing alive.
      if (ms !== undefined) timer = setTimeout(wake, Math.max(0, ms));
    });
  }
}
