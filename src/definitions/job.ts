/**
 * One job, read from either definition form. The two forms differ only in key names, so a single
 * reader takes the spelling table and reports issues under the key the user actually wrote.
 */
import type { JobSpec } from '../domain/types.js';
import { readBackoff } from './backoff.js';
import type { Issues } from './issues.js';
import { readSteps } from './steps.js';
import {
  type At,
  type Plain,
  checkKeys,
  isAbsent,
  readEnv,
  readInt,
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
  labels: string;
  retries: string;
  /** Spellings from the other form or from GitHub Actions, mapped to this form's key. */
  aliases: Readonly<Record<string, string>>;
}

export const CONTRACT_JOB_KEYS: JobKeys = {
  allowed: ['name', 'needs', 'run', 'steps', 'labels', 'retries', 'backoff', 'env', 'timeout_secs'],
  needs: 'needs',
  command: 'run',
  steps: 'steps',
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
  },
};

export const ARRAY_JOB_KEYS: JobKeys = {
  allowed: ['id', 'name', 'command', 'depends_on', 'required_labels', 'max_retries', 'backoff', 'env', 'timeout_secs'],
  needs: 'depends_on',
  command: 'command',
  steps: null,
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
};

/** `label` names the job in issues even when its id is unusable. */
export function readJob(raw: Plain, id: string, label: string, keys: JobKeys, issues: Issues): JobSpec {
  const at = (field: string): At => ({ issues, job: label, field });
  checkKeys(raw, keys.allowed, (key, message) => issues.add(label, key, message), keys.aliases);

  const name = isAbsent(raw.name) ? id : readString(raw.name, at('name'), { nonEmpty: true }) ?? id;
  const needs = isAbsent(raw[keys.needs]) ? [] : uniqueInOrder(readStringList(raw[keys.needs], at(keys.needs)));
  const labels = isAbsent(raw[keys.labels]) ? [] : sortedUnique(readStringList(raw[keys.labels], at(keys.labels)));
  const retries = isAbsent(raw[keys.retries]) ? 0 : readInt(raw[keys.retries], at(keys.retries), 0) ?? 0;
  const timeout = isAbsent(raw.timeout_secs) ? null : readInt(raw.timeout_secs, at('timeout_secs'), 1) ?? null;

  return {
    id,
    name,
    command: readCommand(raw, keys, label, issues),
    needs,
    labels,
    max_retries: retries,
    backoff: readBackoff(raw.backoff, at('backoff')),
    env: readEnv(raw.env, at('env')),
    timeout_secs: timeout,
  };
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
