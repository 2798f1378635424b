import { Cron } from 'croner';
import type { Schedule } from './model.js';

/**
 * Fire times of `on.schedule` (docs/api.md "Schedules"), computed with croner. Times are epoch
 * milliseconds at whole minutes; a cron without a time zone is read in UTC, so every process computes
 * the same times whatever its own zone.
 */

/** The nicknames accepted besides five fields: each is a five-field expression under another name. */
export const CRON_NICKNAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] as const;

export const MAX_SCHEDULES = 10;

/**
 * A fire time no older than this when a scheduler finds it is on time; an older one was missed
 * (no scheduler ran then) and `catch_up` decides what happens to it.
 */
export const DEFAULT_SCHEDULE_GRACE_MS = 60_000;

function cronOf(s: Pick<Schedule, 'cron' | 'timezone'>): Cron {
  return new Cron(s.cron, { mode: '5-part', timezone: s.timezone ?? 'UTC' });
}

/** Why the expression cannot be a schedule, or null when it can. */
export function cronProblem(cron: string, timezone: string | null): string | null {
  const text = cron.trim();
  if (text.startsWith('@')) {
    if (!(CRON_NICKNAMES as readonly string[]).includes(text.toLowerCase())) {
      return `unknown nickname '${text}' (use five fields, or one of ${CRON_NICKNAMES.join(', ')})`;
    }
  } else {
    const fields = text.split(/\s+/).length;
    if (fields !== 5) {
      return `must have five fields (minute hour day-of-month month day-of-week), got ${fields}${fields === 6 ? ' (seconds are not supported)' : ''}`;
    }
  }
  let c: Cron;
  try {
    c = cronOf({ cron: text, timezone });
  } catch (err) {
    return `invalid cron expression '${text}': ${(err as Error).message.replace(/^CronPattern: /, '')}`;
  }
  if (c.nextRun(new Date()) === null) return `cron expression '${text}' never matches a date`;
  return null;
}

/** Why `tz` is not an IANA time zone name, or null when it is. */
export function timezoneProblem(tz: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `unknown time zone '${tz}' (use an IANA name such as Europe/Paris or UTC)`;
  }
}

/** The first fire time of any of the schedules strictly after `afterMs`; null when none fires again. */
export function nextFireAfter(schedules: readonly Schedule[] | undefined, afterMs: number): number | null {
  let best: number | null = null;
  for (const s of schedules ?? []) {
    const next = cronOf(s).nextRun(new Date(afterMs))?.getTime() ?? null;
    if (next !== null && (best === null || next < best)) best = next;
  }
  return best;
}

/** What a scheduler pass does for a workflow whose stored next fire time `dueMs` is at or before `nowMs`. */
export interface FirePlan {
  /** The scheduled time the run stands for (the latest due one that fires); null: start nothing. */
  fire_at_ms: number | null;
  /** Due times dropped by `catch_up: none` (the latest of them), null when none were. */
  dropped_at_ms: number | null;
  /** next_fire_at_ms afterwards: the first fire time after `nowMs`. */
  next_fire_at_ms: number | null;
}

/**
 * Every fire time in [dueMs, nowMs] is unhandled (dueMs is the earliest unhandled one of all the
 * schedules). Each schedule contributes its latest such time: on time (within `graceMs`) it fires;
 * missed, it fires with catch_up `latest` and is dropped with `none`. One run stands for them all.
 */
export function planFires(schedules: readonly Schedule[] | undefined, dueMs: number, nowMs: number, graceMs: number): FirePlan {
  let fire: number | null = null;
  let dropped: number | null = null;
  for (const s of schedules ?? []) {
    const latest = cronOf(s).previousRuns(1, new Date(nowMs + 1))[0]?.getTime();
    if (latest === undefined || latest < dueMs) continue;
    if (nowMs - latest <= graceMs || s.catch_up === 'latest') fire = Math.max(fire ?? latest, latest);
    else dropped = Math.max(dropped ?? latest, latest);
  }
  return { fire_at_ms: fire, dropped_at_ms: dropped, next_fire_at_ms: nextFireAfter(schedules, nowMs) };
}
