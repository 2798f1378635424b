/**
 * The messages between a worker and its process launcher (./launcher.ts, ./launcher-main.ts): the
 * worker asks for a command to be started; the launcher answers with its pid, its output as it comes,
 * how it exited, and when its pipes have closed. Each message names the request it belongs to.
 */

/** Worker → launcher: start `file args…` in a process group of its own (docs/performance.md "Real workers"). */
export interface SpawnRequest {
  t: 'spawn';
  id: number;
  file: string;
  args: string[];
  /** Unset: the launcher's, which is the worker's. */
  cwd?: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
}

export type LauncherMessage =
  /** The launcher is up and reads requests (id 0): a launcher that dies before it said so started nothing. */
  | { t: 'ready'; id: 0 }
  /**
   * The process was forked. `pid` null: it could not be (an `error` follows). `started`: whether it
   * got as far as `exec` (see commandStarted in ./launcher-main.ts); null where that cannot be told.
   */
  | { t: 'spawned'; id: number; pid: number | null; started: boolean | null }
  /** Bytes the command wrote; `fd` 1 is stdout, 2 stderr. */
  | { t: 'data'; id: number; fd: 1 | 2; bytes: Uint8Array }
  /** The command could not be started (ENOENT, EACCES, a missing cwd, …). */
  | { t: 'error'; id: number; message: string }
  /**
   * The command exited; its pipes may still be held open by what it left in its group. `closed`:
   * they had closed already, and nothing more comes for this request (no `closed` message follows).
   */
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null; closed?: true }
  /** Its pipes closed (or were given up on 2 s after the exit): nothing more comes for this request. */
  | { t: 'closed'; id: number };

/** How long after a command's exit its pipes are still read (leftovers in its group may hold them). */
export const PIPE_WAIT_AFTER_EXIT_MS = 2000;
