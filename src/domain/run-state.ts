import type { JobState, RunState } from './types.js';
import { isTerminal } from './types.js';

/**
 * A run is over when none of its jobs can move any more. `cancelled` wins over `failed` because a
 * cancel is the user's last word; `skipped` jobs only exist below a failure, so they imply `failed`.
 */
export function deriveRunState(states: Iterable<JobState>): RunState {
  let failed = false;
  let cancelled = false;
  for (const s of states) {
    if (!isTerminal(s)) return 'running';
    if (s === 'cancelled') cancelled = true;
    else if (s === 'failed' || s === 'skipped') failed = true;
  }
  if (cancelled) return 'cancelled';
  return failed ? 'failed' : 'success';
}
