/**
 * Everything the bench starts (servers, load generators, temp dirs, databases) is registered here the
 * moment it exists, so that one place can undo it: `cleanup.runAll()` at the end or on error/signal,
 * and `cleanup.runSync()` from process 'exit' as the last resort when the async path never ran.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DagEvent, FromChild, LoadgenConfig, LoadgenResult, ToChild } from './protocol.js';
import { errorMessage, now } from './util.js';

export const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_DIR = path.resolve(BENCH_DIR, '..');

interface Task {
  name: string;
  run: () => Promise<void>;
  sync?: () => void;
  done: boolean;
}

class Cleanup {
  private readonly tasks: Task[] = [];
  private closing = false;

  /**
   * Registers an undo step; the returned function runs it now (once) and forgets it. Once shutdown
   * has begun, whatever the still-running scenario code creates is undone at once and the scenario
   * is stopped with an error, so that it cannot keep starting servers behind the cleanup's back.
   */
  add(name: string, run: () => Promise<void>, sync?: () => void): () => Promise<void> {
    if (this.closing) {
      sync?.();
      throw new Error(`shutting down: "${name}" undone at once`);
    }
    const task: Task = { name, run, done: false, ...(sync ? { sync } : {}) };
    this.tasks.push(task);
    return async () => {
      if (task.done) return;
      task.done = true;
      this.tasks.splice(this.tasks.indexOf(task), 1);
      await task.run();
    };
  }

  /** Newest first, so a database is dropped only after the server using it has stopped. */
  async runAll(): Promise<void> {
    this.closing = true;
    while (this.tasks.length > 0) {
      const task = this.tasks.pop()!;
      if (task.done) continue;
      task.done = true;
      try {
        await task.run();
      } catch (err) {
        process.stderr.write(`bench: cleanup "${task.name}" failed: ${errorMessage(err)}\n`);
        task.sync?.();
      }
    }
  }

  runSync(): void {
    while (this.tasks.length > 0) {
      const task = this.tasks.pop()!;
      if (task.done || !task.sync) continue;
      task.done = true;
      try {
        task.sync();
      } catch {
        // Nothing more can be done from an exiting process.
      }
    }
  }
}

export const cleanup = new Cleanup();

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function exited(child: ChildProcess): Promise<void> {
  return alive(child) ? new Promise((resolve) => child.once('exit', () => resolve())) : Promise.resolve();
}

/** SIGTERM (a weft server then closes its store cleanly), SIGKILL if it is still there after graceMs. */
async function terminate(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (!alive(child)) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => alive(child) && child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

/** Registers a child with the cleanup: SIGTERM then SIGKILL at the end, SIGKILL from the exit path. */
export function trackChild(child: ChildProcess, name: string): () => Promise<void> {
  return cleanup.add(
    name,
    () => terminate(child),
    () => {
      if (alive(child) && child.pid) process.kill(child.pid, 'SIGKILL');
    },
  );
}

export interface TempDir {
  path: string;
  remove(): Promise<void>;
}

export function makeTempDir(prefix: string): TempDir {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const rm = () => fs.rmSync(dir, { recursive: true, force: true });
  return { path: dir, remove: cleanup.add(`remove ${dir}`, async () => rm(), rm) };
}

export interface ServerHandle {
  origin: string;
  pid: number;
  /** Last lines of the server's output, for error reports. */
  tail(): string;
  stop(): Promise<void>;
}

/**
 * Spawns a server and waits for its start line. stdout/stderr are drained continuously (a full pipe
 * would block the server) and only a short tail is kept.
 */
async function startServer(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<ServerHandle> {
  const child = spawn(process.execPath, args, { cwd: REPO_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = trackChild(child, name);
  const lines: string[] = [];
  const tail = () => lines.join('\n');
  let buffered = '';
  let settle: { resolve: (origin: string) => void; reject: (err: Error) => void } | null = null;
  const started = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  const onData = (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
      if (lines.length > 40) lines.shift();
      const m = /listening on (http:\/\/[^\s"]+)/.exec(line);
      if (m) settle?.resolve(m[1]!);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  child.once('exit', (code, signal) => settle?.reject(new Error(`${name} exited (${signal ?? code}) before listening:\n${tail()}`)));
  child.once('error', (err) => settle?.reject(err));
  const timer = setTimeout(() => settle?.reject(new Error(`${name} printed no listening line within 30 s:\n${tail()}`)), 30_000);
  try {
    const url = await started;
    return { origin: url, pid: child.pid!, tail, stop };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
    // Later exits are the caller's business (stop()); the start promise is settled already.
    settle = null;
  }
}

/** Settings a developer may have exported for their own server; the bench measures `npm start` defaults. */
const WEFT_ENV = [
  'PORT', 'HOST', 'DATABASE_URL', 'WORKFLOWS_DIR', 'API_ONLY', 'REAP_INTERVAL_SECS', 'CORS_ORIGINS', 'LOG_LEVEL',
  'BODY_LIMIT_BYTES', 'WORKER_OFFLINE_SECS', 'SQLITE_SYNCHRONOUS', 'LOG_STREAM_POLL_MS',
];

export async function startWeft(databaseUrl: string, workflowsDir: string, extraEnv: Record<string, string> = {}): Promise<ServerHandle> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of WEFT_ENV) delete env[k];
  Object.assign(env, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl, WORKFLOWS_DIR: workflowsDir }, extraEnv);
  // BENCH_SERVER_NODE_ARGS (say `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the server under test.
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.trim().split(/\s+/).filter(Boolean) ?? [];
  return startServer('weft server', [...nodeArgs, weftBin, 'server'], env);
}

/**
 * Starts `weft worker` (of the snapshot) against `origin` and waits for its start line. Its output is
 * drained and only a short tail kept, as for servers.
 */
export async function startWorker(origin: string, env: Record<string, string>): Promise<ServerHandle> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['SERVER_URL', 'WEFT_TOKEN', 'LABELS', 'CONCURRENCY', 'WORK_DIR', 'LONG_POLL_SECS', 'LOG_LEVEL']) delete base[k];
  // BENCH_WORKER_NODE_ARGS (say `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the workers, as BENCH_SERVER_NODE_ARGS the server.
  const nodeArgs = process.env.BENCH_WORKER_NODE_ARGS?.trim().split(/\s+/).filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, weftBin, 'worker'], { cwd: REPO_DIR, env: { ...base, SERVER_URL: origin, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = trackChild(child, 'weft worker');
  const lines: string[] = [];
  const tail = () => lines.join('\n');
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`weft worker printed no start line within 30 s:\n${tail()}`)), 30_000);
      const onData = (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (!line) continue;
          lines.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
          if (lines.length > 40) lines.shift();
          if (/weft worker \S+ started/.test(line)) {
            clearTimeout(timer);
            resolve();
          }
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`weft worker exited (${signal ?? code}) before starting:\n${tail()}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { origin, pid: child.pid!, tail, stop };
}

export async function startCeiling(jobs: number): Promise<ServerHandle> {
  return startServer('ceiling server', ['--import', 'tsx', path.join(BENCH_DIR, 'ceiling.ts')], {
    ...process.env,
    CEILING_JOBS: String(jobs),
  });
}

export interface ProcMemory {
  rss_bytes: number | null;
  hwm_bytes: number | null;
}

/** VmRSS (now) and VmHWM (peak) of a process, from /proc; null where /proc is not available. */
export function readMemory(pid: number): ProcMemory {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : null;
    };
    return { rss_bytes: kb('VmRSS'), hwm_bytes: kb('VmHWM') };
  } catch {
    return { rss_bytes: null, hwm_bytes: null };
  }
}

let clockTicks: number | null = null;

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat; null where that
 * cannot be read. Counted in clock ticks (usually 10 ms), so read it over seconds, not milliseconds.
 */
export function readCpuMs(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 of these.
    const ticks = Number(fields[11]) + Number(fields[12]);
    clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    return Number.isFinite(ticks) ? (ticks * 1000) / clockTicks : null;
  } catch {
    return null;
  }
}

/** The load-generator children of one measurement. */
export class Loadgens {
  private constructor(
    private readonly children: ChildProcess[],
    private readonly stops: Array<() => Promise<void>>,
    private readonly inbox: Array<(msg: FromChild, index: number) => void>,
  ) {}

  /** Forks one child per config and resolves once every child has registered its workers. */
  static async start(configs: LoadgenConfig[], onEvents?: (events: DagEvent[]) => void): Promise<Loadgens> {
    const children: ChildProcess[] = [];
    const stops: Array<() => Promise<void>> = [];
    const inbox: Array<(msg: FromChild, index: number) => void> = [];
    const set = new Loadgens(children, stops, inbox);
    const ready = configs.map((config, index) => {
      const child = fork(path.join(BENCH_DIR, 'loadgen.ts'), [], {
        cwd: REPO_DIR,
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      stops.push(trackChild(child, `load generator ${index}`));
      child.on('message', (msg: FromChild) => {
        if (msg.type === 'events') onEvents?.(msg.events);
        for (const fn of [...inbox]) fn(msg, index);
      });
      child.send({ type: 'start', config } satisfies ToChild);
      return set.await(index, 'ready', 120_000);
    });
    try {
      await Promise.all(ready);
    } catch (err) {
      await set.close();
      throw err;
    }
    return set;
  }

  /** Waits for one message type from one child; a fatal message or an early exit rejects. */
  private await<T extends FromChild['type']>(index: number, type: T, timeoutMs: number): Promise<Extract<FromChild, { type: T }>> {
    const child = this.children[index]!;
    return new Promise((resolve, reject) => {
      const done = () => {
        this.inbox.splice(this.inbox.indexOf(listener), 1);
        child.off('exit', onExit);
        clearTimeout(timer);
      };
      const listener = (msg: FromChild, from: number) => {
        if (from !== index) return;
        if (msg.type === type) {
          done();
          resolve(msg as Extract<FromChild, { type: T }>);
        } else if (msg.type === 'fatal') {
          done();
          reject(new Error(`load generator ${index}: ${msg.message}`));
        }
      };
      const onExit = (code: number | null, signal: string | null) => {
        done();
        reject(new Error(`load generator ${index} exited (${signal ?? code}) while waiting for "${type}"`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`load generator ${index}: no "${type}" within ${timeoutMs} ms`));
      }, timeoutMs);
      this.inbox.push(listener);
      child.once('exit', onExit);
    });
  }

  /**
   * Starts every child's loops at (nearly) the same moment and collects their results. Loops start
   * no new job after `budgetMs`; a child that has not answered 90 s after that is given up on.
   */
  async go(budgetMs: number): Promise<LoadgenResult[]> {
    const deadlineAt = now() + budgetMs;
    const results = this.children.map((_, i) => this.await(i, 'result', budgetMs + 90_000));
    for (const child of this.children) child.send({ type: 'go', deadlineAt } satisfies ToChild);
    return (await Promise.all(results)).map((m) => m.result);
  }

  stop(): void {
    for (const child of this.children) if (child.connected) child.send({ type: 'stop' } satisfies ToChild);
  }

  async close(): Promise<void> {
    for (const child of this.children) if (child.connected) child.disconnect();
    await Promise.all(this.stops.map((stop) => stop()));
  }
}

export interface BuildOutcome {
  /** Where the server runs from. */
  bin: string;
  /** tsc's exit code; non-zero means type errors (tsc still writes its output). */
  exit_code: number | null;
  ms: number;
  output_tail: string;
}

/**
 * Compiles src/ into a private snapshot (a temp dir holding bin/weft, dist/, a copy of package.json and
 * a link to node_modules), and every weft server of the run starts from it. The repository's own dist/
 * is left alone: another `npm run build` (a concurrent `npm test`, say) may rewrite it at any moment,
 * which would otherwise give different rows of one run different code, and a rewrite of ours could
 * break someone else's running tests.
 */
export function buildSnapshot(): BuildOutcome {
  const t0 = Date.now();
  const dir = makeTempDir('weft-bench-build-').path;
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(path.join(REPO_DIR, 'bin', 'weft'), path.join(dir, 'bin', 'weft'));
  // src/version.ts reads ../package.json, and "type": "module" there makes dist/*.js ES modules.
  fs.copyFileSync(path.join(REPO_DIR, 'package.json'), path.join(dir, 'package.json'));
  fs.symlinkSync(path.join(REPO_DIR, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const tsc = path.join(REPO_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(
    process.execPath,
    [tsc, '-p', 'tsconfig.json', '--outDir', path.join(dir, 'dist'), '--declaration', 'false', '--sourceMap', 'false'],
    { cwd: REPO_DIR, encoding: 'utf8', timeout: 300_000 },
  );
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim().split('\n').slice(-15).join('\n');
  return { bin: path.join(dir, 'bin', 'weft'), exit_code: r.status, ms: Date.now() - t0, output_tail: output };
}

let weftBin = path.join(REPO_DIR, 'bin', 'weft');

/** The bin/weft every later start runs (the snapshot's, once useWeftBin was called). */
export function weftBinPath(): string {
  return weftBin;
}

/** Makes every later startWeft run this bin/weft (the snapshot's) instead of the repository's. */
export function useWeftBin(bin: string): void {
  weftBin = bin;
}
