/**
 * Keeping `weft worker`'s token out of its jobs' reach (README "The worker", "Access tokens").
 *
 * A job runs as a child of the worker, so it can read `/proc/<worker pid>/environ` whenever it runs
 * as the same user: that file shows the environment the process was started with, whatever the
 * process did to its environment since. Two ways out:
 *
 * - WEFT_TOKEN_FILE: the token is read from a file at start and never is in any environment. Under
 *   JOB_USER the file (root's, mode 600) is not even readable by the jobs.
 * - WEFT_TOKEN: the worker overwrites the token in its own initial environment block at start
 *   (`scrubStartEnvironment`), so `/proc/<pid>/environ` shows `WEFT_TOKEN=****…`. Node 20 cannot
 *   exec() itself, and a re-started child would leave this process, holding the token, as the
 *   job's grandparent; overwriting the block in place leaves no process of ours holding it.
 *
 * A process above the worker (a shell that exported WEFT_TOKEN, a supervisor given it) is beyond our
 * reach: its environ still holds the token, readable by jobs of the same user. Hence WEFT_TOKEN_FILE,
 * or a systemd credential (LoadCredential=, read through WEFT_TOKEN_FILE=$CREDENTIALS_DIRECTORY/…).
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import { credentialFileWarning } from '../util/credential-file.js';
import { ConfigError, type Env } from '../runtime/env.js';

export interface WorkerToken {
  token: string | undefined;
  /** Where it came from, for the start line and for deciding to scrub. */
  source: 'WEFT_TOKEN' | 'WEFT_TOKEN_FILE' | null;
  /** Start-up warnings (a token file others may read). */
  warnings: string[];
}

/** The worker's token from WEFT_TOKEN or WEFT_TOKEN_FILE (not both); a bad value throws a ConfigError. */
export function loadWorkerToken(env: Env): WorkerToken {
  const file = env.WEFT_TOKEN_FILE?.trim() || undefined;
  const inline = env.WEFT_TOKEN?.trim() || undefined;
  if (file !== undefined && inline !== undefined) {
    throw new ConfigError('WEFT_TOKEN and WEFT_TOKEN_FILE are both set: give the token one way only (WEFT_TOKEN_FILE keeps it out of every environment)');
  }
  if (file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`WEFT_TOKEN_FILE="${file}" cannot be read: ${(err as Error).message}`);
    }
    const token = text.trim();
    // The contents are never quoted: they are (or hold) a credential.
    if (token === '') throw new ConfigError(`WEFT_TOKEN_FILE="${file}" is empty: it must hold the token (\`weft token new\` prints one)`);
    if (/\s/.test(token)) throw new ConfigError(`WEFT_TOKEN_FILE="${file}" holds more than one word: it must hold the token alone`);
    const warning = credentialFileWarning('WEFT_TOKEN_FILE', file);
    return { token, source: 'WEFT_TOKEN_FILE', warnings: warning ? [warning] : [] };
  }
  if (inline !== undefined) {
    if (/\s/.test(inline)) throw new ConfigError('WEFT_TOKEN is not valid: a token cannot contain spaces');
    return { token: inline, source: 'WEFT_TOKEN', warnings: [] };
  }
  return { token: undefined, source: null, warnings: [] };
}

/** How `scrubStartEnvironment` went. */
export type ScrubOutcome = { kind: 'scrubbed'; occurrences: number } | { kind: 'absent' } | { kind: 'failed'; reason: string };

/**
 * Overwrites every occurrence of `secret` in this process's initial environment block (what
 * `/proc/self/environ` shows) with `*`, through `/proc/self/mem`, then reads `/proc/self/environ`
 * back to make sure. Linux only; elsewhere, or where /proc is not writable, it answers `failed` and
 * the caller warns. Call it after the last read of the secret from `process.env`.
 */
export function scrubStartEnvironment(secret: string): ScrubOutcome {
  if (process.platform !== 'linux') return { kind: 'failed', reason: `${process.platform} has no /proc/self/environ to clean` };
  if (secret === '') return { kind: 'absent' };
  const needle = Buffer.from(secret, 'utf8');
  let fd: number | null = null;
  try {
    const [start, end] = environBounds();
    const block = Buffer.alloc(end - start);
    fd = fs.openSync('/proc/self/mem', 'r+');
    fs.readSync(fd, block, 0, block.length, start);
    const mask = Buffer.alloc(needle.length, '*');
    let occurrences = 0;
    for (let at = block.indexOf(needle); at !== -1; at = block.indexOf(needle, at + needle.length)) {
      fs.writeSync(fd, mask, 0, mask.length, start + at);
      occurrences++;
    }
    if (occurrences === 0) return { kind: 'absent' };
    if (fs.readFileSync('/proc/self/environ').includes(needle)) return { kind: 'failed', reason: 'the token is still in /proc/self/environ after overwriting it' };
    return { kind: 'scrubbed', occurrences };
  } catch (err) {
    return { kind: 'failed', reason: (err as Error).message };
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}

/** Where the kernel keeps this process's initial environment: fields 50 and 51 of /proc/self/stat. */
function environBounds(): [number, number] {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ');
  const start = Number(fields[50 - 3]);
  const end = Number(fields[51 - 3]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start <= 0 || end <= start) {
    throw new Error('/proc/self/stat does not tell where the environment is (a kernel before 3.5?)');
  }
  return [start, end];
}

/**
 * Before any job runs: the token leaves this process's environment, both the live one (which jobs
 * inherit) and the start-up block in /proc/<pid>/environ (which jobs of the same user can read).
 */
export function hideTokenFromJobs(token: string | undefined, source: WorkerToken['source'], log: Pick<Logger, 'warn'>): void {
  delete process.env.WEFT_TOKEN;
  if (source !== 'WEFT_TOKEN' || token === undefined) return;
  const outcome = scrubStartEnvironment(token);
  if (outcome.kind === 'failed') {
    log.warn(
      { reason: outcome.reason },
      `WEFT_TOKEN could not be removed from /proc/${process.pid}/environ: jobs running as this user can read it there; use WEFT_TOKEN_FILE, or JOB_USER (README "Access tokens")`,
    );
  }
}
