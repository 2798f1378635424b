import type { InputSpec } from './model.js';

/** Limits on a run's inputs (README "Limits"): each becomes an environment variable of every job. */
export const MAX_INPUTS = 100;
export const MAX_INPUT_VALUE_LENGTH = 65_536;

/** `WEFT_INPUT_<NAME>`: upper-cased, every character outside [A-Za-z0-9] becomes `_`, as for `UPSTREAM_<JOB>_<KEY>`. */
export function inputEnvName(name: string): string {
  return `WEFT_INPUT_${name.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`;
}

export type ResolvedInputs =
  | { ok: true; inputs: Record<string, string> }
  | { ok: false; unknown: string[]; missing: string[] };

/**
 * The inputs a run starts with: the given values over the declared defaults. Names the definition does
 * not declare, and required inputs given no value, are refused together so one answer names them all.
 */
export function resolveInputs(declared: Readonly<Record<string, InputSpec>> | undefined, given: Readonly<Record<string, string>>): ResolvedInputs {
  const specs = declared ?? {};
  const unknown = Object.keys(given).filter((name) => !Object.hasOwn(specs, name)).sort();
  const missing = Object.keys(specs).filter((name) => specs[name]!.required && !Object.hasOwn(given, name)).sort();
  if (unknown.length > 0 || missing.length > 0) return { ok: false, unknown, missing };
  const inputs: [string, string][] = [];
  for (const name of Object.keys(specs).sort()) {
    const value = Object.hasOwn(given, name) ? given[name] : specs[name]!.default;
    if (value !== null && value !== undefined) inputs.push([name, value]);
  }
  // An input may be named `__proto__`: fromEntries defines own properties, never the prototype.
  return { ok: true, inputs: Object.fromEntries(inputs) };
}

/** The message of a refused `resolveInputs`, naming each input. */
export function inputsProblem(r: { unknown: string[]; missing: string[] }, workflowId: string, declared: readonly string[]): string {
  const parts: string[] = [];
  if (r.unknown.length > 0) {
    const known = declared.length === 0 ? 'it declares no inputs' : `it declares ${declared.join(', ')}`;
    parts.push(`workflow "${workflowId}" has no input ${r.unknown.map((n) => `"${n}"`).join(', ')} (${known})`);
  }
  if (r.missing.length > 0) parts.push(`required input ${r.missing.map((n) => `"${n}"`).join(', ')} not given`);
  return parts.join('; ');
}
