/** Small helpers shared by the orchestrator and the load generators. */

/**
 * Wall-clock milliseconds with sub-millisecond resolution. The load generators are separate processes,
 * and latencies such as complete-to-next-claim join an event of one process with an event of another;
 * timeOrigin + now() is anchored to the system clock in each process, so the two are comparable
 * (to within the few microseconds the clock reads differ), where performance.now() alone is not.
 */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Nearest-rank percentile of an ascending array; null for no samples. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface LatencySummary {
  n: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  mean_ms: number | null;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50_ms: round(percentile(sorted, 0.5)),
    p99_ms: round(percentile(sorted, 0.99)),
    max_ms: round(sorted.length ? sorted[sorted.length - 1]! : null),
    mean_ms: round(sorted.length ? sum / sorted.length : null),
  };
}

/** Median of the values that exist; with an even count, the mean of the middle two. */
export function median(values: ReadonlyArray<number | null>): number | null {
  const v = values.filter((x): x is number => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** Three decimals are far below the noise of a shared machine; more would only bloat results.json. */
export function round(x: number | null, digits = 3): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Reads a positive integer from the environment; a malformed value stops the run instead of being ignored. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}="${raw}" is not a non-negative integer`);
  return n;
}
