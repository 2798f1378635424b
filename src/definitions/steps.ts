/**
 * `steps:` become one `sh -c` command joined with `&&`, so a failing step stops the job the way
 * `set -e` would. A step is wrapped in `{ …\n}` whenever joining it verbatim could change what the
 * `&&` applies to: several lines, `;` or `&` (the next `&&` would only guard the last command), or
 * `#` (a trailing comment would swallow the rest of the line).
 *
 * Each step of a job with several is announced by a `::step i/n name` line on stdout before it runs,
 * so a log shows where each step begins, in any worker (`weft run --follow` draws it as a heading).
 */
import { type At, checkKeys, child, describe, isAbsent, isPlainObject, readString } from './values.js';

const STEP_KEYS = ['name', 'run'] as const;
const NEEDS_GROUP = /[\n;&#]/;

export interface Step {
  name: string | null;
  run: string;
}

export function joinSteps(steps: readonly Step[]): string {
  if (steps.length === 1) return steps[0]!.run;
  return steps
    .map(({ name, run }, i) => `${stepMarker(i + 1, steps.length, name ?? run)} && ${NEEDS_GROUP.test(run) ? `{ ${run}\n}` : run}`)
    .join(' && ');
}

const MAX_STEP_TITLE = 80;

/** `printf '::step 2/3 %s\n' 'Build'`; an unnamed step is titled by its command's first line. */
function stepMarker(index: number, count: number, title: string): string {
  let text = title.trim().split('\n')[0]!.replace(/\s+/g, ' ');
  if (text.length > MAX_STEP_TITLE) text = `${text.slice(0, MAX_STEP_TITLE - 1)}…`;
  return `printf '::step ${index}/${count} %s\\n' '${text.replace(/'/g, "'\\''")}'`;
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
  const steps: Step[] = [];
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
    const name = isAbsent(step.name) ? null : readString(step.name, child(stepAt, 'name')) ?? null;
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
      steps.push({ name: name !== null && name.trim() !== '' ? name : null, run: run.replace(/\s+$/, '') });
    }
  });
  return ok ? joinSteps(steps) : undefined;
}
