/**
 * Artifacts (README "Artifacts"): files a job's successful attempt uploads, by name, for later jobs of
 * the run (`download:`) and for people (`weft artifacts`, the dashboard). The rules here are shared by
 * the definition reader, the server's routes and the worker, so that a name one of them accepts the
 * others accept too.
 */

/** Most bytes one artifact may hold unless MAX_ARTIFACT_BYTES says otherwise (1 GiB). */
export const DEFAULT_MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024;

/** Bytes per stored chunk: the unit of a write and of a read, whatever the artifact's size. */
export const ARTIFACT_CHUNK_BYTES = 1024 * 1024;

/**
 * Longest artifact name (its path relative to the job's working directory), in characters. URL-encoded
 * it must still fit the router's 512 characters a path segment.
 */
export const MAX_ARTIFACT_NAME = 255;

/** Most `artifacts:` patterns one job may list. */
export const MAX_ARTIFACT_PATTERNS = 100;

/** Most files one attempt may upload (a glob matching a whole tree is refused past this). */
export const MAX_ARTIFACTS_PER_ATTEMPT = 1000;

/** What a job's definition says about artifacts; absent keys are empty lists. */
export interface ArtifactSpec {
  /** Paths or globs, relative to the working directory, uploaded after the command succeeds. */
  paths: string[];
  /** Needs whose artifacts are put into the working directory before the command runs. */
  download: string[];
}

/** One stored artifact as the API lists it. */
export interface ArtifactView {
  job_id: string;
  name: string;
  size: number;
  sha256: string;
  created_at_ms: number;
}

/**
 * Why `name` is no usable artifact name, or null when it is. A name is a relative path with `/`
 * separators whose every segment is a plain file name: no `..` or `.` segment, no empty segment (so
 * no leading `/`, no `//`), no backslash (a separator on Windows), no control character or NUL, at
 * most MAX_ARTIFACT_NAME characters. Joined under any directory it stays inside that directory.
 */
export function artifactNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_ARTIFACT_NAME) return `must be at most ${MAX_ARTIFACT_NAME} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain control characters';
  if (name.includes('\\')) return 'must use / as its separator, not \\';
  if (name.startsWith('/')) return 'must be a path relative to the working directory, not an absolute one';
  for (const seg of name.split('/')) {
    if (seg === '') return 'must not contain an empty path segment (// or a trailing /)';
    if (seg === '.' || seg === '..') return `must not contain a "${seg}" segment`;
  }
  return null;
}

/**
 * Why `pattern` (an `artifacts:` entry) is unusable, or null. The same rules as a name, except that
 * glob characters (`*`, `?`, `[...]`, `**`) are allowed: a pattern can never reach above the working
 * directory.
 */
export function artifactPatternProblem(pattern: string): string | null {
  return artifactNameProblem(pattern);
}

/** Whether a pattern has glob characters (a plain path names one file or one directory). */
export function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/**
 * The pattern as a regular expression over names: `**` matches any number of segments (none
 * included), `*` anything but `/`, `?` one character but `/`, `[...]` a class. Anchored at both ends.
 */
export function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        const slash = pattern[i + 2] === '/';
        re += slash ? '(?:[^/]*/)*' : '.*';
        i += slash ? 2 : 1;
      } else re += '[^/]*';
    } else if (ch === '?') re += '[^/]';
    else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) re += '\\[';
      else {
        const body = pattern.slice(i + 1, end).replace(/\\/g, '\\\\');
        re += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else re += ch.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Whether `sha` is a lowercase hex SHA-256 digest. */
export function isSha256(sha: string): boolean {
  return /^[0-9a-f]{64}$/.test(sha);
}

/** A size as people read it (`512 B`, `1.5 MiB`, `20 GiB`), for the CLI's and the dashboard's artifact lists. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  do {
    v /= 1024;
    u++;
  } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}
