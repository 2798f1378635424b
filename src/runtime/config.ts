/**
 * Server settings from the environment (SPEC.md 4.4 plus weft's own). Every value is checked here so
 * that a typo stops the process at start with a message naming the variable, instead of a default
 * silently standing in for it.
 */
export interface ServerConfig {
  port: number;
  host: string;
  apiOnly: boolean;
  workflowsDir: string;
  corsOrigins: string[];
  reapIntervalMs: number;
  databaseUrl: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  workerOfflineAfterMs: number;
  sqliteSynchronous: 'FULL' | 'NORMAL';
  logPollMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function num(env: Env, name: string, def: number, opts: { min: number; max?: number; integer?: boolean }): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  const kind = opts.integer ? 'an integer' : 'a number';
  if (!Number.isFinite(n) || (opts.integer && !Number.isInteger(n)) || n < opts.min || (opts.max !== undefined && n > opts.max)) {
    const range = opts.max !== undefined ? ` between ${opts.min} and ${opts.max}` : ` of at least ${opts.min}`;
    throw new ConfigError(`${name}="${raw}" is not valid: expected ${kind}${range}`);
  }
  return n;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name}="${env[name]}" is not valid: use 1 to enable or leave it unset`);
}

export function loadServerConfig(env: Env = process.env): ServerConfig {
  const sync = (env.SQLITE_SYNCHRONOUS ?? 'FULL').trim().toUpperCase();
  if (sync !== 'FULL' && sync !== 'NORMAL') {
    throw new ConfigError(`SQLITE_SYNCHRONOUS="${env.SQLITE_SYNCHRONOUS}" is not valid: use FULL or NORMAL`);
  }
  return {
    port: num(env, 'PORT', 3000, { min: 0, max: 65535, integer: true }),
    host: env.HOST?.trim() || '0.0.0.0',
    apiOnly: flag(env, 'API_ONLY'),
    workflowsDir: env.WORKFLOWS_DIR?.trim() || 'workflows',
    corsOrigins: (env.CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o.length > 0),
    reapIntervalMs: num(env, 'REAP_INTERVAL_SECS', 5, { min: 0.01 }) * 1000,
    databaseUrl: env.DATABASE_URL,
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    bodyLimitBytes: num(env, 'BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024, integer: true }),
    workerOfflineAfterMs: num(env, 'WORKER_OFFLINE_SECS', 60, { min: 1 }) * 1000,
    sqliteSynchronous: sync,
    logPollMs: num(env, 'LOG_STREAM_POLL_MS', 1000, { min: 10, integer: true }),
  };
}
