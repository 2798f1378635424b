/**
 * The worker's side of its process launcher (./launcher-main.ts, docs/performance.md "Real workers"):
 * one launcher process per worker process, started on first use (or by {@link prestartLauncher}),
 * shared by every shell handler, and started again if it dies. A job's command is asked for with
 * {@link launch}; what comes back is a {@link LaunchedProcess}.
 *
 * The launcher does not keep this process alive: its channel holds the event loop only while a
 * command runs, as the command's own pipes used to.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { LauncherMessage, SpawnRequest } from './launcher-wire.js';

export interface LaunchedEvents {
  /** The process was forked (`pid` null: it could not be; an `error` follows). */
  spawned: [pid: number | null, started: boolean | null];
  data: [fd: 1 | 2, bytes: Uint8Array];
  /** It could not be started, or the launcher died before it ended. */
  error: [err: Error];
  exit: [code: number | null, signal: NodeJS.Signals | null];
  /** Nothing more comes: the pipes closed, or the launcher died. */
  closed: [];
}

/** A command started through the launcher; events come in the order of {@link LaunchedEvents}. */
export class LaunchedProcess extends EventEmitter<LaunchedEvents> {
  pid: number | null | undefined = undefined;
  constructor(readonly id: number) {
    super();
  }
}

/**
 * Thrown (as an `error` event) for each command in flight when the launcher process ends.
 * `commandNotStarted`: the launcher ended before it read any request, so the command never ran (a
 * signal to the worker's process group meets the launcher's own fork before it moved to a group of
 * its own, as it did the commands' when the worker forked them; see NotStartedError in ./shell.ts).
 */
export class LauncherDiedError extends Error {
  override name = 'LauncherDiedError';
  constructor(
    message: string,
    readonly commandNotStarted: boolean,
  ) {
    super(message);
  }
}

type Options = Omit<SpawnRequest, 't' | 'id'>;

let current: { child: ChildProcess; pending: Map<number, LaunchedProcess>; ready: boolean; died: (why: string) => void } | null = null;
let nextId = 1;
let exitHookInstalled = false;

/** The launcher's script and the Node arguments it needs: from src/ (under tsx), the TypeScript file. */
function entry(): { script: string; execArgv: string[] } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    return { script: fileURLToPath(new URL('./launcher-main.ts', here)), execArgv: ['--import', import.meta.resolve('tsx')] };
  }
  return { script: fileURLToPath(new URL('./launcher-main.js', here)), execArgv: [] };
}

function startLauncher(): NonNullable<typeof current> {
  const { script, execArgv } = entry();
  const child = fork(script, [], {
    execArgv,
    // Nothing of the worker's environment (its credential included): every command gets its own, whole.
    env: {},
    // A process group of its own: a signal to the worker's group (Ctrl-C, a supervisor's
    // `kill -TERM -<pgid>`) is the worker's to act on, and no longer meets a command's process
    // forked in that instant, before it moved to a group of its own (./shell.ts, NotStartedError).
    detached: true,
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const pending = new Map<number, LaunchedProcess>();
  const state = { child, pending, ready: false, died: (why: string) => died(why) };
  child.unref();
  child.channel?.unref();
  const closed = (p: LaunchedProcess) => {
    settle(state, p.id);
    p.emit('closed');
  };
  child.on('message', (msg: LauncherMessage) => {
    if (msg.t === 'ready') {
      state.ready = true;
      return;
    }
    const p = pending.get(msg.id);
    if (!p) return;
    switch (msg.t) {
      case 'spawned':
        p.pid = msg.pid;
        p.emit('spawned', msg.pid, msg.started);
        return;
      case 'data':
        p.emit('data', msg.fd, msg.bytes);
        return;
      case 'error':
        p.emit('error', new Error(msg.message));
        return;
      case 'exit':
        p.emit('exit', msg.code, msg.signal);
        // Its pipes had closed already: the same as a `closed` message after it.
        if (msg.closed) closed(p);
        return;
      case 'closed':
        closed(p);
        return;
    }
  });
  let dead = false;
  const died = (why: string) => {
    if (dead) return;
    dead = true;
    if (current === state) current = null;
    const left = [...pending.values()];
    pending.clear();
    child.channel?.unref();
    const notStarted = !state.ready;
    // On a later turn: a send that failed at once must not have its job's handler start the next
    // job (and the next launcher) before this loop has even seen the signals or exits behind it.
    setImmediate(() => {
      for (const p of left) {
        const detail = notStarted ? 'before it started the command' : 'while the command ran';
        p.emit('error', new LauncherDiedError(`the worker's process launcher ${why} ${detail}`, notStarted));
        p.emit('closed');
      }
    });
  };
  const ended = () =>
    child.signalCode ? `was killed by ${child.signalCode}` : child.exitCode !== null ? `exited with code ${child.exitCode}` : 'closed its channel';
  // The channel closes after the last message it carried has been read ('exit' may come before that).
  child.once('disconnect', () => died(ended()));
  // 'on', not 'once': a second error event without a listener would throw in the worker.
  child.on('error', (err) => {
    died(`failed (${err.message})`);
    child.kill('SIGKILL');
  });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Its channel closing ends it anyway; this is for a process.exit() with the channel still open.
    process.on('exit', () => current?.child.kill('SIGKILL'));
  }
  return state;
}

function settle(state: NonNullable<typeof current>, id: number): void {
  state.pending.delete(id);
  if (state.pending.size === 0) state.child.channel?.unref();
}

/** Starts the launcher now, so that the first job does not wait for a Node process to boot. */
export function prestartLauncher(): void {
  current ??= startLauncher();
}

/** Starts `opts.file opts.args…` through the launcher. */
export function launch(opts: Options): LaunchedProcess {
  const state = (current ??= startLauncher());
  const id = nextId++;
  const p = new LaunchedProcess(id);
  state.pending.set(id, p);
  if (state.pending.size === 1) state.child.channel?.ref();
  const req: SpawnRequest = { t: 'spawn', id, ...opts };
  state.child.send(req, (err) => {
    // The channel is gone (EPIPE): so is the launcher, whatever the exit event says later.
    if (err) state.died(`could not be reached (${err.message})`);
  });
  return p;
}

/** @internal The launcher's pid, if one runs. */
export function launcherPid(): number | undefined {
  return current?.child.pid;
}

/** @internal Ends the launcher (it kills what still runs); the next launch starts a new one. */
export async function stopLauncher(): Promise<void> {
  const state = current;
  if (!state) return;
  current = null;
  if (state.child.exitCode !== null || state.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => state.child.once('exit', () => r()));
  // Unreferenced, its exit would not keep this process waiting for it.
  state.child.ref();
  state.child.disconnect();
  await exited;
}
