import type { RunState } from './model.js';

/** How many jobs of a run are still moving, and how many ended badly: what the stores count. */
export interface RunCounts {
  /** Jobs not yet in a terminal state. */
  unfinished: number;
  /** Jobs that ended `failed`. */
  failed: number;
  /** Jobs that ended `cancelled`, or that a cancel spared (README "How a run works"). */
  cancelled: number;
}

/**
 * A run is over when none of its jobs can move any more. `cancelled` wins over `failed` because a
 * cancel is the user's last word. Skipped jobs count for nothing: a condition may skip a job in a run
 * where nothing failed (README "Workflow definitions", `if:`), and one below a failure has it counted.
 */
export function runStateFromCounts(c: RunCounts): RunState {
  if (c.unfinished > 0) return 'running';
  if (c.cancelled > 0) return 'cancelled';
  return c.failed > 0 ? 'failed' : 'success';
}
