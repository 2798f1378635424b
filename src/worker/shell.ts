/**
 * The standalone worker's job handler (README "The worker: `weft worker`"): `sh -c command` in its
 * own process group, the job's environment, stdout/stderr shipped line by line, `::set-output`
 * lines, an exit-code error ending with the stderr tail, and the whole process group killed on abort.
 *
 * The processes are forked by the worker's process launcher (./launcher.ts), never on this event
 * loop: a fork here blocked the loop for as long as it took (docs/performance.md "Real workers").
 * Everything else (the kills, the line splitting, the error) is done here as before.
 */
import { StringDecoder } from 'node:string_decoder';
import { envNamePart } from '../domain/conditions.js';
import type { ClaimedJob } from '../protocol/wire.js';
import type { Outputs } from '../domain/model.js';
import { MAX_ERROR_CHARS } from './outcome.js';
import type { JobContext, JobHandler } from './worker-api.js';
import type { JobUser } from './job-user.js';
import { launch, LauncherDiedError, prestartLauncher } from './launcher.js';

export interface ShellHandlerOptions {
  /** The shell run as `<shell> -c <command>`; default `sh`. */
  shell?: string;
  /** Working directory of the command; default the attempt's fresh directory (JobContext.workDir). */
  cwd?: string;
  /** The environment the job's variables are laid over; default `process.env`. */
  baseEnv?: NodeJS.ProcessEnv;
  /** Between SIGTERM and SIGKILL of the process group; default 5000 ms. */
  killGraceMs?: number;
  /** A line longer than this is shipped in pieces; default 32768 characters. */
  maxLineChars?: number;
  /**
   * Run commands as this user (JOB_USER; the worker must be root): its uid and gid (supplementary
   * groups dropped), with HOME, USER and LOGNAME set to its own.
   */
  user?: JobUser;
}

/** A command that did not exit 0. The message names the exit code (or signal) and ends with the stderr tail. */
export class ShellCommandError extends Error {
  override name = 'ShellCommandError';
  constructor(
    readonly exitCode: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly stderrTail: string,
  ) {
    super(formatExitError(exitCode, signal, stderrTail));
  }
}

/**
 * `command exited with code N` (or `command was killed by signal S`), then `; stderr:` and the end of
 * stderr, cut from the front so that the whole text is at most `max` characters.
 */
export function formatExitError(code: number | null, signal: string | null, stderrTail: string, max = MAX_ERROR_CHARS): string {
  const head = code !== null ? `command exited with code ${code}` : `command was killed by signal ${signal ?? 'unknown'}`;
  const tail = stderrTail.replace(/\s+$/, '');
  if (tail === '') return head.slice(0, max);
  const sep = '; stderr:\n';
  const full = head + sep + tail;
  if (full.length <= max) return full;
  const cut = '…';
  const room = max - head.length - sep.length - cut.length;
  if (room <= 0) return head.slice(0, max);
  let kept = tail.slice(tail.length - room);
  if (/^[\uDC00-\uDFFF]/.test(kept)) kept = kept.slice(1);
  return head + sep + cut + kept;
}

/** `UPSTREAM_<JOB>_<KEY>`: upper-cased, every character outside [A-Za-z0-9] becomes `_`. */
export function upstreamEnvName(jobId: string, key: string): string {
  return `UPSTREAM_${envNamePart(jobId)}_${envNamePart(key)}`;
}

/**
 * The command's environment: `base` + the job's `env` (workflow env merged with job env) +
 * `WEFT_WORKFLOW_ID`, `WEFT_JOB_ID`, `WEFT_RUN`, `WEFT_ATTEMPT`, `WEFT_UPSTREAM_OUTPUTS` (JSON) + one
 * `UPSTREAM_<JOB>_<KEY>` per upstream output. Later entries win.
 */
export function jobEnvironment(job: ClaimedJob, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const upstream = job.upstream_outputs ?? {};
  const env: NodeJS.ProcessEnv = { ...base, ...(job.env ?? {}) };
  // The worker's credential is its own: a job's command (defined by whoever wrote the workflow) does
  // not get it, nor where it is kept, unless the workflow sets them in `env` itself.
  if (job.env?.WEFT_TOKEN === undefined) delete env.WEFT_TOKEN;
  if (job.env?.WEFT_TOKEN_FILE === undefined) delete env.WEFT_TOKEN_FILE;
  env.WEFT_WORKFLOW_ID = job.workflow_id;
  env.WEFT_JOB_ID = job.job_id;
  env.WEFT_RUN = String(job.run_number ?? '');
  env.WEFT_ATTEMPT = String(job.attempt);
  env.WEFT_UPSTREAM_OUTPUTS = JSON.stringify(upstream);
  for (const upJob of Object.keys(upstream).sort()) {
    const outputs = upstream[upJob] ?? {};
    for (const key of Object.keys(outputs).sort()) env[upstreamEnvName(upJob, key)] = String(outputs[key]);
  }
  return env;
}

/**
 * Splits a byte stream into lines (without the `\n`); over-long lines come out in pieces, and `eol`
 * says whether a piece ends its line.
 */
class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  constructor(
    private readonly onLine: (line: string, eol: boolean) => void,
    private readonly maxChars: number,
  ) {}

  write(bytes: Uint8Array): void {
    this.buffer += this.decoder.write(bytes);
    let start = 0;
    for (;;) {
      const nl = this.buffer.indexOf('\n', start);
      if (nl === -1) break;
      this.emit(this.buffer.slice(start, nl));
      start = nl + 1;
    }
    this.buffer = start === 0 ? this.buffer : this.buffer.slice(start);
    while (this.buffer.length > this.maxChars) {
      this.onLine(this.buffer.slice(0, this.maxChars), false);
      this.buffer = this.buffer.slice(this.maxChars);
    }
  }

  end(): void {
    this.buffer += this.decoder.end();
    if (this.buffer !== '') this.emit(this.buffer);
    this.buffer = '';
  }

  private emit(line: string): void {
    if (line.length === 0) return this.onLine('', true);
    for (let i = 0; i < line.length; i += this.maxChars) this.onLine(line.slice(i, i + this.maxChars), i + this.maxChars >= line.length);
  }
}

const STDERR_TAIL_CHARS = 8192;

/** True while any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A signal sent to the launcher's process group also reaches a job's process forked in that instant:
 * it leaves the group only when it calls `setsid`, and libuv keeps signals blocked until just before
 * `exec`, so the pending signal kills it there. Its command never ran; the job it belongs to must
 * still run, so it is started again (a few times at most). The launcher has a group of its own, so
 * signals to the worker's group (Ctrl-C, `kill -TERM -<pgid>` from a supervisor), which used to cause
 * this when the worker forked the commands itself, no longer do.
 */
class NotStartedError extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`the job's process was killed by ${signal} before its command started`);
  }
}
const MAX_NOT_STARTED_TRIES = 10;

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Process groups of commands started here that may still have live processes. A process.exit() (a
 * third signal to `weft worker`, the end of its abort grace) skips pending timers, and the groups
 * are not ours to take down with us, so they are SIGKILLed on the way out.
 */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const g of liveGroups) killGroup(g, 'SIGKILL');
  });
}

/** @internal The process groups that would be SIGKILLed if this process exited now. */
export function liveProcessGroups(): number[] {
  return [...liveGroups];
}

/**
 * A handler running `job.command` with `sh -c`, as `weft worker` does. Resolves with the outputs set
 * by `::set-output key=value` stdout lines (`ctx.log` parses them into `ctx.outputs`); rejects with a
 * {@link ShellCommandError} on a non-zero exit, or with `ctx.signal.reason` once aborted (after the
 * process group has been killed).
 *
 * Processes the command left behind in its group after it exited are terminated too (TERM, then
 * KILL after the grace period), as CI runners do; a process that called `setsid` escapes this. If
 * this process exits, every group still alive is SIGKILLed first.
 */
export function createShellHandler(opts: ShellHandlerOptions = {}): JobHandler {
  const shell = opts.shell ?? 'sh';
  const killGraceMs = opts.killGraceMs ?? 5000;
  const maxLineChars = Math.max(1, opts.maxLineChars ?? 32 * 1024);

  const handler = async (job: ClaimedJob, ctx: JobContext): Promise<Outputs> => {
    for (let tries = 1; ; tries++) {
      try {
        return await runOnce(job, ctx);
      } catch (err) {
        const notStarted = err instanceof NotStartedError || (err instanceof LauncherDiedError && err.commandNotStarted);
        if (!notStarted || tries >= MAX_NOT_STARTED_TRIES || ctx.signal.aborted) throw err;
        ctx.logger.info({ err: err.message }, 'the job\'s process was killed before its command started (a signal to the launcher\'s process group, or to the worker\'s while the launcher started); starting it again');
      }
    }
  };
  // The Worker starts the launcher when it starts, so that the first job does not wait for it.
  return Object.assign(handler, { prepare: prestartLauncher });

  function runOnce(job: ClaimedJob, ctx: JobContext): Promise<Outputs> {
    return new Promise<Outputs>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(ctx.signal.reason);
      let stderrTail = '';
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        ctx.signal.removeEventListener('abort', onAbort);
        fn();
      };

      const env = jobEnvironment(job, opts.baseEnv ?? process.env);
      if (opts.user) Object.assign(env, { HOME: opts.user.home, USER: opts.user.name, LOGNAME: opts.user.name });
      const child = launch({
        file: shell,
        args: ['-c', job.command],
        // The attempt's own directory (README "Artifacts") unless the handler was given one.
        cwd: opts.cwd ?? ctx.workDir,
        env: definedOnly(env),
        ...(opts.user ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
      });
      /** The process group's id (the command's pid), once the launcher has forked it. */
      let pid: number | undefined;
      let started: boolean | null = null;
      let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;

      // TERM now, KILL after the grace period. The group is watched so that the KILL timer is
      // dropped once the group is gone: by then its id may belong to someone else's group. Asked
      // for before the fork's answer came, it happens as soon as the pid is known.
      let terminating = false;
      let terminateWanted = false;
      const terminate = () => {
        if (terminating) return;
        if (pid === undefined) {
          terminateWanted = true;
          return;
        }
        terminating = true;
        const pgid = pid;
        const since = Date.now();
        killGroup(pgid, 'SIGTERM');
        let watch: NodeJS.Timeout | undefined;
        let killTimer: NodeJS.Timeout | undefined;
        const forget = () => {
          clearInterval(watch);
          clearTimeout(killTimer);
          liveGroups.delete(pgid);
        };
        watch = setInterval(() => {
          if (groupAlive(pgid)) return;
          forget();
          ctx.logger.info({ pgid, after_ms: Date.now() - since }, 'process group ended after SIGTERM');
        }, Math.min(100, Math.max(10, killGraceMs / 10)));
        killTimer = setTimeout(() => {
          if (groupAlive(pgid)) {
            killGroup(pgid, 'SIGKILL');
            ctx.logger.warn({ pgid, grace_ms: killGraceMs }, 'process group still alive after the grace period; killed it (SIGKILL)');
          }
          // SIGKILL cannot be ignored; an unreaped zombie keeps the id reserved, so nothing is left to watch.
          forget();
        }, killGraceMs);
      };
      const onAbort = () => {
        ctx.logger.info({ pgid: pid, reason: (ctx.signal.reason as Error | undefined)?.message }, 'killing the process group (SIGTERM)');
        terminate();
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });

      // `::set-output` lines are picked up by ctx.log.
      const out = new LineSplitter((line) => ctx.log(line, 'stdout'), maxLineChars);
      // The tail comes from decoded lines: raw byte chunks may split a character.
      const err = new LineSplitter((line, eol) => {
        ctx.log(line, 'stderr');
        stderrTail += eol ? `${line}\n` : line;
        // Cut in big steps: slicing after every line would copy the whole tail each time.
        if (stderrTail.length > 2 * STDERR_TAIL_CHARS) stderrTail = stderrTail.slice(-STDERR_TAIL_CHARS);
      }, maxLineChars);

      child.on('spawned', (p, s) => {
        if (p === null) return;
        pid = p;
        started = s;
        trackGroup(p);
        if (terminateWanted) terminate();
      });
      child.on('data', (fd, bytes) => (fd === 1 ? out : err).write(bytes));

      child.on('error', (e) => {
        if (e instanceof LauncherDiedError) {
          // Its output ended with the launcher; a command that had already exited still gets its result.
          if (exited !== null) return;
          // The command lost its pipes: nothing would read what it prints, so it is stopped.
          if (pid !== undefined) terminate();
          ctx.logger.error({ pgid: pid, err: e.message }, "the worker's process launcher ended while the job's command ran; the attempt fails");
          return settle(() => reject(e));
        }
        // The shell itself could not be started (ENOENT, EACCES, …).
        if (pid !== undefined && !groupAlive(pid)) liveGroups.delete(pid);
        settle(() => reject(new Error(`could not start ${shell}: ${e.message}`)));
      });

      child.once('exit', (code, signal) => {
        exited = { code, signal };
        // Leftovers in the group (e.g. `sleep 100 &`) would hold our pipes open and outlive the job.
        // The launcher reads the pipes for 2 s more at most (PIPE_WAIT_AFTER_EXIT_MS).
        if (pid !== undefined) {
          if (groupAlive(pid)) terminate();
          else liveGroups.delete(pid);
        }
      });

      child.once('closed', () => {
        out.end();
        err.end();
        if (exited === null) return settle(() => reject(new Error(`could not start ${shell}: the process ended without an exit status`)));
        const { code, signal } = exited;
        if (ctx.signal.aborted) return settle(() => reject(ctx.signal.reason));
        if (signal !== null && !terminating && started === false) return settle(() => reject(new NotStartedError(signal)));
        if (code === 0) return settle(() => resolve({ ...ctx.outputs }));
        settle(() => reject(new ShellCommandError(code, signal, stderrTail.slice(-STDERR_TAIL_CHARS))));
      });
    });
  }
}

/**
 * The environment without unset entries (a `ProcessEnv` may hold `undefined`), as the launcher passes
 * it on. Built with fromEntries, which defines each key as its own property: an assignment would turn
 * a variable named `__proto__` (a workflow's env, an output's name) into a prototype and drop it.
 */
function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** The shell handler with default options. */
export const shellHandler: JobHandler = createShellHandler();
