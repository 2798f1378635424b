/**
 * The process launcher: a small Node process, a child of the worker, that starts the jobs' commands
 * and relays their output and exit back over its IPC channel (docs/performance.md "Real workers").
 *
 * Why a process of its own: Node's spawn forks the calling process and waits until the child has
 * exec'd, blocking its event loop meanwhile, and the fork costs in proportion to the process's memory
 * (page tables copied, then copy-on-write faults on every page it writes next). Done in the worker,
 * that capped a worker near one job per spawn time whatever its CONCURRENCY; a worker_thread moves the
 * wait but not the fork of the whole process. Here the fork is of a process a fraction of the
 * worker's size, and the worker's loop never waits for it.
 *
 * It runs in a process group of its own, out of reach of the signals a supervisor or a terminal sends
 * to the worker's group, and ignores the usual stop signals sent to it alone or to a whole cgroup (the
 * worker decides what its jobs get, and a graceful drain still needs their pipes read). It ends when
 * its channel closes: the worker exited or let it go. The groups of commands still running then are
 * SIGKILLed, as the worker does on its own exit (./shell.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { PIPE_WAIT_AFTER_EXIT_MS, type LauncherMessage, type SpawnRequest } from './launcher-wire.js';

/** Output bytes handed to the channel but not yet written to it, above which the commands' pipes are paused. */
const HIGH_WATER_BYTES = 8 * 1024 * 1024;
const LOW_WATER_BYTES = 1024 * 1024;

const children = new Map<number, ChildProcess>();
const liveGroups = new Set<number>();
let unsentBytes = 0;
let paused = false;

function send(msg: LauncherMessage, bytes = 0): void {
  if (!process.connected) return;
  unsentBytes += bytes;
  process.send!(msg, undefined, {}, () => {
    unsentBytes -= bytes;
    if (paused && unsentBytes < LOW_WATER_BYTES) {
      paused = false;
      for (const c of children.values()) for (const s of [c.stdout, c.stderr]) s?.resume();
    }
  });
  if (!paused && unsentBytes > HIGH_WATER_BYTES) {
    // A command writing faster than the worker takes it in waits on its pipe, as it did when the
    // worker read the pipe itself; nothing piles up here.
    paused = true;
    for (const c of children.values()) for (const s of [c.stdout, c.stderr]) s?.pause();
  }
}

let ownComm: string | null | undefined;
/**
 * Whether the child `pid` got as far as `exec`, read right after `spawn` returned (libuv returns only
 * once the child has exec'd or died, and reaps it later, on the event loop): a process's `comm` is
 * its parent's until exec sets it to the program's name, and a zombie keeps it. Null where /proc
 * cannot tell (another OS, a shell whose name matches ours).
 */
function commandStarted(pid: number, shell: string): boolean | null {
  try {
    ownComm ??= readFileSync('/proc/self/comm', 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (path.basename(shell).slice(0, 15) === ownComm) return null;
    return comm !== ownComm;
  } catch {
    ownComm ??= null;
    return null;
  }
}

function start(req: SpawnRequest): void {
  const { id } = req;
  let child: ChildProcess;
  try {
    child = spawn(req.file, req.args, {
      detached: true,
      ...(req.cwd !== undefined ? { cwd: req.cwd } : {}),
      env: req.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // libuv drops supplementary groups (setgroups) before switching.
      ...(req.uid !== undefined ? { uid: req.uid } : {}),
      ...(req.gid !== undefined ? { gid: req.gid } : {}),
    });
  } catch (err) {
    send({ t: 'spawned', id, pid: null, started: null });
    send({ t: 'error', id, message: (err as Error).message });
    send({ t: 'closed', id });
    return;
  }
  const pid = child.pid ?? null;
  send({ t: 'spawned', id, pid, started: pid === null ? null : commandStarted(pid, req.file) });
  if (pid !== null) liveGroups.add(pid);
  children.set(id, child);
  const streams = [child.stdout!, child.stderr!] as const;
  streams.forEach((s: Readable, i) => {
    const fd = (i + 1) as 1 | 2;
    s.on('data', (d: Buffer) => send({ t: 'data', id, fd, bytes: d }, d.length));
    if (paused) s.pause();
  });
  const streamsClosed = Promise.all(streams.map((s) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())))));
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    children.delete(id);
    send({ t: 'closed', id });
  };
  child.once('error', (e) => {
    send({ t: 'error', id, message: e.message });
    // A process that never started has no exit to wait for.
    if (pid === null) finish();
  });
  child.once('exit', (code, signal) => {
    if (pid !== null) groupMayBeGone(pid);
    // The pipes of a command that left nothing running close as it exits, seen in this turn of the
    // loop or the next: then one message says both, and the worker is woken once, not twice.
    setImmediate(() => afterExit(code, signal));
  });
  const afterExit = (code: number | null, signal: NodeJS.Signals | null) => {
    if (streams.every((s) => s.closed)) {
      done = true;
      children.delete(id);
      return send({ t: 'exit', id, code, signal, closed: true });
    }
    send({ t: 'exit', id, code, signal });
    let waitTimer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((r) => {
      waitTimer = setTimeout(r, PIPE_WAIT_AFTER_EXIT_MS);
    });
    void Promise.race([streamsClosed, waited]).then(() => {
      clearTimeout(waitTimer);
      for (const s of streams) s.destroy();
      finish();
    });
  };
}

/** Forgets `pgid` once nothing of it is alive (the worker terminates what the command left). */
function groupMayBeGone(pgid: number): void {
  const check = () => {
    try {
      process.kill(-pgid, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code !== 'EPERM';
    }
  };
  if (check()) return void liveGroups.delete(pgid);
  const timer = setInterval(() => {
    if (!check()) return;
    clearInterval(timer);
    liveGroups.delete(pgid);
  }, 1000);
  timer.unref();
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(sig, () => {});

process.on('message', (msg: SpawnRequest) => {
  if (msg !== null && typeof msg === 'object' && msg.t === 'spawn') start(msg);
});
send({ t: 'ready', id: 0 });
process.on('disconnect', () => {
  for (const g of liveGroups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  process.exit(0);
});
