/**
 * JOB_USER (README "The worker"): a worker running as root runs its jobs as another user, who can
 * then read neither the worker's /proc files (its environment, its memory) nor a root-owned token
 * file, and cannot signal the worker.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { ConfigError } from '../runtime/env.js';

/** Whom a job runs as: `spawn`'s uid/gid, and what its HOME, USER and LOGNAME become. */
export interface JobUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/**
 * Looks `spec` (a user name or a numeric uid) up in the user database: `getent passwd` (which asks
 * NSS, so LDAP users resolve too), else /etc/passwd. A worker that is not root cannot switch users,
 * so JOB_USER then must name the worker's own user.
 */
export function resolveJobUser(spec: string, currentUid: number | undefined = process.getuid?.()): JobUser {
  const name = spec.trim();
  if (!/^[\w.][\w.@-]{0,63}$/.test(name)) {
    throw new ConfigError(`JOB_USER="${spec}" is not valid: expected a user name or a numeric uid`);
  }
  const entry = passwdEntry(name);
  if (entry === null) throw new ConfigError(`JOB_USER="${name}" is not valid: no such user`);
  if (currentUid === undefined) throw new ConfigError('JOB_USER is not supported on this platform');
  if (currentUid !== 0 && currentUid !== entry.uid) {
    throw new ConfigError(`JOB_USER="${name}" needs the worker to run as root to switch users (it runs as uid ${currentUid})`);
  }
  if (entry.uid === 0) throw new ConfigError(`JOB_USER="${name}" is root: name an unprivileged user for the jobs`);
  return entry;
}

function passwdEntry(name: string): JobUser | null {
  let line: string | undefined;
  try {
    line = execFileSync('getent', ['passwd', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0];
  } catch (err) {
    // Exit status 2: not found. Anything else (no getent): read the file.
    if ((err as { status?: number }).status === 2) return null;
    const numeric = /^\d+$/.test(name);
    line = fs
      .readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => {
        const f = l.split(':');
        return numeric ? f[2] === name : f[0] === name;
      });
  }
  if (!line) return null;
  const f = line.split(':');
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (f.length < 7 || !Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: f[0]!, uid, gid, home: f[5] || '/' };
}
