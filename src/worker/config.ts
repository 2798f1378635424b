import path from 'node:path';
import { defaultWorkRoot } from './artifacts.js';
import { ConfigError, envNumber, type Env } from '../runtime/env.js';
import { logFormatFrom, type LogFormat } from '../runtime/logger.js';
import { defaultWorkerId } from './worker-id.js';
import { labelProblem, MAX_LABELS } from '../domain/labels.js';
import { loadWorkerToken, type WorkerToken } from './credentials.js';
import { resolveJobUser, type JobUser } from './job-user.js';

/** Settings of `weft worker`, from the environment (README "The worker: `weft worker`"). */
export interface WorkerConfig {
  serverUrl: string;
  labels: string[];
  workerId: string;
  leaseTtlSecs: number;
  heartbeatSecs: number;
  pollSecs: number;
  longPollSecs: number;
  concurrency: number;
  cancelPollSecs: number;
  killGraceSecs: number;
  logLevel: string;
  /** WEFT_TOKEN or WEFT_TOKEN_FILE: a token with the `worker` role, when the server requires tokens. */
  token: string | undefined;
  /** Which of the two gave it, and warnings about it (credentials.ts). */
  tokenSource: WorkerToken['source'];
  tokenWarnings: string[];
  /** JOB_USER: whom jobs run as; null: the worker's own user. */
  jobUser: JobUser | null;
  logFormat: LogFormat;
  /** WORK_DIR: where each attempt gets its fresh directory (README "Artifacts"). */
  workDir: string;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Reads and checks every setting; a bad value throws a ConfigError naming the variable. */
export function loadWorkerConfig(env: Env = process.env): WorkerConfig {
  const serverUrl = (env.SERVER_URL?.trim() || 'http://localhost:3000').replace(/\/+$/, '');
  let parsed: URL | null = null;
  try {
    parsed = new URL(serverUrl);
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ConfigError(`SERVER_URL="${env.SERVER_URL}" is not valid: expected an http:// or https:// URL such as http://localhost:3000`);
  }

  const labels = [
    ...new Set(
      (env.WORKER_LABELS ?? '')
        .split(',')
        .map((l) => l.trim())
        .filter((l) => l !== ''),
    ),
  ];
  if (labels.length > MAX_LABELS) throw new ConfigError(`WORKER_LABELS is not valid: at most ${MAX_LABELS} labels, got ${labels.length}`);
  for (const label of labels) {
    const problem = labelProblem(label);
    if (problem !== null) throw new ConfigError(`WORKER_LABELS is not valid: label ${JSON.stringify(label.slice(0, 40))} ${problem}`);
  }

  const rawId = env.WORKER_ID;
  let workerId: string;
  if (rawId === undefined || rawId.trim() === '') {
    workerId = defaultWorkerId();
  } else {
    workerId = rawId.trim();
    if (workerId.length > 256) throw new ConfigError(`WORKER_ID is not valid: at most 256 characters, got ${workerId.length}`);
  }

  const leaseTtlSecs = envNumber(env, 'LEASE_TTL_SECS', 30, { min: 1, max: 86_400, integer: true });
  const heartbeatSecs = envNumber(env, 'HEARTBEAT_SECS', leaseTtlSecs / 3, { min: 0, max: 86_400, exclusiveMin: true });
  if (heartbeatSecs >= leaseTtlSecs) {
    throw new ConfigError(
      `HEARTBEAT_SECS="${env.HEARTBEAT_SECS}" is not valid: it must be shorter than LEASE_TTL_SECS (${leaseTtlSecs}); under half is recommended`,
    );
  }
  const pollSecs = envNumber(env, 'POLL_SECS', 2, { min: 0, max: 3600, exclusiveMin: true });
  const longPollSecs = envNumber(env, 'LONG_POLL_SECS', 20, { min: 0, max: 60 });
  const concurrency = envNumber(env, 'CONCURRENCY', 1, { min: 1, max: 1024, integer: true });
  const cancelPollSecs = envNumber(env, 'CANCEL_POLL_SECS', 2, { min: 0, max: 3600, exclusiveMin: true });
  const killGraceSecs = envNumber(env, 'KILL_GRACE_SECS', 5, { min: 0, max: 3600 });

  const logLevel = (env.LOG_LEVEL?.trim() || 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL="${env.LOG_LEVEL}" is not valid: use one of ${LOG_LEVELS.join(', ')}`);
  }

  const { token, source: tokenSource, warnings: tokenWarnings } = loadWorkerToken(env);
  const jobUser = env.JOB_USER?.trim() ? resolveJobUser(env.JOB_USER) : null;
  const logFormat = logFormatFrom(env);

  return {
    serverUrl,
    labels,
    workerId,
    leaseTtlSecs,
    heartbeatSecs,
    pollSecs,
    longPollSecs,
    concurrency,
    cancelPollSecs,
    killGraceSecs,
    logLevel,
    logFormat,
    token,
    tokenSource,
    tokenWarnings,
    jobUser,
    workDir: workDirFrom(env),
  };
}

/** WORK_DIR, an absolute path; default `weft` under the OS temp directory. */
function workDirFrom(env: Env): string {
  const raw = env.WORK_DIR?.trim();
  if (!raw) return defaultWorkRoot();
  if (!path.isAbsolute(raw)) throw new ConfigError(`WORK_DIR="${raw}" is not valid: expected an absolute path such as /var/lib/weft/work`);
  return raw;
}
