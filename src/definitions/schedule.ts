/**
 * `on:` of the contract form: display text for the `trigger`, and the schedules weft acts on
 * (README "Workflow definitions"). A string or a list stays free text, as it always was; a mapping's
 * keys are events, and only the known ones are accepted.
 */
import { cronProblem, MAX_SCHEDULES, timezoneProblem } from '../domain/schedule.js';
import type { Schedule, WorkflowTriggers } from '../domain/model.js';
import type { Issues } from './issues.js';
import { readTriggers, TRIGGER_KEYS, TRIGGER_NEEDS } from './triggers.js';
import { type At, checkDepth, checkKeys, child, describe, isAbsent, isPlainObject, readString } from './values.js';
import { checkWorkflowCall } from './calls.js';

/**
 * The events `on:` may name as keys; `schedule` and the keys of triggers.ts start runs, the others are
 * shown as the trigger (`workflow_call`: README "Workflows calling workflows").
 */
export const ON_KEYS = ['push', 'pull_request', 'workflow_dispatch', 'schedule', 'workflow_call', ...TRIGGER_KEYS] as const;
const SCHEDULE_KEYS = ['cron', 'timezone', 'catch_up'] as const;
const CATCH_UP = ['latest', 'none'] as const;

export interface ReadOn {
  trigger: string | null;
  schedules: Schedule[];
  /** Webhook, events and runs followed (triggers.ts); absent: none. */
  triggers?: WorkflowTriggers;
}

export function readOn(value: unknown, issues: Issues): ReadOn {
  const none: ReadOn = { trigger: null, schedules: [] };
  if (isAbsent(value)) return none;
  const at: At = { issues, job: null, field: 'on' };
  if (typeof value === 'string') {
    if (value.trim() === 'schedule') issues.add(null, 'on', scheduleNeedsTimes);
    if (Object.hasOwn(TRIGGER_NEEDS, value.trim())) issues.add(null, 'on', TRIGGER_NEEDS[value.trim() as keyof typeof TRIGGER_NEEDS]);
    return { trigger: value.trim() === '' ? null : readString(value, at) ?? null, schedules: [] };
  }
  if (typeof value !== 'number' && typeof value !== 'boolean' && typeof value !== 'object') {
    issues.add(null, 'on', `must be a string, a list or a mapping, got ${describe(value)}`);
    return none;
  }
  if (!checkDepth(value, at)) return none;
  let schedules: Schedule[] = [];
  let triggers: WorkflowTriggers | undefined;
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      if (item === 'schedule') issues.add(null, `on[${i}]`, scheduleNeedsTimes);
      if (typeof item === 'string' && Object.hasOwn(TRIGGER_NEEDS, item)) issues.add(null, `on[${i}]`, TRIGGER_NEEDS[item as keyof typeof TRIGGER_NEEDS]);
    });
  } else if (isPlainObject(value)) {
    checkKeys(value, ON_KEYS, (key, message) => issues.add(null, `on.${key}`, message), {
      cron: 'schedule',
      schedules: 'schedule',
      hook: 'webhook',
      webhooks: 'webhook',
      events: 'event',
      repository_dispatch: 'event',
    });
    if (Object.hasOwn(value, 'schedule')) schedules = readSchedules(value.schedule, child(at, 'schedule'));
    triggers = readTriggers(value, at);
    // README "Workflows calling workflows": GitHub's mark of a reusable workflow, shown as the trigger.
    if (Object.hasOwn(value, 'workflow_call')) checkWorkflowCall(value.workflow_call, child(at, 'workflow_call'));
  }
  const text = renderCompact(value, true);
  const extra = triggers ? { triggers } : {};
  if (text.includes('\u0000')) return { trigger: readString(text, at) ?? null, schedules, ...extra };
  return { trigger: text === '' ? null : text, schedules, ...extra };
}

const scheduleNeedsTimes = "'schedule' needs its times: write on: { schedule: [{ cron: \"0 2 * * *\" }] }";

function readSchedules(value: unknown, at: At): Schedule[] {
  if (!Array.isArray(value)) {
    at.issues.add(null, at.field, `must be a list of { cron, timezone?, catch_up? }, got ${describe(value)}`);
    return [];
  }
  if (value.length === 0) at.issues.add(null, at.field, 'must list at least one { cron: … }');
  if (value.length > MAX_SCHEDULES) {
    at.issues.add(null, at.field, `at most ${MAX_SCHEDULES} schedules per workflow, got ${value.length}`);
    return [];
  }
  const out: Schedule[] = [];
  value.forEach((item, i) => {
    const s = readSchedule(item, child(at, i));
    if (s) out.push(s);
  });
  return out;
}

function readSchedule(value: unknown, at: At): Schedule | null {
  if (!isPlainObject(value)) {
    at.issues.add(null, at.field, `must be a mapping { cron, timezone?, catch_up? }, got ${describe(value)}`);
    return null;
  }
  const before = at.issues.list.length;
  checkKeys(value, SCHEDULE_KEYS, (key, message) => at.issues.add(null, `${at.field}.${key}`, message), {
    tz: 'timezone',
    time_zone: 'timezone',
    catchup: 'catch_up',
    schedule: 'cron',
  });
  let timezone: string | null = null;
  if (!isAbsent(value.timezone)) {
    const tz = readString(value.timezone, child(at, 'timezone'), { nonEmpty: true });
    const problem = tz === undefined ? null : timezoneProblem(tz);
    if (problem !== null) at.issues.add(null, `${at.field}.timezone`, problem);
    if (tz !== undefined && problem === null) timezone = tz;
  }
  let cron: string | undefined;
  if (isAbsent(value.cron)) {
    at.issues.add(null, `${at.field}.cron`, 'is required: five fields, e.g. "0 2 * * *"');
  } else {
    cron = readString(value.cron, child(at, 'cron'), { nonEmpty: true })?.trim();
    const problem = cron === undefined ? null : cronProblem(cron, timezone);
    if (problem !== null) {
      at.issues.add(null, `${at.field}.cron`, problem);
      cron = undefined;
    }
  }
  let catchUp: Schedule['catch_up'] = 'latest';
  if (!isAbsent(value.catch_up)) {
    if (typeof value.catch_up === 'string' && (CATCH_UP as readonly string[]).includes(value.catch_up)) {
      catchUp = value.catch_up as Schedule['catch_up'];
    } else {
      at.issues.add(null, `${at.field}.catch_up`, `must be one of ${CATCH_UP.join(', ')}, got ${describe(value.catch_up)}`);
    }
  }
  if (cron === undefined || at.issues.list.length > before) return null;
  return { cron, timezone, catch_up: catchUp };
}

function renderCompact(value: unknown, top: boolean): string {
  if (Array.isArray(value)) {
    const inner = value.map((v) => renderCompact(v, false)).join(', ');
    return top ? inner : `[${inner}]`;
  }
  if (isPlainObject(value)) {
    const inner = Object.entries(value)
      .map(([k, v]) => (v === null || (isPlainObject(v) && Object.keys(v).length === 0) ? k : `${k}: ${renderCompact(v, false)}`))
      .join(', ');
    return top ? inner : `{${inner}}`;
  }
  return String(value);
}
