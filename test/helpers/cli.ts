/**
 * The CLI tests' shared parts: one `weft server` per test file, and the CLI run as a real process
 * with its stdout and stderr collected apart.
 */
import { after, before, type TestContext } from 'node:test';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { client, MIN_DEADLINE_MS } from './http.js';
import { makeSandbox, spawnServer, spawnWeft, WEFT_BIN, type SpawnedProcess } from './server.js';

export interface FileServer {
  /** The server's base URL. */
  readonly url: string;
  /** An HTTP client of the server (the tests play workers and users through it). */
  readonly api: ReturnType<typeof client>;
  /** The sandbox the server and the CLI processes run in. */
  readonly dir: string;
}

/**
 * A `weft server` on its own SQLite file, started before the file's tests and killed after them (its
 * sandbox removed). Read its fields inside tests or hooks: they are set once `before` has run.
 */
export function fileServer(prefix: string): FileServer {
  let dir: string | undefined;
  let server: (SpawnedProcess & { url: string }) | undefined;
  let api: ReturnType<typeof client> | undefined;
  before(async () => {
    const sb = makeSandbox(prefix);
    dir = sb.dir;
    server = await spawnServer(sb.env);
    api = client(server.url);
  });
  after(async () => {
    server?.kill('SIGKILL');
    await server?.exited;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('fileServer: read inside a test or hook, after its `before` ran');
    return v;
  };
  return {
    get url() {
      return started(server).url;
    },
    get api() {
      return started(api);
    },
    get dir() {
      return started(dir);
    },
  };
}

export interface Finished {
  code: number | string;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they arrived. */
  output: string;
}

/**
 * Starts `weft <args>` against `server` (or whatever `env` names), killed when the test ends if still
 * running. `finished` resolves when it exits; a CLI that never exits fails the test with its output
 * (the deadline is a hang detector, far beyond any answer's time on a loaded machine).
 */
export function startCli(
  t: TestContext,
  server: FileServer,
  args: string[],
  env: Record<string, string | undefined> = {},
): SpawnedProcess & { finished: Promise<Finished> } {
  const p = spawnWeft(args, { SERVER_URL: server.url, ...env }, server.dir);
  let stdout = '';
  let stderr = '';
  p.proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  p.proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  t.after(async () => {
    p.kill('SIGKILL');
    await p.exited;
  });
  const what = () => `weft ${args.join(' ')} to exit; output:\n${p.output()}`;
  const finished = (async (): Promise<Finished> => {
    const code = await withDeadline(p.exited, 2 * MIN_DEADLINE_MS, what);
    return { code, stdout, stderr, output: p.output() };
  })();
  return Object.assign(p, { finished });
}

/** Runs `weft <args>` to its end. */
export function runCli(
  t: TestContext,
  server: FileServer,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<Finished> {
  return startCli(t, server, args, env).finished;
}

function withDeadline<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what()}`)), ms);
    }),
  ]);
}

/** `weft <args>` with `input` on its stdin, as `printf %s "$KEY" | weft secret set NAME` runs it. */
export function cliWithStdin(args: string[], input: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(process.execPath, [WEFT_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  p.stdin.end(input);
  return new Promise((resolve) => p.on('close', (code) => resolve({ code, stdout, stderr })));
}
