/**
 * The workflow document in either of its two forms, validated into a `WorkflowDefinition`:
 * the contract form (`jobs` is a map keyed by job id, GitHub-Actions-like) and the array form
 * (`jobs` is a list of `{id, command, …}`) that existing API clients send.
 */
import type { JobSpec, WorkflowDefinition } from '../domain/model.js';
import { type GraphJob, checkGraph } from './graph.js';
import { Issues } from './issues.js';
import { checkGroupInputs, readConcurrency } from './concurrency.js';
import { readInputs } from './inputs.js';
import { checkInstanceLabels, checkJobExpressions, checkOutputExpressions, type ExpressionScope } from './expressions.js';
import { readOutputs } from './calls.js';
import { ARRAY_JOB_KEYS, CONTRACT_JOB_KEYS, readJob } from './job.js';
import { readOn, type ReadOn } from './schedule.js';
import { readNotify } from './notify.js';
import { type Plain, checkKeys, describe, isAbsent, isPlainObject, readEnv, readPriority, readString } from './values.js';

// The documented id alphabet (README "Workflow definitions"), minus ids made only of dots: `.` and `..` are rewritten by URL
// normalisation, so such a workflow or job could never be addressed in a path.
export const ID_PATTERN = /^(?!\.+$)[A-Za-z0-9_.-]{1,128}$/;

const CONTRACT_KEYS = ['id', 'name', 'on', 'env', 'inputs', 'concurrency', 'priority', 'outputs', 'jobs', 'notify'] as const;
const ARRAY_KEYS = ['id', 'name', 'trigger', 'env', 'inputs', 'concurrency', 'priority', 'jobs', 'notify'] as const;

export interface IdSource {
  /** Imposed id (the file name); a differing `id` in the document is an error. */
  id?: string;
  generateId?: () => string;
}

export function badIdMessage(id: string): string {
  return `invalid id '${id}': use 1 to 128 characters among A-Z a-z 0-9 _ . - (not only dots)`;
}

/** Throws `DefinitionError` listing every problem found. */
export function validateWorkflow(value: unknown, source: string, ids: IdSource): WorkflowDefinition {
  const issues = new Issues(source);
  if (!isPlainObject(value)) {
    issues.add(null, null, `a workflow definition must be a mapping with a 'jobs' key, got ${describe(value)}`);
    issues.throwIfAny();
  }
  const doc = value as Plain;
  const arrayForm = Array.isArray(doc.jobs);
  checkKeys(doc, arrayForm ? ARRAY_KEYS : CONTRACT_KEYS, (key, message) => issues.add(null, key, message),
    arrayForm ? { on: 'trigger', params: 'inputs' } : { trigger: 'on', environment: 'env', workflow_id: 'id', params: 'inputs' });

  const id = resolveId(doc.id, ids, issues);
  const name = isAbsent(doc.name) ? id : readString(doc.name, { issues, job: null, field: 'name' }, { nonEmpty: true }) ?? id;
  const on: ReadOn = arrayForm ? { trigger: readTriggerString(doc.trigger, issues), schedules: [] } : readOn(doc.on, issues);
  const env = readEnv(doc.env, { issues, job: null, field: 'env' });
  const inputs = readInputs(doc.inputs, { issues, job: null, field: 'inputs' });
  const concurrency = readConcurrency(doc.concurrency, { issues, job: null, field: 'concurrency' });
  const priority = isAbsent(doc.priority) ? undefined : readPriority(doc.priority, { issues, job: null, field: 'priority' });
  const notify = readNotify(doc.notify, { issues, job: null, field: 'notify' });
  const scope = { inputs: new Set(Object.keys(inputs ?? {})) };
  checkGroupInputs(concurrency?.group, scope.inputs, { issues, job: null, field: 'concurrency' });
  const { jobs, graph } = arrayForm ? readJobList(doc.jobs as unknown[], issues) : readJobMap(doc.jobs, issues, scope);
  checkGraph(graph, arrayForm ? ARRAY_JOB_KEYS.needs : CONTRACT_JOB_KEYS.needs, issues);
  // README "Workflows calling workflows": what a run hands to the job that called it.
  const outputs = arrayForm ? undefined : readOutputs(doc.outputs, { issues, job: null, field: 'outputs' });
  if (outputs) checkOutputExpressions(outputs, new Set(jobs.map((j) => j.id)), scope, issues);
  for (const j of jobs) if (j.uses === id) issues.add(j.id, 'uses', `a workflow cannot call itself (uses: ${id})`);
  // A scheduled run is started with the inputs' defaults only: one it could not start is refused now.
  if (on.schedules.length > 0) {
    for (const [name, spec] of Object.entries(inputs ?? {})) {
      if (spec.required) issues.add(null, `inputs.${name}`, 'a workflow with on.schedule cannot have a required input: give it a default instead');
    }
  }
  // So is a run a webhook, an event or another run starts (README "Triggers and notifications").
  const started = on.triggers ? Object.keys(on.triggers).map((k) => (k === 'events' ? 'event' : k)) : [];
  if (started.length > 0 && on.schedules.length === 0) {
    for (const [name, spec] of Object.entries(inputs ?? {})) {
      if (spec.required) issues.add(null, `inputs.${name}`, `a workflow with on.${started[0]} cannot have a required input: give it a default instead`);
    }
  }

  issues.throwIfAny();
  const def: WorkflowDefinition = { id, name, trigger: on.trigger, env, jobs };
  if (on.schedules.length > 0) def.schedules = on.schedules;
  if (on.triggers) def.triggers = on.triggers;
  if (inputs !== undefined && Object.keys(inputs).length > 0) def.inputs = inputs;
  if (concurrency !== undefined) def.concurrency = concurrency;
  // Left out when absent, so that a definition without it keeps its shape and hash.
  if (priority !== undefined) def.priority = priority;
  if (outputs !== undefined && Object.keys(outputs).length > 0) def.outputs = outputs;
  // Left out when absent too (README "Notifications").
  if (notify !== undefined) def.notify = notify;
  return def;
}

function resolveId(bodyId: unknown, ids: IdSource, issues: Issues): string {
  if (bodyId === null) bodyId = undefined;
  if (bodyId !== undefined && typeof bodyId !== 'string') {
    issues.add(null, 'id', `must be a string, got ${describe(bodyId)}`);
    bodyId = undefined;
  }
  if (ids.id !== undefined) {
    if (bodyId !== undefined && bodyId !== ids.id) {
      issues.add(null, 'id', `id '${String(bodyId)}' does not match '${ids.id}' (a file's workflow id is its file name); remove 'id' or rename the file`);
    }
    if (!ID_PATTERN.test(ids.id)) issues.add(null, 'id', badIdMessage(ids.id));
    return ids.id;
  }
  if (typeof bodyId === 'string') {
    if (!ID_PATTERN.test(bodyId)) issues.add(null, 'id', badIdMessage(bodyId));
    return bodyId;
  }
  if (ids.generateId !== undefined) {
    const generated = ids.generateId();
    if (!ID_PATTERN.test(generated)) issues.add(null, 'id', badIdMessage(generated));
    return generated;
  }
  issues.add(null, 'id', 'a workflow id is required');
  return '';
}

function readTriggerString(value: unknown, issues: Issues): string | null {
  if (isAbsent(value)) return null;
  const s = readString(value, { issues, job: null, field: 'trigger' });
  return s === undefined || s.trim() === '' ? null : s;
}

/**
 * `graph` also holds jobs too broken to read, so that a `needs` pointing at them is not reported
 * as unknown on top of their own issue.
 */
interface ReadJobs {
  jobs: JobSpec[];
  graph: GraphJob[];
}

function readJobMap(value: unknown, issues: Issues, scope: ExpressionScope): ReadJobs {
  if (isAbsent(value)) {
    issues.add(null, 'jobs', 'is required: a mapping of job id to job');
    return { jobs: [], graph: [] };
  }
  if (!isPlainObject(value)) {
    issues.add(null, 'jobs', `must be a mapping of job id to job, got ${describe(value)}`);
    return { jobs: [], graph: [] };
  }
  const entries = Object.entries(value);
  if (entries.length === 0) issues.add(null, 'jobs', 'must define at least one job');
  const jobs: JobSpec[] = [];
  const graph: GraphJob[] = [];
  for (const [id, raw] of entries) {
    if (!ID_PATTERN.test(id)) issues.add(id, null, `bad job id: ${badIdMessage(id)}`);
    if (!isPlainObject(raw)) {
      issues.add(id, null, `a job must be a mapping with 'run' or 'steps', got ${describe(raw)}`);
      graph.push({ id, needs: [] });
      continue;
    }
    const job = readJob(raw, id, id, CONTRACT_JOB_KEYS, issues);
    checkJobExpressions(job, isAbsent(raw.steps) ? 'run' : 'steps', scope, issues);
    checkInstanceLabels(job, issues);
    jobs.push(job);
    graph.push(job);
  }
  return { jobs, graph };
}

function readJobList(list: unknown[], issues: Issues): ReadJobs {
  if (list.length === 0) issues.add(null, 'jobs', 'must define at least one job');
  const firstIndex = new Map<string, number>();
  const jobs: JobSpec[] = [];
  const graph: GraphJob[] = [];
  list.forEach((raw, i) => {
    const fallback = `jobs[${i}]`;
    if (!isPlainObject(raw)) {
      issues.add(fallback, null, `a job must be a mapping with 'id' and 'command', got ${describe(raw)}`);
      return;
    }
    let id: string | null = null;
    if (isAbsent(raw.id)) {
      issues.add(fallback, 'id', 'is required');
    } else if (typeof raw.id !== 'string') {
      issues.add(fallback, 'id', `must be a string, got ${describe(raw.id)}`);
    } else {
      id = raw.id;
      if (!ID_PATTERN.test(id)) issues.add(id === '' ? fallback : id, 'id', `bad job id: ${badIdMessage(id)}`);
      const earlier = firstIndex.get(id);
      if (earlier !== undefined) issues.add(id, 'id', `duplicate job id '${id}' (also jobs[${earlier}])`);
      else firstIndex.set(id, i);
    }
    const job = readJob(raw, id ?? fallback, id === null || id === '' ? fallback : id, ARRAY_JOB_KEYS, issues);
    jobs.push(job);
    // Duplicates stay out so the cycle search sees each id once.
    if (id !== null && firstIndex.get(id) === i) graph.push(job);
  });
  return { jobs, graph };
}
