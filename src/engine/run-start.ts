import { substitute } from '../domain/expressions.js';
import { inputsProblem, resolveInputs } from '../domain/inputs.js';
import { MAX_GROUP_CHARS } from '../definitions/concurrency.js';
import { WeftError } from '../protocol/errors.js';
import type { RunTrigger } from '../domain/model.js';
import type { JobRecord, LabelSet, NewJob, RunRecord, StoreReads, WorkflowRecord } from '../store/store.js';
import { keptJobs, planRun, type RerunScope } from './run-plan.js';
import { expandJobs } from './expand.js';

/** What a run starts with, built from one read of its workflow (and, for a re-run, of the run it repeats). */
export interface RunStart {
  jobs: NewJob[];
  labelSets: LabelSet[];
  inputs: Record<string, string>;
  rerun_of: number | null;
  /** Jobs of the earlier run kept as they were (a re-run). */
  kept: string[];
  /** Its concurrency group, evaluated with its inputs (README "Concurrency groups"); null: none. */
  group: { name: string; cancel_in_progress: boolean } | null;
  /** What starts it (README "Dashboard"). */
  trigger: RunTrigger;
}

/**
 * The run's concurrency group: the definition's `concurrency.group` with the run's inputs filled in.
 * One that comes out empty or too long is a 400 naming the inputs, as a label made from inputs is.
 */
export function runGroupOf(wf: WorkflowRecord, inputs: Readonly<Record<string, string>>): RunStart['group'] {
  const c = wf.definition.concurrency;
  if (c?.group === undefined) return null;
  const name = substitute(c.group, (ref) => (ref.kind === 'inputs' ? (inputs[ref.key] ?? '') : undefined)).trim();
  if (name === '' || name.length > MAX_GROUP_CHARS) {
    throw new WeftError(
      'invalid_request',
      `workflow "${wf.id}": concurrency.group '${c.group}' becomes ${name === '' ? 'empty' : `${name.length} characters (at most ${MAX_GROUP_CHARS})`} with this run's inputs; give inputs that name a group`,
    );
  }
  return { name, cancel_in_progress: c.cancel_in_progress === true };
}

/**
 * A fresh run: the given inputs over the declared defaults; unknown or missing required ones are a 400.
 * `priority`: the run's own (README "Priorities"); absent: each job's.
 */
export function freshRun(wf: WorkflowRecord, given: Readonly<Record<string, string>>, nowMs: number, priority?: number): RunStart {
  const inputs = checkedInputs(wf, given);
  const { jobs, labelSets } = planRun(wf.definition, nowMs, { inputs, priority });
  return { jobs, labelSets, inputs, rerun_of: null, kept: [], group: runGroupOf(wf, inputs), trigger: 'manual' };
}

/**
 * A re-run of run `n` (README "Re-running a run"), from the current definition: run n's inputs (those
 * the definition still declares, with today's defaults for the rest), and the jobs of run n that the
 * scope keeps. 404 for a run the workflow does not have, 400 for a `from` that names no job, 409
 * `nothing_to_rerun` when every job would be kept.
 */
export async function rerunOf(
  r: StoreReads,
  wf: WorkflowRecord,
  runNumber: number,
  scope: RerunScope,
  nowMs: number,
  priority?: number,
): Promise<RunStart> {
  const run = runNumber >= 1 && runNumber <= wf.latest_run ? await r.getRun(wf.id, runNumber) : null;
  if (!run) throw new WeftError('run_not_found', `workflow "${wf.id}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
  const def = wf.definition;
  if ('from' in scope && !def.jobs.some((j) => j.id === scope.from)) {
    throw new WeftError('invalid_request', `body.from: workflow "${wf.id}" has no job "${scope.from}" (jobs: ${def.jobs.map((j) => j.id).join(', ')})`);
  }
  const inputs = checkedInputs(wf, carriedInputs(wf, run));
  const previous: JobRecord[] = await r.getRunJobs(wf.id, runNumber);
  const kept = keptJobs(def, previous, scope);
  if (kept.size === expandJobs(def, {}).specs.length) {
    throw new WeftError(
      'nothing_to_rerun',
      `every job of run #${runNumber} of workflow "${wf.id}" succeeded; nothing to re-run with only: failed (use only: all, or from: <job>)`,
      { run_number: runNumber },
    );
  }
  const { jobs, labelSets } = planRun(def, nowMs, { inputs, kept, priority });
  return { jobs, labelSets, inputs, rerun_of: runNumber, kept: [...kept.keys()], group: runGroupOf(wf, inputs), trigger: 'rerun' };
}

/** Run n's values of the inputs the definition still declares: an input removed since is dropped. */
function carriedInputs(wf: WorkflowRecord, run: RunRecord): Record<string, string> {
  const declared = wf.definition.inputs ?? {};
  return Object.fromEntries(Object.entries(run.inputs).filter(([name]) => Object.hasOwn(declared, name)));
}

function checkedInputs(wf: WorkflowRecord, given: Readonly<Record<string, string>>): Record<string, string> {
  // A NUL cannot reach a process's environment, and PostgreSQL text refuses it.
  const withNul = Object.keys(given).filter((name) => given[name]!.includes('\u0000') || name.includes('\u0000'));
  if (withNul.length > 0) throw new WeftError('invalid_request', `body.inputs: input ${withNul.map((n) => JSON.stringify(n)).join(', ')} must not contain a NUL character (\\u0000)`);
  const resolved = resolveInputs(wf.definition.inputs, given);
  if (resolved.ok) return resolved.inputs;
  const declared = Object.keys(wf.definition.inputs ?? {});
  throw new WeftError('invalid_request', inputsProblem(resolved, wf.id, declared), {
    unknown_inputs: resolved.unknown,
    missing_inputs: resolved.missing,
  });
}
