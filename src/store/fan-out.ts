/**
 * Dynamic fan-out (README "Matrix, fan-out and artifacts"): what a `for_each` job becomes once it is
 * ready. Pure: both stores call it inside the transaction that made the job ready (the one that locked
 * its row), and write what it answers with their own SQL.
 */
import { escapeExpressions, hasExpression, substitute, valueText } from '../domain/expressions.js';
import { instanceId } from '../domain/matrix.js';
import type { Outputs } from '../domain/model.js';
import type { JobRecord, NewJob } from './records.js';

/** At most this many items in one fan-out. */
export const MAX_FAN_OUT_ITEMS = 1000;

export type FanOut =
  | { kind: 'instances'; jobs: NewJob[] }
  | { kind: 'empty' }
  | { kind: 'error'; error: string };

/**
 * The instances of `placeholder` (a ready `for_each` job, its upstream outputs assembled): one per item
 * of the JSON array its `for_each` output holds, each queued at `nowMs` with the placeholder's needs,
 * dependents, upstream outputs and needs results; `empty` for `[]`; `error` for anything else.
 */
export function expandFanOut(placeholder: JobRecord, nowMs: number): FanOut {
  const spec = placeholder.for_each!;
  const outputs: Outputs = placeholder.upstream_outputs[spec.job] ?? {};
  const where = `for_each: output "${spec.key}" of job "${spec.job}"`;
  const text = Object.hasOwn(outputs, spec.key) ? outputs[spec.key]! : undefined;
  if (text === undefined) return { kind: 'error', error: `${where} is not set` };
  let items: unknown;
  try {
    items = JSON.parse(text);
  } catch {
    return { kind: 'error', error: `${where} is not JSON: it must be a JSON array of strings or objects, got ${JSON.stringify(text.slice(0, 60))}` };
  }
  if (!Array.isArray(items)) return { kind: 'error', error: `${where} must be a JSON array of strings or objects, got ${typeof items === 'object' ? (items === null ? 'null' : 'an object') : typeof items}` };
  if (items.length > MAX_FAN_OUT_ITEMS) return { kind: 'error', error: `${where} has ${items.length} items; at most ${MAX_FAN_OUT_ITEMS} are allowed` };
  const bad = items.findIndex((i) => typeof i !== 'string' && (typeof i !== 'object' || i === null || Array.isArray(i)));
  if (bad >= 0) return { kind: 'error', error: `${where}: item ${bad} must be a string or an object, got ${JSON.stringify(items[bad]).slice(0, 60)}` };
  if (items.length === 0) return { kind: 'empty' };
  const jobs = items.map((item: unknown, index): NewJob => {
    const resolve = (ref: { kind: string; key?: string | null }) => {
      if (ref.kind !== 'item') return undefined;
      if (ref.key === null || ref.key === undefined) return item;
      return typeof item === 'object' && item !== null && Object.hasOwn(item, ref.key) ? (item as Record<string, unknown>)[ref.key] : '';
    };
    const { row_id: _r, run_number: _n, ...base } = placeholder;
    return {
      ...base,
      job_id: instanceId(placeholder.job_id, index),
      name: hasExpression(placeholder.name) ? substitute(placeholder.name, resolve) : `${placeholder.name} (${typeof item === 'string' ? item : index})`,
      env: {
        // An item is an upstream job's output: text to the lease's own pass over env (needs, secrets).
        ...Object.fromEntries(Object.entries(placeholder.env).map(([k, v]) => [k, substitute(v, resolve, { keepForLater: true })])),
        WEFT_ITEM: escapeExpressions(valueText(item)),
        WEFT_ITEM_INDEX: String(index),
      },
      pending_needs: 0,
      status: 'queued',
      attempt: 0,
      enqueued_at_ms: nowMs,
      ready_at_ms: nowMs,
      delayed_until_ms: 0,
      started_at_ms: null,
      finished_at_ms: null,
      deadline_ms: null,
      error: null,
      outputs: null,
      worker_id: null,
      lease_id: null,
      for_each: null,
      item,
      item_index: index,
    };
  });
  return { kind: 'instances', jobs };
}

/** A job below the placeholder, with the placeholder's id in its needs replaced by the instances'. */
export function rewireBelow(j: Pick<JobRecord, 'needs' | 'pending_needs'>, placeholderId: string, instanceIds: readonly string[]): { needs: string[]; pending_needs: number } {
  return {
    needs: j.needs.flatMap((n) => (n === placeholderId ? instanceIds : [n])),
    pending_needs: j.pending_needs + instanceIds.length - 1,
  };
}
