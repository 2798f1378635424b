/**
 * Priorities (README "Priorities"): a claim takes the highest-priority job that fits the worker
 * first, oldest first within one priority. A job's priority is its run's when the run was started with
 * one (`POST …/run {"priority": n}`), else its own `priority:`, else its workflow's, else 0.
 */
export const MIN_PRIORITY = -100;
export const MAX_PRIORITY = 100;
export const DEFAULT_PRIORITY = 0;

/** Whether `value` can be a priority: an integer from MIN_PRIORITY to MAX_PRIORITY. */
export function isPriority(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= MIN_PRIORITY && value <= MAX_PRIORITY;
}

/** The priority a job of a run is queued with. */
export function jobPriority(run: number | null | undefined, job: number | undefined, workflow: number | undefined): number {
  return run ?? job ?? workflow ?? DEFAULT_PRIORITY;
}
