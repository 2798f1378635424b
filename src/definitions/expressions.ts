/**
 * Where each `${{ … }}` value may appear, and whether what it names exists (README "Matrix, fan-out
 * and artifacts"). A run-time value (inputs, needs, items) never becomes shell text: in `run`/`steps`
 * only `matrix.*`, whose values the definition itself holds, is accepted; the rest goes through `env`.
 */
import { type ExprRef, hasExpression, parseTemplate, substitute } from '../domain/expressions.js';
import { labelProblem } from '../domain/labels.js';
import type { JobSpec } from '../domain/model.js';
import { pathText } from '../domain/triggers.js';
import type { Issues } from './issues.js';

type Kind = ExprRef['kind'];

/** What every field of a job may reference. */
const ALLOWED: Record<'name' | 'labels' | 'env' | 'run' | 'group' | 'with' | 'outputs', ReadonlySet<Kind>> = {
  // The run's event is known when it starts, as its inputs are (README "Triggers and notifications").
  name: new Set(['matrix', 'inputs', 'item', 'event', 'event_name', 'literal']),
  // A job's concurrency group is fixed when its run starts (README "Concurrency groups").
  group: new Set(['matrix', 'inputs', 'event', 'event_name', 'literal']),
  labels: new Set(['matrix', 'inputs', 'event', 'event_name', 'literal']),
  // A secret only ever reaches a job through its env, filled in the claim answer (README "Secrets").
  env: new Set(['matrix', 'inputs', 'needs_output', 'needs_result', 'item', 'secrets', 'event', 'event_name', 'literal']),
  run: new Set(['matrix', 'literal']),
  // The called workflow's inputs (README "Workflows calling workflows"): as env, but no secret, since
  // a run's inputs are kept with it and shown.
  with: new Set(['matrix', 'inputs', 'needs_output', 'needs_result', 'literal']),
  // A workflow's outputs, read when its run ends.
  outputs: new Set(['jobs_output', 'inputs', 'literal']),
};

function refText(ref: ExprRef): string {
  switch (ref.kind) {
    case 'matrix':
      return `matrix.${ref.key}`;
    case 'inputs':
      return `inputs.${ref.key}`;
    case 'needs_output':
      return `needs.${ref.job}.outputs.${ref.key}`;
    case 'needs_result':
      return `needs.${ref.job}.result`;
    case 'item':
      return ref.key === null ? 'item' : `item.${ref.key}`;
    case 'secrets':
      return `secrets.${ref.name}`;
    case 'event':
      return `event.${pathText(ref.path)}`;
    case 'event_name':
      return 'event_name';
    case 'jobs_output':
      return `jobs.${ref.job}.outputs.${ref.key}`;
    case 'literal':
      return `'${ref.value.replace(/'/g, "''")}'`;
  }
}

export interface ExpressionScope {
  /** Declared input names. */
  inputs: ReadonlySet<string>;
}

/** Reports every expression of `job` that its field does not allow or that names nothing. */
export function checkJobExpressions(job: JobSpec, commandField: string, scope: ExpressionScope, issues: Issues): void {
  const matrixKeys = job.strategy && !job.for_each ? new Set(job.strategy.combos.flatMap((c) => Object.keys(c))) : null;
  const check = (text: string, field: string, where: keyof typeof ALLOWED) => {
    if (!hasExpression(text)) return;
    const parsed = parseTemplate(text);
    if ('error' in parsed) {
      issues.add(job.id, field, parsed.error);
      return;
    }
    for (const part of parsed.parts) {
      if (typeof part === 'string') continue;
      const ref = part.ref;
      if (!ALLOWED[where].has(ref.kind)) {
        issues.add(job.id, field, notAllowed(ref, where));
        continue;
      }
      const problem = unknownName(ref, job, matrixKeys, scope);
      if (problem) issues.add(job.id, field, problem);
    }
  };
  check(job.name, 'name', 'name');
  job.labels.forEach((l, i) => check(l, `labels[${i}]`, 'labels'));
  for (const [k, v] of Object.entries(job.env)) check(v, `env.${k}`, 'env');
  check(job.command, commandField, 'run');
  if (job.concurrency) check(job.concurrency.group, 'concurrency.group', 'group');
  for (const [k, v] of Object.entries(job.with ?? {})) check(v, `with.${k}`, 'with');
}

/**
 * A workflow's `outputs:` (README "Workflows calling workflows"): each names a job of the workflow and
 * one of its outputs, an input it declares, or literal text.
 */
export function checkOutputExpressions(outputs: Readonly<Record<string, { value: string }>>, jobIds: ReadonlySet<string>, scope: ExpressionScope, issues: Issues): void {
  for (const [name, { value }] of Object.entries(outputs)) {
    const field = `outputs.${name}`;
    const parsed = parseTemplate(value);
    if ('error' in parsed) {
      issues.add(null, field, parsed.error);
      continue;
    }
    for (const part of parsed.parts) {
      if (typeof part === 'string') continue;
      const ref = part.ref;
      if (!ALLOWED.outputs.has(ref.kind)) {
        issues.add(null, field, `'\${{ ${refText(ref)} }}' cannot be used in outputs: only \${{ jobs.<job>.outputs.<key> }}, \${{ inputs.<name> }} and literal text`);
      } else if (ref.kind === 'jobs_output' && !jobIds.has(ref.job)) {
        issues.add(null, field, `'jobs.${ref.job}' is not a job of this workflow (jobs: ${[...jobIds].join(', ')})`);
      } else if (ref.kind === 'inputs' && !scope.inputs.has(ref.key)) {
        issues.add(null, field, `unknown input '${ref.key}' (declared: ${[...scope.inputs].join(', ') || 'none'})`);
      }
    }
  }
}

function notAllowed(ref: ExprRef, where: keyof typeof ALLOWED): string {
  const text = refText(ref);
  if (where === 'run') {
    return `'\${{ ${text} }}' cannot be used in a command: a run-time value never becomes shell text. Pass it through env instead (env: { VALUE: '\${{ ${text} }}' }) and use "$VALUE"`;
  }
  if (where === 'group') return `'\${{ ${text} }}' cannot be used in a concurrency group: only inputs, matrix values and the event, known when the run starts`;
  if (ref.kind === 'jobs_output') return `'\${{ ${text} }}' can be used only in the workflow's outputs:; a job reads another's outputs as '\${{ needs.<job>.outputs.<key> }}'`;
  if (where === 'with' && ref.kind === 'secrets') {
    return `'\${{ ${text} }}' cannot be passed in with: a run's inputs are kept with it and shown; the called workflow reads its secrets itself (README "Secrets")`;
  }
  if (where === 'with') return `'\${{ ${text} }}' cannot be used in with: only matrix values, inputs, and needs' outputs and results`;
  if (ref.kind === 'secrets') return `'\${{ ${text} }}' cannot be used in ${where}: a secret reaches a job only through its env (env: { VALUE: '\${{ ${text} }}' })`;
  return `'\${{ ${text} }}' cannot be used in ${where}: it is known only once the run is under way, so it may appear in env values${ref.kind === 'item' ? ' and name' : ''} only`;
}

function unknownName(ref: ExprRef, job: JobSpec, matrixKeys: ReadonlySet<string> | null, scope: ExpressionScope): string | null {
  switch (ref.kind) {
    case 'matrix':
      if (matrixKeys === null) return `'matrix.${ref.key}' is used but the job has no strategy.matrix`;
      return matrixKeys.has(ref.key) ? null : `unknown matrix key '${ref.key}' (keys: ${[...matrixKeys].join(', ')})`;
    case 'inputs':
      return scope.inputs.has(ref.key) ? null : `unknown input '${ref.key}' (declared: ${[...scope.inputs].join(', ') || 'none'})`;
    case 'needs_output':
    case 'needs_result':
      return job.needs.includes(ref.job) ? null : `'needs.${ref.job}' is not a need of this job (needs: ${job.needs.join(', ') || 'none'})`;
    case 'item':
      return job.for_each ? null : `'${refText(ref)}' is used but the job has no for_each`;
    case 'secrets':
      // Whether it is set is checked when a run starts: secrets come and go apart from definitions.
    case 'event':
    case 'event_name':
      // Any run may have an event, or none (then '' as in GitHub Actions): nothing to check here.
    case 'literal':
    case 'jobs_output':
      return null;
  }
}

/**
 * Labels written with `${{ matrix.* }}` are checked for each instance as it will be (a label only
 * known from inputs is checked when a run starts: run-plan.ts).
 */
export function checkInstanceLabels(job: JobSpec, issues: Issues): void {
  if (!job.strategy || !job.labels.some(hasExpression)) return;
  job.labels.forEach((label, i) => {
    if (!hasExpression(label)) return;
    for (const combo of job.strategy!.combos) {
      const text = substitute(label, (ref) => (ref.kind === 'matrix' ? (combo[ref.key] ?? '') : undefined));
      if (hasExpression(text)) return;
      const problem = text.trim() === '' ? 'is empty for a matrix combination' : labelProblem(text);
      if (problem !== null) {
        issues.add(job.id, `labels[${i}]`, `'${text}' (for matrix ${JSON.stringify(combo)}): ${problem}`);
        return;
      }
    }
  });
}
