/**
 * Runs started from outside (README "Triggers and notifications"): webhooks, named events and runs that
 * follow runs. The pure rules: names, dot paths into a payload, filters, which run ends a follower
 * hears, the chain limit, the rows of the listener index, the delivery keys that make a start happen once.
 */
import type { RunEndType, RunState, WorkflowDefinition, WorkflowTriggers } from './model.js';

/** Event names (`on.event`, POST /api/events/{name}, `X-GitHub-Event`): an id's alphabet, not only dots. */
export const EVENT_NAME = /^(?!\.+$)[A-Za-z0-9_.-]{1,128}$/;

/**
 * A delivery id (`X-GitHub-Delivery`, `X-Weft-Delivery`, `?delivery_id=`): printable ASCII without
 * spaces, at most 200 characters (GitHub's are GUIDs).
 */
export const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

/** The largest payload a run keeps as its event (README "Limits"): a webhook body, an event body. */
export const MAX_EVENT_BYTES = 1024 * 1024;

/**
 * GitHub's limit on chains of `workflow_run`: a run that started nothing by following (depth 0) may
 * start a follower (depth 1), and so on up to depth 3; a run at depth 3 starts no further follower.
 */
export const MAX_CHAIN_DEPTH = 3;

/** Most names in `on.event`, workflows in `on.workflow_run.workflows`, entries of `filters` or `events`. */
export const MAX_TRIGGER_ENTRIES = 20;

/** Every job of a run with an event gets its name here, and `weft worker` the payload's file in EVENT_PATH_ENV. */
export const EVENT_NAME_ENV = 'WEFT_EVENT_NAME';
export const EVENT_PATH_ENV = 'WEFT_EVENT_PATH';

/** The event a run was started with: its name (`${{ event_name }}`) and its payload (`${{ event.* }}`). */
export interface RunEvent {
  name: string;
  payload: unknown;
}

/** A key of the listener index (store: workflow_triggers): who hears a named event, who follows a workflow. */
export type TriggerKind = 'event' | 'workflow_run';
export interface TriggerRow {
  kind: TriggerKind;
  key: string;
}

/** The listener-index rows of a definition: one per event name and one per followed workflow. */
export function triggerRows(def: Pick<WorkflowDefinition, 'triggers'>): TriggerRow[] {
  const t: WorkflowTriggers = def.triggers ?? {};
  return [
    ...(t.events ?? []).map((key): TriggerRow => ({ kind: 'event', key })),
    ...(t.workflow_run?.workflows ?? []).map((key): TriggerRow => ({ kind: 'workflow_run', key })),
  ];
}

/** A dot path: `a.b`, `commits[0].id`, `commits.0.id`; null when it is not one. */
export type Path = Array<string | number>;
const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** A dot path as expressions and filters write it (used inside the expression syntax's own pattern too). */
export const PATH_SOURCE = '[A-Za-z0-9_-]+(?:\\.[A-Za-z0-9_-]+|\\[\\d+\\])*';

export function parsePath(text: string): Path | null {
  if (!new RegExp(`^${PATH_SOURCE}$`).test(text)) return null;
  const out: Path = [];
  for (const part of text.split('.')) {
    const m = /^([^[]+)((?:\[\d+\])*)$/.exec(part);
    if (!m || !SEGMENT.test(m[1]!)) return null;
    out.push(m[1]!);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}

export function pathText(path: Path): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/**
 * The value at `path` in a JSON payload, or undefined: own keys of objects only (never `__proto__` or
 * `constructor` of the prototype), arrays by index (`[0]`, or a segment of digits).
 */
export function valueAt(payload: unknown, path: Path): unknown {
  let v: unknown = payload;
  for (const seg of path) {
    if (Array.isArray(v)) {
      const i = typeof seg === 'number' ? seg : /^\d+$/.test(seg) ? Number(seg) : NaN;
      if (!Number.isInteger(i) || i < 0 || i >= v.length) return undefined;
      v = v[i];
    } else if (typeof v === 'object' && v !== null && typeof seg === 'string' && Object.hasOwn(v, seg)) {
      v = (v as Record<string, unknown>)[seg];
    } else {
      return undefined;
    }
  }
  return v;
}

/** A payload value as a filter compares it: a string as it is, other values as JSON, nothing as ''. */
function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

/** Why `payload` does not pass `filters` (the first path that differs), or null when it passes. */
export function filterRefusal(filters: Readonly<Record<string, readonly string[]>> | undefined, payload: unknown): string | null {
  for (const [path, allowed] of Object.entries(filters ?? {})) {
    const parsed = parsePath(path);
    const actual = parsed === null ? undefined : valueAt(payload, parsed);
    if (actual === undefined || !allowed.includes(asText(actual))) {
      const shown = actual === undefined ? 'nothing' : JSON.stringify(asText(actual).slice(0, 200));
      return `filters.${path}: the delivery has ${shown} there, not ${allowed.map((a) => JSON.stringify(a)).join(' or ')}`;
    }
  }
  return null;
}

/** The word `on.workflow_run.types` uses for how a run ended, as GitHub's conclusion: success, failure, cancelled. */
export function conclusionOf(state: Extract<RunState, 'success' | 'failed' | 'cancelled'>): Exclude<RunEndType, 'completed'> {
  return state === 'failed' ? 'failure' : state;
}

/** Whether a follower listening for `types` hears a run that ended `state`. */
export function followsEnd(types: readonly RunEndType[], state: Extract<RunState, 'success' | 'failed' | 'cancelled'>): boolean {
  return types.includes('completed') || types.includes(conclusionOf(state));
}

/**
 * Delivery keys (store: run_deliveries), one namespace per way a run is started, so that of several
 * servers (or one server seeing a delivery twice) one start wins and the others find its run.
 */
export const deliveryKey = {
  webhook: (id: string) => `webhook/${id}`,
  event: (name: string, id: string) => `event/${name}/${id}`,
  workflowRun: (workflowId: string, runNumber: number) => `workflow_run/${workflowId}/${runNumber}`,
};

/** How deep a payload's arrays and objects may nest (README "Limits"), as for any request body. */
export const MAX_EVENT_DEPTH = 64;

/**
 * A payload made safe to keep and to fill into a run: each string value with NUL and lone UTF-16
 * surrogates replaced by U+FFFD (neither store can keep them in a job's name or a group, and no process
 * can take a NUL in its environment), as a job's output is. Changed in place, iteratively, so any depth
 * is safe to ask about; a problem when it nests deeper than MAX_EVENT_DEPTH.
 */
export function cleanPayload(value: unknown): { ok: true; value: unknown } | { ok: false; problem: string } {
  if (typeof value === 'string') return { ok: true, value: cleanText(value) };
  const stack: Array<[Record<string, unknown> | unknown[], number]> = [];
  if (typeof value === 'object' && value !== null) stack.push([value as Record<string, unknown>, 1]);
  while (stack.length > 0) {
    const [container, depth] = stack.pop()!;
    if (depth > MAX_EVENT_DEPTH) return { ok: false, problem: `the payload nests arrays and objects deeper than ${MAX_EVENT_DEPTH} levels` };
    const keys: Array<string | number> = Array.isArray(container) ? container.map((_, i) => i) : Object.keys(container);
    for (const k of keys) {
      const v = (container as Record<string | number, unknown>)[k];
      if (typeof v === 'string') {
        const clean = cleanText(v);
        if (clean !== v) (container as Record<string | number, unknown>)[k] = clean;
      } else if (typeof v === 'object' && v !== null) {
        stack.push([v as Record<string, unknown>, depth + 1]);
      }
    }
  }
  return { ok: true, value };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function cleanText(s: string): string {
  const wellFormed = /[\uD800-\uDFFF]/.test(s) ? s.replace(LONE_SURROGATE, '\ufffd') : s;
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\ufffd') : wellFormed;
}
