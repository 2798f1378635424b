/**
 * Workflows calling workflows (README "Workflows calling workflows"): a job's `uses:` and `with:`, and
 * a workflow's `outputs:`. What a call cannot check alone (the called workflow's inputs, a cycle or a
 * chain too deep through other workflows) is checked when the definition is saved, against the
 * workflows saved then (src/engine/calls.ts, the store's save).
 */
import type { WorkflowOutput } from '../domain/model.js';
import { MAX_INPUT_VALUE_LENGTH } from '../domain/inputs.js';
import { INPUT_NAME } from './inputs.js';
import type { Issues } from './issues.js';
import { type At, type Plain, checkKeys, child, describe, isAbsent, isPlainObject, readString } from './values.js';

/** Keys a `uses:` job may have besides `uses` and `with`: the rest is the called workflow's business. */
export const CALL_JOB_KEYS = ['name', 'needs', 'if', 'uses', 'with', 'retries', 'backoff', 'strategy'] as const;

/** Why each other key of a job cannot go with `uses:`, for the message. */
const NOT_WITH_USES: Readonly<Record<string, string>> = {
  run: "the called workflow's jobs run the commands; move this command to a job of its own",
  steps: "the called workflow's jobs run the commands; move these steps to a job of its own",
  labels: "the called workflow's jobs say which workers they need; no worker runs this job",
  env: "pass values to the called workflow with 'with:' (they become its inputs)",
  timeout_secs: "give the called workflow's jobs their own timeout_secs",
  for_each: "a fan-out of calls is not supported; use strategy.matrix to call once per combination",
  artifacts: "the called workflow's jobs upload their own artifacts",
  download: "the called workflow's jobs download their own artifacts",
  approval: 'put the approval on a job of its own that this one needs',
  concurrency: "the called workflow's own concurrency applies to its runs",
  priority: "the called workflow's jobs are queued with their own priority",
};

/** A job's `uses:` and `with:`; undefined for a job that calls nothing. `with:` without `uses:` is refused. */
export function readCall(raw: Plain, label: string, issues: Issues): { uses: string; with?: Record<string, string> } | undefined {
  if (isAbsent(raw.uses)) {
    if (!isAbsent(raw.with)) issues.add(label, 'with', "is read only with 'uses:' (the inputs of the workflow a job calls); add 'uses: <workflow id>' or remove 'with'");
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    const why = NOT_WITH_USES[key];
    if (why !== undefined && !isAbsent(raw[key])) issues.add(label, key, `cannot be combined with 'uses': ${why}`);
  }
  // No claim starts a call, so nothing would hold its instances to max_parallel.
  if (isPlainObject(raw.strategy) && !isAbsent(raw.strategy.max_parallel)) {
    issues.add(label, 'strategy.max_parallel', "cannot be combined with 'uses': give the called workflow concurrency: { max_runs: N, when_full: queue } to run N of its runs at once");
  }
  const uses = readUses(raw.uses, { issues, job: label, field: 'uses' });
  const values = isAbsent(raw.with) ? undefined : readWith(raw.with, { issues, job: label, field: 'with' });
  if (uses === undefined) return undefined;
  return values !== undefined && Object.keys(values).length > 0 ? { uses, with: values } : { uses };
}

function readUses(value: unknown, at: At): string | undefined {
  const id = readString(value, at, { nonEmpty: true });
  if (id === undefined) return undefined;
  // Checked here rather than against ID_PATTERN by import, which would make a circle with workflow.ts.
  if (!/^(?!\.+$)[A-Za-z0-9_.-]{1,128}$/.test(id)) {
    const hint = /[/@]/.test(id) ? " (a workflow of this server by its id, the file name without extension: 'uses: ./x/build.yml' and 'owner/repo/…@ref' are GitHub's forms)" : '';
    at.issues.add(at.job, at.field, `must be a workflow id, got '${id}'${hint}`);
    return undefined;
  }
  return id;
}

/** `with:` values are text, as run inputs are: numbers and booleans are taken as their text. */
function readWith(value: unknown, at: At): Record<string, string> | undefined {
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping of input name to value, got ${describe(value)}`);
    return undefined;
  }
  const out: Array<[string, string]> = [];
  for (const [name, v] of Object.entries(value)) {
    const where = child(at, name);
    if (!INPUT_NAME.test(name)) {
      at.issues.add(at.job, where.field, `invalid input name '${name}' (1 to 128 of A-Z a-z 0-9 _ -, not starting with a digit or -)`);
      continue;
    }
    let text: string | undefined;
    if (typeof v === 'number' && Number.isFinite(v)) text = String(v);
    else if (typeof v === 'boolean') text = String(v);
    else text = readString(v, where);
    if (text === undefined) continue;
    if (text.length > MAX_INPUT_VALUE_LENGTH) {
      at.issues.add(at.job, where.field, `is ${text.length} characters long; at most ${MAX_INPUT_VALUE_LENGTH} are allowed`);
      continue;
    }
    out.push([name, text]);
  }
  // An input may be named `__proto__`: fromEntries defines own properties, never the prototype.
  return Object.fromEntries(out);
}

const OUTPUT_KEYS = ['value', 'description'] as const;
const MAX_OUTPUTS = 100;

/**
 * `outputs:` of a workflow: `name: ${{ jobs.<job>.outputs.<key> }}`, or GitHub's `name: { value,
 * description? }`. Undefined when absent, so a definition without it keeps its hash.
 */
export function readOutputs(value: unknown, at: At): Record<string, WorkflowOutput> | undefined {
  if (isAbsent(value)) return undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping of output name to '\${{ jobs.<job>.outputs.<key> }}' (or to {value, description?}), got ${describe(value)}`);
    return undefined;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_OUTPUTS) at.issues.add(at.job, at.field, `declares ${entries.length} outputs; at most ${MAX_OUTPUTS} are allowed`);
  const out: Array<[string, WorkflowOutput]> = [];
  for (const [name, raw] of entries) {
    const where = child(at, name);
    if (!INPUT_NAME.test(name)) {
      at.issues.add(at.job, where.field, `invalid output name '${name}' (1 to 128 of A-Z a-z 0-9 _ -, not starting with a digit or -)`);
      continue;
    }
    if (isPlainObject(raw)) {
      checkKeys(raw, OUTPUT_KEYS, (key, message) => at.issues.add(at.job, child(where, key).field, message));
      const v = readString(raw.value, child(where, 'value'));
      const d = isAbsent(raw.description) ? null : (readString(raw.description, child(where, 'description')) ?? null);
      if (v !== undefined) out.push([name, { value: v, description: d }]);
      continue;
    }
    const v = readString(raw, where);
    if (v !== undefined) out.push([name, { value: v, description: null }]);
  }
  return Object.fromEntries(out);
}

/**
 * `on: { workflow_call: … }` is GitHub's mark of a reusable workflow. weft needs no mark (any workflow
 * may be called) and reads a called workflow's inputs and outputs from the top-level `inputs:` and
 * `outputs:`, so declarations under it would be ignored: they are refused instead, saying where they go.
 */
export function checkWorkflowCall(value: unknown, at: At): void {
  if (isAbsent(value)) return;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be empty or a mapping, got ${describe(value)}`);
    return;
  }
  for (const key of Object.keys(value)) {
    const where = child(at, key).field;
    if (key === 'inputs' || key === 'outputs') {
      at.issues.add(at.job, where, `declare the ${key} of a called workflow with the top-level '${key}:' key (README "Workflows calling workflows")`);
    } else if (key === 'secrets') {
      at.issues.add(at.job, where, "a called workflow reads its secrets itself (global ones, or set for its own id); remove 'secrets'");
    } else {
      at.issues.add(at.job, where, 'unknown key; on.workflow_call takes none (any workflow may be called)');
    }
  }
}
