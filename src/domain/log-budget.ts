/**
 * MAX_LOG_BYTES_PER_ATTEMPT (README "Limits"): each attempt of a job may log this many bytes (UTF-8
 * of the chunks' data). The push that would pass it stores, in place of the first chunk that does not
 * fit, a marker line under that chunk's sequence, and everything the attempt sends afterwards is
 * dropped; the push answers `truncated: true` so the worker stops sending. Both stores apply these
 * rules, keeping the attempt's count on its job row.
 */

export const DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT = 64 * 1024 * 1024;

/** The line stored where an attempt's log was cut. */
export function logTruncationMarker(maxBytes: number): string {
  return `[weft] log truncated: this attempt logged ${maxBytes} bytes (MAX_LOG_BYTES_PER_ATTEMPT); the rest of its output was dropped\n`;
}

/** What the store holds of an attempt's log budget (its job row's log_* columns). */
export interface LogBudget {
  /** The attempt the count is of; null before its job's first push. */
  attempt: number | null;
  bytes: number;
  truncated: boolean;
}

/**
 * How a push of chunks of `sizes` bytes fits the budget of attempt `attempt`: how many of its leading
 * chunks are kept, whether the next one is replaced by the marker (`cut`), and whether the attempt's
 * log was closed before (then nothing is kept). A push for an attempt older than the counted one
 * (which no live or cancelled lease makes) keeps nothing either.
 */
export function fitLogPush(budget: LogBudget, attempt: number, sizes: readonly number[], maxBytes: number): { kept: number; cut: boolean; closed: boolean; used: number } {
  if (budget.attempt !== null && (budget.attempt > attempt || (budget.attempt === attempt && budget.truncated))) {
    return { kept: 0, cut: false, closed: true, used: budget.bytes };
  }
  const used = budget.attempt === attempt ? budget.bytes : 0;
  let total = used;
  for (let i = 0; i < sizes.length; i++) {
    total += sizes[i]!;
    if (total > maxBytes) return { kept: i, cut: true, closed: false, used };
  }
  return { kept: sizes.length, cut: false, closed: false, used };
}
