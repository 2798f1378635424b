import { substitute } from '../domain/expressions.js';
import { inputsProblem, resolveInputs } from '../domain/inputs.js';
import { MAX_GROUP_CHARS } from '../definitions/concurrency.js';
import { WeftError } from '../protocol/errors.js';
import type { RunTrigger } from '../domain/model.js';
import type { JobRecord, LabelSet, NewJob, RunRecord, StoreReads, WorkflowRecord } from '../store/store.js';
import { keptJobs, planRun, type RerunScope } from './run-plan.js';
import { expandJobs, runValue } from './expand.js';
import type { RunEvent } from '../domain/triggers.js';

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
  /** The event it is started with (README "Triggers and notifications"), its payload also as the JSON text kept; null: none. */
  event: StartEvent | null;
  /** Its delivery key (domain/triggers.ts deliveryKey): a key seen before starts nothing; null: none. */
  delivery_key: string | null;
}

/** A run's event: its payload, and that payload as the JSON text the store keeps and claims carry. */
export interface StartEvent extends RunEvent {
  text: string;
}

/** A run a start began (started or queued), or, for a delivery key seen before, the run it began then. */
export interface Begun {
  run: RunRecord;
  duplicate: boolean;
}

/** How a run started from outside is started (README "Triggers and notifications"). */
export interface StartedFrom {
  trigger: RunTrigger;
  event: StartEvent | null;
  delivery_key: string | null;
}

/**
 * The run's concurrency group: the definition's `concurrency.group` with the run's inputs filled in.
 * One that comes out empty or too long is a 400 naming the inputs, as a label made from inputs is.
 */
export function runGroupOf(wf: WorkflowRecord, inputs: Readonly<Record<string, string>>, event: RunEvent | null = null): RunStart['group'] {
  const c = wf.definition.concurrency;
  if (c?.group === undefined) return null;
  const name = substitute(c.group, (ref) => runValue(inputs, event, ref)).trim();
  if (name === '' || name.length > MAX_GROUP_CHARS) {
    throw new WeftError(
      'invalid_request',
      `workflow "${wf.id}": concurrency.group '${c.group}' becomes ${name === '' ? 'empty' : `${name.length} characters (at most ${MAX_GROUP_CHARS})`} with this run's inputs and event; give inputs that name a group`,
    );
  }
  return { name, cancel_in_progress: c.cancel_in_progress === true };
}

/**
 * A fresh run: the given inputs over the declared defaults; unknown or missing required ones are a 400.
 * `priority`: the run's own (README "Priorities"); absent: each job's.
 */
export function freshRun(
  wf: WorkflowRecord,
  given: Readonly<Record<string, string>>,
  nowMs: number,
  priority?: number,
  from: StartedFrom = { trigger: 'manual', event: null, delivery_key: null },
): RunStart {
  const inputs = checkedInputs(wf, given);
  const { jobs, labelSets } = planRun(wf.definition, nowMs, { inputs, priority, event: from.event });
  return { jobs, labelSets, inputs, rerun_of: null, kept: [], group: runGroupOf(wf, inputs, from.event), ...from };
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
  // A re-run of a run started by an event sees the same event, as GitHub re-runs with the same payload.
  const event = await carriedEvent(r, run);
  const previous: JobRecord[] = await r.getRunJobs(wf.id, runNumber);
  const kept = keptJobs(def, previous, scope);
  if (kept.size === expandJobs(def, {}).specs.length) {
    throw new WeftError(
      'nothing_to_rerun',
      `every job of run #${runNumber} of workflow "${wf.id}" succeeded; nothing to re-run with only: failed (use only: all, or from: <job>)`,
      { run_number: runNumber },
    );
  }
  const { jobs, labelSets } = planRun(def, nowMs, { inputs, kept, priority, event });
  return {
    jobs,
    labelSets,
    inputs,
    rerun_of: runNumber,
    kept: [...kept.keys()],
    group: runGroupOf(wf, inputs, event),
    trigger: 'rerun',
    event,
    delivery_key: null,
  };
}

/** The event run n was started with, as a re-run starts with it again; null: none. */
async function carriedEvent(r: StoreReads, run: RunRecord): Promise<StartEvent | null> {
  if (run.event_name === null) return null;
  const text = await r.getRunEvent(run.workflow_id, run.run_number);
  return text === null ? null : { name: run.event_name, payload: JSON.parse(text) as unknown, text };
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
