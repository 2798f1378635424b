/**
 * Server settings from the environment (README "Configuration"). Every value is checked here so
 * that a typo stops the process at start with a message naming the variable, instead of a default
 * silently standing in for it.
 */
import type { TokenEntry } from '../domain/access.js';
import { ConfigError, envFlag, envNumber, type Env } from './env.js';
import { loadTokens, tokenWarnings } from './tokens.js';
import { logFormatFrom, type LogFormat } from './logger.js';
import { readFileSync } from 'node:fs';
import { parseSecretKey, SecretKeyError, type SecretKey } from '../engine/secret-box.js';
import { loadNotifyConfig, loadPublicUrl, type NotifyConfig } from './notify-config.js';

export { ConfigError } from './env.js';

export interface ServerConfig {
  port: number;
  host: string;
  apiOnly: boolean;
  workflowsDir: string;
  corsOrigins: string[];
  /** ALLOWED_HOSTS: host names accepted in `Host` besides the built-in ones (src/http/origin-guard.ts). */
  allowedHosts: string[];
  reapIntervalMs: number;
  databaseUrl: string | undefined;
  logLevel: string;
  /** LOG_FORMAT: `pretty` (pino-pretty) or `json` lines; unset, pretty on a terminal only. */
  logFormat: LogFormat;
  bodyLimitBytes: number;
  workerOfflineAfterMs: number;
  /** WORKER_RETAIN_SECS in ms: the reaper deletes workers unseen for longer that hold no lease. */
  workerRetainMs: number;
  sqliteSynchronous: 'FULL' | 'NORMAL';
  logPollMs: number;
  /** RETAIN_RUNS and RETAIN_DAYS (README "Retention"); null: unlimited. */
  retention: { retainRuns: number | null; retainDays: number | null };
  /** REQUEST_TIMEOUT_SECS in ms and MAX_STREAMS (README "Limits"). */
  requestTimeoutMs: number;
  maxStreams: number;
  /** PostgreSQL pool and timeouts (PG_POOL_MAX, PG_STATEMENT_TIMEOUT_MS, PG_CONNECT_TIMEOUT_MS); unused on SQLite. */
  postgres?: { max: number; statementTimeoutMs: number; connectTimeoutMs: number };
  /** Accepted tokens (WEFT_TOKENS_FILE, WEFT_*_TOKEN); none: authentication off. */
  tokens: TokenEntry[];
  /** Start-up warnings about the tokens file (too open), logged by the server. */
  tokenWarnings: string[];
  /** EVENTS_REPLAY_BYTES, STREAM_BACKLOG_BYTES and MAX_LOG_BYTES_PER_ATTEMPT (README "Limits"). */
  eventsReplayBytes: number;
  streamBacklogBytes: number;
  maxLogBytesPerAttempt: number;
  /** MAX_ARTIFACT_BYTES (README "Artifacts"). */
  maxArtifactBytes: number;
  /** ARTIFACTS_DIR (README "Artifacts"): artifact bytes as files there; null keeps them in the store. */
  artifactsDir: string | null;
  /** WEFT_SECRET_KEY or WEFT_SECRET_KEY_FILE (README "Secrets"); null: secrets can be neither set nor used. */
  secretKey: SecretKey | null;
  /** NOTIFY_* (README "Notifications"). */
  notify: NotifyConfig;
  /** PUBLIC_URL: where people open the dashboard; null: the address the server listens on. */
  publicUrl: string | null;
}

const MIB = 1024 * 1024;

export function loadServerConfig(env: Env = process.env): ServerConfig {
  const sync = (env.SQLITE_SYNCHRONOUS ?? 'FULL').trim().toUpperCase();
  if (sync !== 'FULL' && sync !== 'NORMAL') {
    throw new ConfigError(`SQLITE_SYNCHRONOUS="${env.SQLITE_SYNCHRONOUS}" is not valid: use FULL or NORMAL`);
  }
  return {
    port: envNumber(env, 'PORT', 3000, { min: 0, max: 65535, integer: true }),
    // Loopback unless a deployment says otherwise: anyone who reaches the API can have workers run commands.
    host: env.HOST?.trim() || '127.0.0.1',
    apiOnly: envFlag(env, 'API_ONLY'),
    workflowsDir: env.WORKFLOWS_DIR?.trim() || 'workflows',
    corsOrigins: (env.CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o.length > 0),
    allowedHosts: allowedHosts(env),
    reapIntervalMs: envNumber(env, 'REAP_INTERVAL_SECS', 5, { min: 0.01 }) * 1000,
    databaseUrl: env.DATABASE_URL,
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    logFormat: logFormatFrom(env),
    bodyLimitBytes: envNumber(env, 'BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024, integer: true }),
    workerOfflineAfterMs: envNumber(env, 'WORKER_OFFLINE_SECS', 60, { min: 1 }) * 1000,
    workerRetainMs: envNumber(env, 'WORKER_RETAIN_SECS', 604_800, { min: 1 }) * 1000,
    sqliteSynchronous: sync,
    logPollMs: envNumber(env, 'LOG_STREAM_POLL_MS', 1000, { min: 10, integer: true }),
    retention: {
      retainRuns: unlessUnset(env, 'RETAIN_RUNS', () => envNumber(env, 'RETAIN_RUNS', 0, { min: 1, integer: true })),
      retainDays: unlessUnset(env, 'RETAIN_DAYS', () => envNumber(env, 'RETAIN_DAYS', 0, { min: 0, exclusiveMin: true })),
    },
    requestTimeoutMs: Math.round(envNumber(env, 'REQUEST_TIMEOUT_SECS', 30, { min: 1, max: 3600 }) * 1000),
    maxStreams: envNumber(env, 'MAX_STREAMS', 1000, { min: 1, max: 1_000_000, integer: true }),
    postgres: {
      max: envNumber(env, 'PG_POOL_MAX', 10, { min: 2, max: 1000, integer: true }),
      statementTimeoutMs: envNumber(env, 'PG_STATEMENT_TIMEOUT_MS', 30_000, { min: 0, integer: true }),
      connectTimeoutMs: envNumber(env, 'PG_CONNECT_TIMEOUT_MS', 5_000, { min: 100, integer: true }),
    },
    tokens: loadTokens(env),
    tokenWarnings: tokenWarnings(env),
    eventsReplayBytes: envNumber(env, 'EVENTS_REPLAY_BYTES', 8 * MIB, { min: 0, integer: true }),
    streamBacklogBytes: envNumber(env, 'STREAM_BACKLOG_BYTES', 4 * MIB, { min: 16 * 1024, integer: true }),
    maxLogBytesPerAttempt: envNumber(env, 'MAX_LOG_BYTES_PER_ATTEMPT', 64 * MIB, { min: 1024, integer: true }),
    maxArtifactBytes: envNumber(env, 'MAX_ARTIFACT_BYTES', 1024 * MIB, { min: 0, integer: true }),
    artifactsDir: env.ARTIFACTS_DIR?.trim() || null,
    secretKey: secretKey(env),
    notify: loadNotifyConfig(env),
    publicUrl: loadPublicUrl(env),
  };
}

/** The key secrets are sealed with: from WEFT_SECRET_KEY, or the file WEFT_SECRET_KEY_FILE names (not both). */
function secretKey(env: Env): SecretKey | null {
  const inline = env.WEFT_SECRET_KEY?.trim();
  const file = env.WEFT_SECRET_KEY_FILE?.trim();
  if (inline && file) throw new ConfigError('WEFT_SECRET_KEY and WEFT_SECRET_KEY_FILE are both set: keep one');
  try {
    if (inline) return parseSecretKey(inline, 'WEFT_SECRET_KEY');
    if (!file) return null;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`WEFT_SECRET_KEY_FILE="${file}" cannot be read: ${(err as Error).message}`);
    }
    return parseSecretKey(text, `WEFT_SECRET_KEY_FILE="${file}"`);
  } catch (err) {
    if (err instanceof SecretKeyError) throw new ConfigError(err.message);
    throw err;
  }
}

/** Plain host names: a port, a scheme or a wildcard would never match a Host header as the user meant. */
function allowedHosts(env: Env): string[] {
  const names = (env.ALLOWED_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase().replace(/\.$/, ''))
    .filter((h) => h.length > 0);
  for (const h of names) {
    if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(h)) {
      throw new ConfigError(`ALLOWED_HOSTS entry "${h}" is not valid: list host names only (weft.example.com), without scheme, port or wildcard`);
    }
  }
  return names;
}

/** null for a setting left unset (or empty), which means "no limit"; otherwise `read` checks it. */
function unlessUnset<T>(env: Env, name: string, read: () => T): T | null {
  return env[name]?.trim() ? read() : null;
}
