/**
 * `steps:` become one `sh -c` command joined with `&&`, so a failing step stops the job the way
 * `set -e` would. A step is wrapped in `{ …\n}` whenever joining it verbatim could change what the
 * `&&` applies to: several lines, `;` or `&` (the next `&&` would only guard the last command), or
 * `#` (a trailing comment would swallow the rest of the line).
 */
import { type At, checkKeys, child, describe, isAbsent, isPlainObject, readString } from './values.js';

const STEP_KEYS = ['name', 'run'] as const;
const NEEDS_GROUP = /[\n;&#]/;

export function joinSteps(runs: readonly string[]): string {
  if (runs.length === 1) return runs[0]!;
  return runs.map((run) => (NEEDS_GROUP.test(run) ? `{ ${run}\n}` : run)).join(' && ');
}

/** Returns the joined command, or undefined when a step is invalid (already reported). */
export function readSteps(value: unknown, at: At): string | undefined {
  const { issues } = at;
  if (!Array.isArray(value)) {
    issues.add(at.job, at.field, `must be a list of { name?, run }, got ${describe(value)}`);
    return undefined;
  }
  if (value.length === 0) {
    issues.add(at.job, at.field, 'must contain at least one step');
    return undefined;
  }
  const runs: string[] = [];
  let ok = true;
  value.forEach((step, i) => {
    const stepAt = child(at, i);
    if (!isPlainObject(step)) {
      issues.add(at.job, stepAt.field, `must be a mapping { name?, run }, got ${describe(step)}`);
      ok = false;
      return;
    }
    checkKeys(step, STEP_KEYS, (key, message) => issues.add(at.job, child(stepAt, key).field, message), {
      command: 'run',
      script: 'run',
      cmd: 'run',
    });
    if (!isAbsent(step.name)) readString(step.name, child(stepAt, 'name'));
    if (isAbsent(step.run)) {
      issues.add(at.job, child(stepAt, 'run').field, 'is required');
      ok = false;
      return;
    }
    const run = readString(step.run, child(stepAt, 'run'));
    if (run === undefined) {
      ok = false;
    } else if (run.trim() === '') {
      issues.add(at.job, child(stepAt, 'run').field, 'empty command');
      ok = false;
    } else {
      // Block scalars (`run: |`) end in a newline that would otherwise sit before `&&`.
      runs.push(run.replace(/\s+$/, ''));
    }
  });
  return ok ? joinSteps(runs) : undefined;
}
