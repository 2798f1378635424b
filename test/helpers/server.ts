import type { SecretKey } from '../../src/engine/secret-box.js';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { MIN_DEADLINE_MS } from './http.js';
import { Engine } from '../../src/engine/engine.js';
import type { FastifyInstance } from 'fastify';
import type { TokenEntry } from '../../src/domain/access.js';
import { buildApp, type AppOptions } from '../../src/http/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Reaper } from '../../src/runtime/reaper.js';
import { loadWorkflowFiles } from '../../src/runtime/server.js';
import type { NotifySettings } from '../../src/engine/notifications.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WEFT_BIN = path.join(ROOT, 'bin', 'weft');

export function tempDir(prefix = 'weft-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface InProcessServer {
  url: string;
  engine: Engine;
  store: SqliteStore;
  app: FastifyInstance;
  dir: string;
  close(): Promise<void>;
}

/**
 * A real server (real store, real HTTP on a loopback port) inside the test process. `reapIntervalMs`
 * starts the reaper; without it expiry is only found at access, as with API_ONLY.
 */
export async function startInProcess(
  opts: {
    reapIntervalMs?: number;
    corsOrigins?: string[];
    allowedHosts?: string[];
    bindHost?: string;
    bodyLimitBytes?: number;
    workflowsDir?: string;
    logPollMs?: number;
    claimSweepMs?: number;
    tokens?: TokenEntry[];
    onRoute?: AppOptions['onRoute'];
    requestTimeoutMs?: number;
    maxStreams?: number;
    /** The engine's clock (default Date.now): a test moves time itself instead of waiting for it. */
    now?: () => number;
    maxLogBytesPerAttempt?: number;
    maxArtifactBytes?: number;
    /** WEFT_SECRET_KEY, parsed (README "Secrets"). */
    secretKey?: SecretKey;
    /** Notification settings (README "Notifications"); given, the deliverer runs. */
    notify?: Partial<NotifySettings>;
  } = {},
): Promise<InProcessServer> {
  const dir = tempDir();
  const store = new SqliteStore(path.join(dir, 'weft.db'), { synchronous: 'NORMAL' });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const engine = new Engine({ store, logger, claimSweepMs: opts.claimSweepMs, now: opts.now, maxLogBytesPerAttempt: opts.maxLogBytesPerAttempt, maxArtifactBytes: opts.maxArtifactBytes, secretKey: opts.secretKey, notify: opts.notify });
  if (opts.workflowsDir) await loadWorkflowFiles(engine, opts.workflowsDir, logger);
  const app = await buildApp({
    engine,
    logger,
    corsOrigins: opts.corsOrigins,
    allowedHosts: opts.allowedHosts,
    bindHost: opts.bindHost,
    bodyLimitBytes: opts.bodyLimitBytes,
    logPollMs: opts.logPollMs ?? 200,
    tokens: opts.tokens,
    onRoute: opts.onRoute,
    requestTimeoutMs: opts.requestTimeoutMs,
    maxStreams: opts.maxStreams,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const reaper = opts.reapIntervalMs ? new Reaper(engine.housekeeping, opts.reapIntervalMs, logger) : null;
  reaper?.start();
  if (opts.notify) engine.notifications.start();
  return {
    url: `http://127.0.0.1:${port}`,
    engine,
    store,
    app,
    dir,
    async close() {
      await reaper?.stop();
      await app.close();
      await engine.notifications.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SpawnedProcess {
  proc: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `re` in the output, or rejects after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

export function spawnWeft(args: string[], env: Record<string, string | undefined>, cwd = ROOT): SpawnedProcess {
  const proc = spawn(process.execPath, [WEFT_BIN, ...args], {
    cwd,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters) w();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<number | string>((resolve) => {
    proc.on('exit', (code, signal) => {
      resolve(code ?? signal ?? -1);
      for (const w of waiters) w();
    });
  });
  return {
    proc,
    output: () => out,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    },
    waitFor(re, timeoutMs = 15_000) {
      timeoutMs = Math.max(timeoutMs, MIN_DEADLINE_MS);
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(re);
          if (m) {
            cleanup();
            resolve(m);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            cleanup();
            reject(new Error(`process exited (${proc.exitCode ?? proc.signalCode}) before printing ${re}; output:\n${out}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${re}; output:\n${out}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Spawns `weft server` and waits for its listening line. */
export async function spawnServer(env: Record<string, string | undefined>): Promise<SpawnedProcess & { url: string; port: number }> {
  const p = spawnWeft(['server'], { PORT: '0', ...env });
  const m = await p.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
  return Object.assign(p, { url: m[1]!, port: Number(m[2]) });
}

/** A temp dir with its own SQLite file and empty WORKFLOWS_DIR for spawned processes; removed after the test. */
export interface Sandbox {
  dir: string;
  workflowsDir: string;
  env: Record<string, string | undefined>;
}

/** A sandbox the caller removes itself (for suite-wide servers started in `before`). */
export function makeSandbox(prefix = 'weft-proc-'): Sandbox {
  const dir = tempDir(prefix);
  const workflowsDir = path.join(dir, 'workflows');
  fs.mkdirSync(workflowsDir);
  return {
    dir,
    workflowsDir,
    env: {
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${path.join(dir, 'weft.db')}`,
      WORKFLOWS_DIR: workflowsDir,
      // Nothing inherited from the environment running the tests may change the behaviour.
      API_ONLY: undefined,
      REAP_INTERVAL_SECS: undefined,
      CORS_ORIGINS: undefined,
      ALLOWED_HOSTS: undefined,
      WEFT_TOKENS_FILE: undefined,
      WEFT_ADMIN_TOKEN: undefined,
      WEFT_WORKER_TOKEN: undefined,
      WEFT_READ_TOKEN: undefined,
      WEFT_APPROVER_TOKEN: undefined,
      WEFT_TRIGGER_TOKEN: undefined,
      WEFT_TOKEN: undefined,
      WEFT_SECRET_KEY: undefined,
      WEFT_SECRET_KEY_FILE: undefined,
      REQUEST_TIMEOUT_SECS: undefined,
      MAX_STREAMS: undefined,
    },
  };
}

export function sandbox(t: TestContext, prefix = 'weft-proc-'): Sandbox {
  const sb = makeSandbox(prefix);
  t.after(() => fs.rmSync(sb.dir, { recursive: true, force: true }));
  return sb;
}

/** Makes sure the process is dead (SIGKILL) and reaped once the test ends, whatever happened. */
export function track<P extends SpawnedProcess>(t: TestContext, p: P): P {
  t.after(async () => {
    p.kill('SIGKILL');
    await p.exited;
  });
  return p;
}

/**
 * `weft server` in the sandbox, tracked before the wait so it is killed even when its listening line
 * never comes.
 */
export async function serverProcess(t: TestContext, sb: Sandbox, env: Record<string, string | undefined> = {}) {
  const p = track(t, spawnWeft(['server'], { PORT: '0', ...sb.env, ...env }, sb.dir));
  const m = await p.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
  return Object.assign(p, { url: m[1]!, port: Number(m[2]) });
}
