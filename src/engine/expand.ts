/**
 * The jobs a run is made of (README "Matrix, fan-out and artifacts"): each plain job of the definition
 * as it is, each matrix job as one instance per combination (`<job>~<index>`), with `${{ matrix.* }}`,
 * `${{ inputs.* }}` and `${{ event.* }}` substituted and every `needs` on a group turned into its instances. Matrix
 * values are all written in the definition, so a run knows its instances from its start.
 */
import { hasExpression, substitute, type ExprRef } from '../domain/expressions.js';
import { labelProblem } from '../domain/labels.js';
import { type Combo, instanceId, instanceName, matrixEnvName } from '../domain/matrix.js';
import { valueText } from '../domain/expressions.js';
import type { JobSpec, WorkflowDefinition } from '../domain/model.js';
import { WeftError } from '../protocol/errors.js';
import { MAX_GROUP_CHARS } from '../definitions/concurrency.js';
import { valueAt, type RunEvent } from '../domain/triggers.js';
import type { JobCall } from '../domain/calls.js';

/** A job of a run before it has a row: a definition job, or one instance of a matrix. */
export interface PlannedSpec extends Omit<JobSpec, 'for_each'> {
  group_id: string | null;
  matrix: Combo | null;
  max_parallel: number | null;
  fail_fast: boolean;
  /** A for_each job, one row until its need completes (store/fan-out.ts). */
  for_each: { job: string; key: string } | null;
  /** Its concurrency group with inputs and matrix values filled in (README "Concurrency groups"); null: none. */
  concurrency_group: string | null;
  cancel_in_progress: boolean;
  /** `uses:` and `with:` (README "Workflows calling workflows"), inputs and matrix values filled in; null: no call. */
  call: JobCall | null;
}

/** Instance ids of each group, in index order. */
export type Groups = ReadonlyMap<string, readonly string[]>;

/**
 * What a run knows when it starts besides its matrix values: its inputs and the event it was started
 * with (README "Triggers and notifications"; absent: none, and `${{ event.* }}` is ''). Undefined for
 * the references it does not know, which a later layer fills in.
 */
export function runValue(inputs: Readonly<Record<string, string>>, event: RunEvent | null | undefined, ref: ExprRef): unknown {
  switch (ref.kind) {
    case 'inputs':
      return inputs[ref.key] ?? '';
    case 'event':
      return event ? (valueAt(event.payload, ref.path) ?? '') : '';
    case 'event_name':
      return event?.name ?? '';
    default:
      return undefined;
  }
}

export function expandJobs(
  def: WorkflowDefinition,
  inputs: Readonly<Record<string, string>>,
  event?: RunEvent | null,
): { specs: PlannedSpec[]; groups: Groups } {
  const known = (ref: ExprRef) => runValue(inputs, event, ref);
  const groups = new Map<string, string[]>();
  for (const spec of def.jobs) {
    if (spec.strategy && !spec.for_each) groups.set(spec.id, spec.strategy.combos.map((_, i) => instanceId(spec.id, i)));
  }
  const needsOf = (spec: JobSpec) => spec.needs.flatMap((n) => groups.get(n) ?? [n]);
  const specs: PlannedSpec[] = [];
  for (const spec of def.jobs) {
    const needs = needsOf(spec);
    if (spec.for_each) {
      // Its instances are made when its need completes; until then it is one row, its group's own.
      specs.push({
        ...plain(spec, known, def.id),
        needs,
        group_id: spec.id,
        matrix: null,
        max_parallel: spec.strategy?.max_parallel ?? null,
        fail_fast: spec.strategy?.fail_fast ?? true,
        for_each: spec.for_each,
      });
      continue;
    }
    if (!spec.strategy) {
      specs.push({
        ...plain(spec, known, def.id),
        needs,
        group_id: null,
        matrix: null,
        max_parallel: null,
        fail_fast: false,
        for_each: null,
      });
      continue;
    }
    const { combos, fail_fast, max_parallel } = spec.strategy;
    combos.forEach((combo, i) => {
      const resolve = (ref: ExprRef) => (ref.kind === 'matrix' ? (Object.hasOwn(combo, ref.key) ? combo[ref.key] : '') : known(ref));
      const base = plain(spec, resolve, def.id);
      const matrixEnv = Object.fromEntries(Object.entries(combo).map(([k, v]) => [matrixEnvName(k), valueText(v)]));
      specs.push({
        ...base,
        id: instanceId(spec.id, i),
        name: hasExpression(spec.name) ? base.name : instanceName(spec.name, Object.values(combo)),
        env: { ...base.env, ...matrixEnv },
        needs,
        group_id: spec.id,
        matrix: combo,
        max_parallel,
        fail_fast,
        for_each: null,
      });
    });
  }
  return { specs, groups };
}

/** `spec` with its name, labels, env and command substituted by `resolve`. */
function plain(
  spec: JobSpec,
  resolve: (ref: ExprRef) => unknown,
  workflowId: string,
): JobSpec & Pick<PlannedSpec, 'concurrency_group' | 'cancel_in_progress' | 'call'> {
  const { strategy: _strategy, for_each: _forEach, ...rest } = spec;
  const labels = spec.labels.map((l) => {
    if (!hasExpression(l)) return l;
    const text = substitute(l, resolve);
    const problem = text.trim() === '' ? 'is empty' : labelProblem(text);
    if (problem !== null) {
      throw new WeftError('invalid_request', `workflow "${workflowId}", job "${spec.id}": label '${l}' becomes '${text}': ${problem}`);
    }
    return text;
  });
  return {
    ...rest,
    name: substitute(spec.name, resolve),
    labels: [...new Set(labels)].sort(),
    // Parsed again when the job is leased (needs, secrets): what is filled in now stays text then.
    env: Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, substitute(v, resolve, { keepForLater: true })])),
    command: substitute(spec.command, (ref) => (ref.kind === 'matrix' ? resolve(ref) : undefined)),
    concurrency_group: spec.concurrency ? groupName(spec, resolve, workflowId) : null,
    cancel_in_progress: spec.concurrency?.cancel_in_progress === true,
    // Parsed again when the child starts (needs): what is filled in now stays text then, as in env.
    call:
      spec.uses === undefined
        ? null
        : { uses: spec.uses, with: Object.fromEntries(Object.entries(spec.with ?? {}).map(([k, v]) => [k, substitute(v, resolve, { keepForLater: true })])) },
  };
}

/** A job's concurrency group as its run (or instance) has it; empty or too long is a 400, as a run's group is. */
function groupName(spec: JobSpec, resolve: (ref: ExprRef) => unknown, workflowId: string): string {
  const written = spec.concurrency!.group;
  const name = substitute(written, resolve).trim();
  if (name === '' || name.length > MAX_GROUP_CHARS) {
    throw new WeftError(
      'invalid_request',
      `workflow "${workflowId}", job "${spec.id}": concurrency.group '${written}' becomes ${name === '' ? 'empty' : `${name.length} characters (at most ${MAX_GROUP_CHARS})`} with this run's inputs and event; give inputs that name a group`,
    );
  }
  return name;
}
