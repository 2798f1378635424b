/**
 * `on:` keys that start runs from outside (README "Triggers and notifications"): `webhook` (a signed
 * POST /api/hooks/{id}), `event` (POST /api/events/{name}) and `workflow_run` (a run of another
 * workflow ended). Read into `WorkflowTriggers`, every problem reported naming its field.
 */
import { SECRET_NAME_PATTERN } from '../domain/expressions.js';
import { RUN_END_TYPES, type RunEndType, type WebhookTrigger, type WorkflowRunTrigger, type WorkflowTriggers } from '../domain/model.js';
import { EVENT_NAME, MAX_TRIGGER_ENTRIES, parsePath } from '../domain/triggers.js';
import { type At, checkKeys, child, describe, isAbsent, isPlainObject, readString, readStringList, sortedUnique } from './values.js';

/** The keys of `on:` read here; `schedule` is read by schedule.ts, the rest are shown as the trigger only. */
export const TRIGGER_KEYS = ['webhook', 'event', 'workflow_run'] as const;

const WEBHOOK_KEYS = ['secret', 'filters', 'events'] as const;
const WORKFLOW_RUN_KEYS = ['workflows', 'types'] as const;
const SECRET_NAME = new RegExp(`^${SECRET_NAME_PATTERN}$`);
/** Workflow ids have the event names' alphabet (workflow.ts ID_PATTERN). */
const WORKFLOW_ID = EVENT_NAME;

/** What a bare word in `on:` needs to act (as for `schedule`). */
export const TRIGGER_NEEDS: Readonly<Record<(typeof TRIGGER_KEYS)[number], string>> = {
  webhook: "'webhook' needs the secret its deliveries are signed with: write on: { webhook: { secret: NAME } }",
  event: "'event' needs the names it listens for: write on: { event: [deployed] }",
  workflow_run: "'workflow_run' needs the workflows it follows: write on: { workflow_run: { workflows: [build] } }",
};

/** The triggers of an `on:` mapping; undefined when it has none, so the definition hashes as before. */
export function readTriggers(on: Record<string, unknown>, at: At): WorkflowTriggers | undefined {
  const out: WorkflowTriggers = {};
  if (Object.hasOwn(on, 'webhook')) {
    const w = readWebhook(on.webhook, child(at, 'webhook'));
    if (w) out.webhook = w;
  }
  if (Object.hasOwn(on, 'event')) {
    const names = readNames(on.event, child(at, 'event'), EVENT_NAME, 'event names');
    if (names.length > 0) out.events = names;
  }
  if (Object.hasOwn(on, 'workflow_run')) {
    const f = readWorkflowRun(on.workflow_run, child(at, 'workflow_run'));
    if (f) out.workflow_run = f;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function readWebhook(value: unknown, at: At): WebhookTrigger | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(null, at.field, `must be a mapping { secret, filters?, events? }, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, WEBHOOK_KEYS, (key, message) => at.issues.add(null, `${at.field}.${key}`, message), {
    secret_name: 'secret',
    filter: 'filters',
    event: 'events',
    types: 'events',
  });
  let secret: string | undefined;
  if (isAbsent(value.secret)) {
    at.issues.add(null, `${at.field}.secret`, 'is required: the name of the weft secret the deliveries are signed with (`weft secret set NAME`)');
  } else {
    secret = readString(value.secret, child(at, 'secret'), { nonEmpty: true });
    if (secret !== undefined && !SECRET_NAME.test(secret)) {
      at.issues.add(null, `${at.field}.secret`, `'${secret.slice(0, 140)}' is not a secret name: letters, digits and _, not starting with a digit, at most 128 (it names a secret, never holds its value)`);
      secret = undefined;
    }
  }
  const out: WebhookTrigger = { secret: secret ?? '' };
  if (!isAbsent(value.filters)) {
    const filters = readFilters(value.filters, child(at, 'filters'));
    if (filters) out.filters = filters;
  }
  if (!isAbsent(value.events)) {
    const events = readNames(value.events, child(at, 'events'), EVENT_NAME, 'event names');
    if (events.includes('ping')) at.issues.add(null, `${at.field}.events`, "'ping' never starts a run: GitHub sends it when a hook is created, and weft answers it without one");
    if (events.length > 0) out.events = events;
  }
  return secret === undefined ? undefined : out;
}

/** `filters: { "ref": "refs/heads/main", "repository.full_name": [o/a, o/b] }`: dot paths to a value or a list of values. */
function readFilters(value: unknown, at: At): Record<string, string[]> | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(null, at.field, `must be a mapping of dot path to value (e.g. { ref: refs/heads/main }), got ${describe(value)}`);
    return undefined;
  }
  const entries = Object.entries(value);
  if (entries.length === 0) at.issues.add(null, at.field, 'must name at least one path (or leave filters out)');
  if (entries.length > MAX_TRIGGER_ENTRIES) {
    at.issues.add(null, at.field, `at most ${MAX_TRIGGER_ENTRIES} paths, got ${entries.length}`);
    return undefined;
  }
  const out: [string, string[]][] = [];
  for (const [path, raw] of entries) {
    const where = `${at.field}.${path}`;
    if (parsePath(path) === null) {
      at.issues.add(null, where, `'${path.slice(0, 140)}' is not a dot path: keys of letters, digits, _ and -, joined by '.', with [N] for an item of a list (e.g. repository.full_name, commits[0].id)`);
      continue;
    }
    const list = Array.isArray(raw) ? raw : [raw];
    if (list.length === 0) at.issues.add(null, where, 'must list at least one value');
    const texts: string[] = [];
    for (const v of list) {
      if (typeof v === 'string' && !v.includes('\u0000')) texts.push(v);
      else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') texts.push(String(v));
      else at.issues.add(null, where, `must be a string, number or boolean (or a list of them), got ${describe(v)}`);
    }
    if (texts.length > 0) out.push([path, [...new Set(texts)]]);
  }
  // fromEntries defines own properties, so a path like `__proto__` cannot reach the prototype.
  return out.length > 0 ? Object.fromEntries(out) : undefined;
}

function readWorkflowRun(value: unknown, at: At): WorkflowRunTrigger | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(null, at.field, `must be a mapping { workflows, types? }, got ${describe(value)}`);
    return undefined;
  }
  checkKeys(value, WORKFLOW_RUN_KEYS, (key, message) => at.issues.add(null, `${at.field}.${key}`, message), { workflow: 'workflows', type: 'types', on: 'types' });
  if (isAbsent(value.workflows)) {
    at.issues.add(null, `${at.field}.workflows`, 'is required: the ids of the workflows whose runs this one follows');
    return undefined;
  }
  const workflows = readNames(value.workflows, child(at, 'workflows'), WORKFLOW_ID, 'workflow ids');
  let types: RunEndType[] = ['completed'];
  if (!isAbsent(value.types)) {
    const given = readStringList(value.types, child(at, 'types'));
    const bad = given.filter((t) => !(RUN_END_TYPES as readonly string[]).includes(t));
    for (const t of bad) {
      const why = t === 'requested' || t === 'in_progress' ? ': weft follows runs once they end' : '';
      at.issues.add(null, `${at.field}.types`, `'${t.slice(0, 60)}' is not one of ${RUN_END_TYPES.join(', ')}${why}`);
    }
    const ok = sortedUnique(given.filter((t) => !bad.includes(t))) as RunEndType[];
    if (ok.length > 0) types = ok.includes('completed') ? ['completed'] : ok;
  }
  return workflows.length > 0 ? { workflows, types } : undefined;
}

/** A name or a list of names, each matching `pattern`; sorted, unique. */
function readNames(value: unknown, at: At, pattern: RegExp, what: string): string[] {
  const names = readStringList(value, at);
  if (Array.isArray(value) && value.length === 0) at.issues.add(null, at.field, `must list at least one of the ${what}`);
  if (names.length > MAX_TRIGGER_ENTRIES) {
    at.issues.add(null, at.field, `at most ${MAX_TRIGGER_ENTRIES} ${what}, got ${names.length}`);
    return [];
  }
  const bad = names.filter((n) => !pattern.test(n));
  for (const n of bad) at.issues.add(null, at.field, `'${n.slice(0, 140)}' is not valid among ${what}: use 1 to 128 characters among A-Z a-z 0-9 _ . - (not only dots)`);
  return sortedUnique(names.filter((n) => pattern.test(n)));
}
