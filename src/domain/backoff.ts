import type { Backoff, WireBackoff } from './model.js';

/**
 * Delay before retry number `n` (n = the attempt that is about to run, so the first retry is n = 1).
 * README "How a run works": None -> 0; Fixed -> delay_secs; Exponential -> min(base_secs * 2^n, max_secs).
 */
export function retryDelayMs(backoff: Backoff, n: number): number {
  switch (backoff.kind) {
    case 'none':
      return 0;
    case 'fixed':
      return backoff.delay_secs * 1000;
    case 'exponential': {
      // 2^n overflows to Infinity for large n; Math.min keeps the cap exact either way.
      const secs = Math.min(backoff.base_secs * 2 ** n, backoff.max_secs);
      return secs * 1000;
    }
  }
}

/** serde's external tagging, which Rust workers deserialize without custom code. */
export function backoffToWire(backoff: Backoff): WireBackoff {
  switch (backoff.kind) {
    case 'none':
      return 'None';
    case 'fixed':
      return { Fixed: { delay_secs: backoff.delay_secs } };
    case 'exponential':
      return { Exponential: { base_secs: backoff.base_secs, max_secs: backoff.max_secs } };
  }
}

export const NO_BACKOFF: Backoff = { kind: 'none' };
