/**
 * One job, read from either definition form. The two forms differ only in key names, so a single
 * reader takes the spelling table and reports issues under the key the user actually wrote.
 */
import { JOB_CONDITIONS, type JobCondition } from '../domain/conditions.js';
import { labelProblem, MAX_LABELS } from '../domain/labels.js';
import type { JobPresentation, JobSpec } from '../domain/model.js';
import { artifactPatternProblem, MAX_ARTIFACT_PATTERNS } from '../domain/artifacts.js';
import { readBackoff } from './backoff.js';
import type { Issues } from './issues.js';
import { readSteps } from './steps.js';
import { readApproval } from './approval.js';
import { readJobConcurrency } from './concurrency.js';
import { readCall } from './calls.js';
import { readForEach, readStrategy } from './strategy.js';
import { hasExpression } from '../domain/expressions.js';
import {
  type At,
  type Plain,
  checkDepth,
  checkKeys,
  child,
  describe,
  isAbsent,
  isPlainObject,
  readEnv,
  readInt,
  readPriority,
  readString,
  readStringList,
  sortedUnique,
  uniqueInOrder,
} from './values.js';

export interface JobKeys {
  /** Every key a job may carry in this form. */
  allowed: readonly string[];
  needs: string;
  command: string;
  /** Only the contract form has `steps`. */
  steps: string | null;
  /** Only the contract form has `if` (the array form is workflow-graph's shape, which has none). */
  condition: string | null;
  labels: string;
  retries: string;
  /** Spellings from the other form or from GitHub Actions, mapped to this form's key. */
  aliases: Readonly<Record<string, string>>;
  /** Whether the job may carry workflow-graph's display fields (metadata, ports, children, collapsed). */
  presentation: boolean;
}

/**
 * docs/protocol.md: existing clients send each job in the full shape of their status
 * document. Its runtime fields are accepted and dropped (a new workflow has no runtime state); its
 * display fields are kept.
 */
const RUNTIME_KEYS = ['status', 'duration_secs', 'started_at', 'output', 'attempt'] as const;
const PRESENTATION_KEYS = ['metadata', 'ports', 'children', 'collapsed'] as const;

export const CONTRACT_JOB_KEYS: JobKeys = {
  allowed: ['name', 'needs', 'if', 'run', 'steps', 'labels', 'retries', 'backoff', 'env', 'timeout_secs', 'strategy', 'for_each', 'artifacts', 'download', 'priority', 'approval', 'concurrency', 'uses', 'with'],
  needs: 'needs',
  command: 'run',
  steps: 'steps',
  condition: 'if',
  labels: 'labels',
  retries: 'retries',
  aliases: {
    command: 'run',
    script: 'run',
    depends_on: 'needs',
    dependencies: 'needs',
    required_labels: 'labels',
    runs_on: 'labels',
    max_retries: 'retries',
    retry: 'retries',
    timeout: 'timeout_secs',
    timeout_minutes: 'timeout_secs',
    environment: 'env',
    condition: 'if',
    when: 'if',
    matrix: 'strategy',
    'for-each': 'for_each',
    foreach: 'for_each',
    environment_approval: 'approval',
    approve: 'approval',
    manual: 'approval',
    block: 'approval',
    call: 'uses',
    calls: 'uses',
    workflow: 'uses',
  },
  presentation: false,
};

export const ARRAY_JOB_KEYS: JobKeys = {
  allowed: [
    'id',
    'name',
    'command',
    'depends_on',
    'required_labels',
    'max_retries',
    'backoff',
    'env',
    'timeout_secs',
    'artifacts',
    'download',
    'priority',
    ...RUNTIME_KEYS,
    ...PRESENTATION_KEYS,
  ],
  needs: 'depends_on',
  command: 'command',
  steps: null,
  condition: null,
  labels: 'required_labels',
  retries: 'max_retries',
  aliases: {
    run: 'command',
    script: 'command',
    needs: 'depends_on',
    dependencies: 'depends_on',
    labels: 'required_labels',
    runs_on: 'required_labels',
    retries: 'max_retries',
    retry: 'max_retries',
    timeout: 'timeout_secs',
    timeout_minutes: 'timeout_secs',
    environment: 'env',
  },
  presentation: true,
};

/** `label` names the job in issues even when its id is unusable. */
export function readJob(raw: Plain, id: string, label: string, keys: JobKeys, issues: Issues): JobSpec {
  const at = (field: string): At => ({ issues, job: label, field });
  checkKeys(raw, keys.allowed, (key, message) => issues.add(label, key, key === 'if' && keys.condition === null ? ARRAY_FORM_IF : message), keys.aliases);

  const name = isAbsent(raw.name) ? id : readString(raw.name, at('name'), { nonEmpty: true }) ?? id;
  const needs = isAbsent(raw[keys.needs]) ? [] : uniqueInOrder(readStringList(raw[keys.needs], at(keys.needs)));
  // Labels holding `${{ … }}` are checked once substituted, per instance or per run (run-plan.ts).
  const templated = keys.steps !== null;
  const labels = isAbsent(raw[keys.labels]) ? [] : readLabels(raw[keys.labels], at(keys.labels), templated);
  const retries = isAbsent(raw[keys.retries]) ? 0 : readInt(raw[keys.retries], at(keys.retries), 0) ?? 0;
  const timeout = isAbsent(raw.timeout_secs) ? null : readInt(raw.timeout_secs, at('timeout_secs'), 1) ?? null;

  // `approval:` (README "Approvals"), contract form only: a gated job may have no command of its own.
  const approval = keys.steps !== null && !isAbsent(raw.approval) ? readApproval(raw.approval, at('approval')) : undefined;
  const gateOnly = keys.steps !== null && !isAbsent(raw.approval) && raw.approval !== false && isAbsent(raw[keys.command]) && isAbsent(raw[keys.steps!]);
  // `uses:` (README "Workflows calling workflows"), contract form only: the called workflow's jobs run
  // the commands, so such a job has none of its own.
  const calling = keys.steps !== null && !isAbsent(raw.uses);
  const call = keys.steps !== null ? readCall(raw, label, issues) : undefined;
  const spec: JobSpec = {
    id,
    name,
    command: gateOnly || calling ? '' : readCommand(raw, keys, label, issues),
    needs,
    labels,
    max_retries: retries,
    backoff: readBackoff(raw.backoff, at('backoff')),
    env: readEnv(raw.env, at('env')),
    timeout_secs: timeout,
  };
  const condition = keys.condition === null || isAbsent(raw[keys.condition]) ? 'success' : readCondition(raw[keys.condition], at(keys.condition));
  // success() is the default: left out, so that definitions without `if` keep their shape and hash.
  if (condition !== 'success') spec.condition = condition;
  const presentation = keys.presentation ? readPresentation(raw, at) : undefined;
  if (presentation) spec.presentation = presentation;
  const forEach = keys.steps !== null && !isAbsent(raw.for_each) ? readForEach(raw.for_each, needs, at('for_each')) : undefined;
  if (forEach) spec.for_each = forEach;
  const strategy = keys.steps !== null ? readStrategy(raw.strategy, at('strategy'), !isAbsent(raw.for_each)) : undefined;
  if (strategy) spec.strategy = strategy;
  // Left out when absent, so that definitions without them keep their shape and hash.
  if (!isAbsent(raw.artifacts)) spec.artifacts = readArtifactPatterns(raw.artifacts, at('artifacts'));
  if (!isAbsent(raw.download)) spec.download = readDownload(raw.download, needs, at('download'));
  if (!isAbsent(raw.priority)) {
    const priority = readPriority(raw.priority, at('priority'));
    if (priority !== undefined) spec.priority = priority;
  }
  if (approval) {
    // One decision per job: a gate on each instance of a matrix or fan-out would ask for as many.
    const grouped = !isAbsent(raw.strategy) ? 'strategy' : !isAbsent(raw.for_each) ? 'for_each' : null;
    if (grouped !== null) {
      issues.add(label, 'approval', `cannot be combined with '${grouped}'; put the approval on a job of its own that this one needs`);
    } else {
      spec.approval = approval;
    }
  }
  // `concurrency:` (README "Concurrency groups"), contract form only.
  if (keys.steps !== null) {
    const concurrency = readJobConcurrency(raw.concurrency, at('concurrency'));
    if (concurrency) spec.concurrency = concurrency;
  }
  if (gateOnly && approval && spec.artifacts !== undefined) issues.add(label, 'artifacts', "a job without 'run' uploads nothing; remove 'artifacts' or add 'run'");
  // Left out when absent, so that definitions without them keep their shape and hash.
  if (call) {
    spec.uses = call.uses;
    if (call.with) spec.with = call.with;
  }
  return spec;
}

/** `artifacts:` paths or globs, relative to the working directory (src/domain/artifacts.ts). */
function readArtifactPatterns(value: unknown, at: At): string[] {
  const patterns = uniqueInOrder(readStringList(value, at));
  if (patterns.length > MAX_ARTIFACT_PATTERNS) at.issues.add(at.job, at.field, `lists ${patterns.length} patterns; at most ${MAX_ARTIFACT_PATTERNS}`);
  patterns.forEach((p, i) => {
    const problem = artifactPatternProblem(p);
    if (problem !== null) at.issues.add(at.job, `${at.field}[${i}]`, `"${p}" ${problem}`);
  });
  return patterns;
}

/** `download:` names needs of the job (only their artifacts exist when it starts). */
function readDownload(value: unknown, needs: readonly string[], at: At): string[] {
  const wanted = uniqueInOrder(readStringList(value, at));
  for (const w of wanted) {
    if (!needs.includes(w)) at.issues.add(at.job, at.field, `"${w}" is not one of this job's needs (${needs.length > 0 ? needs.join(', ') : 'it has none'}); only a need's artifacts exist when the job starts`);
  }
  return wanted;
}

const ARRAY_FORM_IF =
  "'if' is read only in the contract form (jobs keyed by id, with 'run'); this is the array form (a list of jobs with 'command')";

const CONDITION_LIST = JOB_CONDITIONS.map((c) => `${c}()`).join(', ');

/**
 * One of the four status functions, as GitHub Actions spells them; the `${{ }}` wrapping GitHub users
 * type is accepted. Expressions (`!`, `&&`, `needs.x.result == …`) are not: weft has no evaluator.
 */
function readCondition(value: unknown, at: At): JobCondition {
  const text = readString(value, at);
  if (text === undefined) return 'success';
  const wrapped = /^\s*\$\{\{([\s\S]*)\}\}\s*$/.exec(text);
  const inner = (wrapped ? wrapped[1]! : text).trim();
  const m = /^([a-z]+)\(\s*\)$/.exec(inner);
  const name = m ? m[1]! : null;
  if (name !== null && (JOB_CONDITIONS as readonly string[]).includes(name)) return name as JobCondition;
  const hint = /^[a-z]+$/.test(inner) && (JOB_CONDITIONS as readonly string[]).includes(inner) ? ` (did you mean '${inner}()'?)` : '';
  at.issues.add(at.job, at.field, `must be one of ${CONDITION_LIST}, got ${describe(value)}${hint}; expressions are not supported`);
  return 'success';
}

/** The same limits as a worker's labels (README "Limits"), so that every job can fit some worker. */
function readLabels(value: unknown, at: At, templated = false): string[] {
  const items = Array.isArray(value) ? value : [value];
  if (items.length > MAX_LABELS) {
    at.issues.add(at.job, at.field, `must have at most ${MAX_LABELS} labels, got ${items.length}`);
    return [];
  }
  // Types, empty labels and NUL are reported here; the label rules below add the rest.
  const labels = readStringList(value, at);
  let ok = true;
  items.forEach((item, i) => {
    if (typeof item !== 'string' || item.trim() === '' || item.includes('\u0000')) return;
    if (templated && hasExpression(item)) return;
    const problem = labelProblem(item);
    if (problem === null) return;
    ok = false;
    at.issues.add(at.job, Array.isArray(value) ? child(at, i).field : at.field, problem);
  });
  return ok ? sortedUnique(labels) : [];
}

/**
 * weft never interprets these; it keeps them for the viewer that sent them. Their types are still
 * checked, because that viewer deserializes them strictly and a wrong one would break it on read.
 */
function readPresentation(raw: Plain, at: (field: string) => At): JobPresentation | undefined {
  if (PRESENTATION_KEYS.every((k) => isAbsent(raw[k]))) return undefined;
  if (PRESENTATION_KEYS.filter((k) => !checkDepth(raw[k], at(k))).length > 0) return undefined;
  const p: JobPresentation = { metadata: {}, ports: [], children: null, collapsed: false };
  const wrong = (field: string, expected: string) => {
    const where = at(field);
    where.issues.add(where.job, field, `must be ${expected}, got ${describe(raw[field])}`);
  };
  if (!isAbsent(raw.metadata)) {
    if (isPlainObject(raw.metadata)) p.metadata = raw.metadata;
    else wrong('metadata', 'an object');
  }
  if (!isAbsent(raw.ports)) {
    if (Array.isArray(raw.ports)) p.ports = raw.ports;
    else wrong('ports', 'a list');
  }
  if (!isAbsent(raw.children)) {
    if (Array.isArray(raw.children)) p.children = raw.children;
    else wrong('children', 'a list or null');
  }
  if (!isAbsent(raw.collapsed)) {
    if (typeof raw.collapsed === 'boolean') p.collapsed = raw.collapsed;
    else wrong('collapsed', 'true or false');
  }
  return p;
}

function readCommand(raw: Plain, keys: JobKeys, label: string, issues: Issues): string {
  const hasRun = !isAbsent(raw[keys.command]);
  const hasSteps = keys.steps !== null && !isAbsent(raw[keys.steps]);
  if (hasRun && hasSteps) {
    issues.add(label, keys.command, `has both '${keys.command}' and '${keys.steps}'; use one of them`);
    return '';
  }
  if (hasSteps) {
    return readSteps(raw[keys.steps!], { issues, job: label, field: keys.steps! }) ?? '';
  }
  if (!hasRun) {
    const what = keys.steps !== null ? `'${keys.command}' or '${keys.steps}'` : `'${keys.command}'`;
    issues.add(label, keys.command, `job has no command: add ${what}`);
    return '';
  }
  const command = readString(raw[keys.command], { issues, job: label, field: keys.command });
  if (command !== undefined && command.trim() === '') {
    issues.add(label, keys.command, 'empty command');
    return '';
  }
  return command ?? '';
}
