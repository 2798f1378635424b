/**
 * `inputs:` of a workflow (README "Workflow definitions"): the values a run is started with. Each
 * reaches every job of the run as `WEFT_INPUT_<NAME>`, so names must map to distinct variable names.
 */
import type { InputSpec } from '../domain/model.js';
import { inputEnvName, MAX_INPUT_VALUE_LENGTH, MAX_INPUTS } from '../domain/inputs.js';
import { checkKeys, describe, isAbsent, isPlainObject, readString, type At } from './values.js';

const INPUT_KEYS = ['default', 'required', 'description'] as const;
export const INPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

/** Undefined when the document declares no inputs, so the hash of a definition without them is unchanged. */
export function readInputs(value: unknown, at: At): Record<string, InputSpec> | undefined {
  if (isAbsent(value)) return undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be a mapping of input name to {default?, required?, description?}, got ${describe(value)}`);
    return undefined;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_INPUTS) at.issues.add(at.job, at.field, `declares ${entries.length} inputs; at most ${MAX_INPUTS} are allowed`);
  const out: Array<[string, InputSpec]> = [];
  const byEnvName = new Map<string, string>();
  for (const [name, raw] of entries) {
    const field = `${at.field}.${name}`;
    if (!INPUT_NAME.test(name)) {
      at.issues.add(at.job, field, `invalid input name '${name}' (1 to 128 of A-Z a-z 0-9 _ -, not starting with a digit or -)`);
      continue;
    }
    const envName = inputEnvName(name);
    const clash = byEnvName.get(envName);
    if (clash !== undefined) {
      at.issues.add(at.job, field, `input '${name}' and input '${clash}' would both be ${envName}; rename one`);
      continue;
    }
    byEnvName.set(envName, name);
    // `name:` alone (YAML null) declares an optional input with no default.
    const spec = isAbsent(raw) ? {} : raw;
    if (!isPlainObject(spec)) {
      at.issues.add(at.job, field, `must be a mapping {default?, required?, description?}, got ${describe(raw)}`);
      continue;
    }
    checkKeys(spec, INPUT_KEYS, (key, message) => at.issues.add(at.job, `${field}.${key}`, message), { type: 'description' });
    const input: InputSpec = { default: null, required: false, description: null };
    if (!isAbsent(spec.default)) {
      const d = readDefault(spec.default, { ...at, field: `${field}.default` });
      if (d !== undefined) input.default = d;
    }
    if (!isAbsent(spec.required)) {
      if (typeof spec.required !== 'boolean') at.issues.add(at.job, `${field}.required`, `must be true or false, got ${describe(spec.required)}`);
      else input.required = spec.required;
    }
    if (!isAbsent(spec.description)) {
      const d = readString(spec.description, { ...at, field: `${field}.description` });
      if (d !== undefined) input.description = d;
    }
    if (input.required && input.default !== null) {
      at.issues.add(at.job, field, 'an input with a default cannot be required: remove one of them');
    }
    out.push([name, input]);
  }
  return Object.fromEntries(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Scalars are taken as their text, as env values are: a run's inputs are strings. */
function readDefault(value: unknown, at: At): string | undefined {
  let text: string | undefined;
  if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'boolean') text = String(value);
  else text = readString(value, at);
  if (text !== undefined && text.length > MAX_INPUT_VALUE_LENGTH) {
    at.issues.add(at.job, at.field, `is ${text.length} characters long; at most ${MAX_INPUT_VALUE_LENGTH} are allowed`);
    return undefined;
  }
  return text;
}
