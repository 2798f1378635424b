/**
 * Artifacts on the worker's side (README "Artifacts"): each attempt runs in a fresh directory under
 * WORK_DIR, removed afterwards; the artifacts its job's `download:` names are put there before the
 * handler runs, and the files its `artifacts:` patterns match are uploaded after it succeeds. Files
 * move as streams, hashed on the way, so a large one costs a few buffers of memory, never its size.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, lstatSync, mkdirSync, mkdtempSync, rmdirSync, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  artifactNameProblem,
  globToRegExp,
  isGlob,
  MAX_ARTIFACTS_PER_ATTEMPT,
  type ArtifactView,
} from '../domain/artifacts.js';
import type { WorkflowClient } from '../client/client.js';
import type { ArtifactDownload, ClaimedJob } from '../protocol/wire.js';

/** WORK_DIR's default: `weft` under the OS temp directory. */
export function defaultWorkRoot(): string {
  return path.join(os.tmpdir(), 'weft');
}

/** Most directory entries a pattern walk looks at before giving up (a pattern over a huge tree). */
const MAX_WALK_ENTRIES = 200_000;

/** WORK_DIRs this process has made (or found) already: the mkdir is not repeated at every attempt. */
const madeRoots = new Set<string>();

/** Refuses a WORK_DIR that is a symbolic link or another user's (under a shared /tmp someone could plant one). */
function rootProblem(root: string, st: Stats): string | null {
  if (!st.isDirectory()) return `WORK_DIR ${root} is not a directory (a symbolic link is not followed)`;
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
    return `WORK_DIR ${root} belongs to another user (uid ${st.uid}); the worker uses only a directory of its own`;
  }
  return null;
}

/**
 * Makes the attempt's fresh directory under `root` (created if missing, and refused when it is a
 * symbolic link or another user's). `owner`: JOB_USER's ids, who must be able to write there.
 *
 * The root is checked at every attempt. These are calls made in the worker's thread, not on the
 * thread pool: each is one metadata system call on WORK_DIR, some 20 µs on a local disk, where a
 * call through the thread pool costs 60 to 170 µs and two thread wake-ups, on the path of every job
 * (docs/performance.md "Sixth round"). A directory made inside a root that fails the check is removed
 * again (it is empty) before the attempt is refused.
 */
export async function makeAttemptDir(root: string, job: ClaimedJob, owner?: { uid: number; gid: number }): Promise<string> {
  const label = `${job.workflow_id}-${job.run_number}-${job.job_id}-${job.attempt}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100);
  const prefix = path.join(root, `${label}-`);
  if (!madeRoots.has(root)) {
    mkdirSync(root, { recursive: true, mode: 0o711 });
    madeRoots.add(root);
  }
  let dir: string;
  try {
    dir = mkdtempSync(prefix);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // Removed since this process made it: made again.
    mkdirSync(root, { recursive: true, mode: 0o711 });
    dir = mkdtempSync(prefix);
  }
  try {
    const problem = rootProblem(root, lstatSync(root));
    if (problem !== null) throw new Error(problem);
  } catch (err) {
    // The refusal is what the attempt reports, not a failure to tidy up after it.
    try {
      rmdirSync(dir);
    } catch {
      // left behind, empty
    }
    throw err;
  }
  if (owner) await fs.chown(dir, owner.uid, owner.gid);
  return dir;
}

/**
 * Removes the attempt's directory: one rmdir when the job left it empty (most do), the recursive walk
 * only when it did not. Through the thread pool, unlike makeAttemptDir's calls: it runs as the
 * attempt ends, while its report goes out, which must not wait for it.
 */
export async function removeAttemptDir(dir: string): Promise<void> {
  try {
    await fs.rmdir(dir);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    // Not empty (ENOTEMPTY), or anything else: the recursive removal as before.
  }
  await fs.rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** `name` joined under `dir`, refused unless it is a plain relative path that stays inside. */
export function insideDir(dir: string, name: string): string {
  const problem = artifactNameProblem(name);
  if (problem !== null) throw new Error(`artifact name "${name}" ${problem}`);
  const full = path.resolve(dir, ...name.split('/'));
  if (!full.startsWith(path.resolve(dir) + path.sep)) throw new Error(`artifact name "${name}" leads outside ${dir}`);
  return full;
}

/**
 * Fetches each of `downloads` into `dir` under its name, checking size and SHA-256; a later entry of
 * the same name replaces an earlier one (needs in `download:` order). Nothing is trusted from the
 * answer but the bytes: the name was checked where it was stored and is checked again here.
 */
export async function fetchDownloads(client: Pick<WorkflowClient, 'downloadArtifactPath'>, downloads: readonly ArtifactDownload[], dir: string, signal?: AbortSignal): Promise<void> {
  for (const d of downloads) {
    const target = insideDir(dir, d.name);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const res = await client.downloadArtifactPath(d.path, { signal });
    if (!res.body) throw new Error(`artifact "${d.name}" of job "${d.job_id}": the answer had no body`);
    const hash = createHash('sha256');
    let size = 0;
    const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
    body.on('data', (b: Buffer) => {
      hash.update(b);
      size += b.length;
    });
    // flags 'w' without following a link: the directory is fresh, only this code has written in it.
    await pipeline(body, createWriteStream(target, { mode: 0o644 }), { signal });
    const sha = hash.digest('hex');
    if (size !== d.size || sha !== d.sha256) {
      throw new Error(`artifact "${d.name}" of job "${d.job_id}" arrived as ${size} bytes with SHA-256 ${sha}; expected ${d.size} bytes with ${d.sha256}`);
    }
  }
}

/** Gives everything under `dir` (not following links) to JOB_USER, so that its job may change the files `download:` put there. */
export async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    await fs.lchown(full, owner.uid, owner.gid);
    if (e.isDirectory()) await chownTree(full, owner);
  }
}

/**
 * The files under `dir` that `patterns` match, as names (relative, `/`-separated), sorted. A plain
 * path names one file or every file under one directory; a glob is matched against every file's
 * name. Symbolic links are never followed nor uploaded (a link could point out of the directory).
 * `missing`: patterns that matched nothing.
 */
export async function matchArtifacts(dir: string, patterns: readonly string[]): Promise<{ names: string[]; missing: string[] }> {
  const files = await walk(dir);
  const names = new Set<string>();
  const missing: string[] = [];
  for (const p of patterns) {
    const before = names.size;
    let hit = false;
    if (isGlob(p)) {
      const re = globToRegExp(p);
      for (const f of files) if (re.test(f)) names.add(f), (hit = true);
    } else {
      for (const f of files) if (f === p || f.startsWith(`${p}/`)) names.add(f), (hit = true);
    }
    if (!hit && names.size === before) missing.push(p);
    if (names.size > MAX_ARTIFACTS_PER_ATTEMPT) {
      throw new Error(`the artifacts patterns match more than ${MAX_ARTIFACTS_PER_ATTEMPT} files; archive them into fewer files first`);
    }
  }
  return { names: [...names].sort(), missing };
}

async function walk(root: string): Promise<string[]> {
  const out: string[] = [];
  let seen = 0;
  const visit = async (rel: string): Promise<void> => {
    const entries = await fs.readdir(rel === '' ? root : path.join(root, ...rel.split('/')), { withFileTypes: true });
    for (const e of entries) {
      if (++seen > MAX_WALK_ENTRIES) throw new Error(`the working directory holds more than ${MAX_WALK_ENTRIES} entries; artifact patterns are not matched over so large a tree`);
      const name = rel === '' ? e.name : `${rel}/${e.name}`;
      // Dirent types come from lstat: a symbolic link is neither a file nor a directory here.
      if (e.isDirectory()) await visit(name);
      else if (e.isFile() && artifactNameProblem(name) === null) out.push(name);
    }
  };
  await visit('');
  return out;
}

/** SHA-256 and size of a file, read as a stream. */
export async function hashFile(file: string, signal?: AbortSignal): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const b of createReadStream(file, { signal, highWaterMark: 1024 * 1024 })) {
    hash.update(b as Buffer);
    size += (b as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * Uploads one file as artifact `name`: hashed first (the digest goes in a header ahead of the
 * bytes), then streamed. The file is opened without following a final symbolic link.
 */
export async function uploadFile(client: Pick<WorkflowClient, 'uploadArtifact'>, leaseId: string, name: string, file: string, signal?: AbortSignal): Promise<ArtifactView> {
  const st = await fs.lstat(file);
  if (!st.isFile()) throw new Error(`artifact "${name}": ${file} is not a regular file (symbolic links are not followed)`);
  const { sha256, size } = await hashFile(file, signal);
  const stream = createReadStream(file, { signal, highWaterMark: 1024 * 1024 });
  return client.uploadArtifact(leaseId, name, stream, sha256, { size, signal });
}

/**
 * Uploads what `job.artifacts` matches under `dir`; answers the artifacts stored and the patterns
 * that matched nothing (a warning, as in GitHub Actions' default).
 */
export async function uploadMatches(
  client: Pick<WorkflowClient, 'uploadArtifact'>,
  leaseId: string,
  patterns: readonly string[],
  dir: string,
  signal?: AbortSignal,
): Promise<{ stored: ArtifactView[]; missing: string[] }> {
  const { names, missing } = await matchArtifacts(dir, patterns);
  const stored: ArtifactView[] = [];
  for (const name of names) stored.push(await uploadFile(client, leaseId, name, insideDir(dir, name), signal));
  return { stored, missing };
}

/**
 * Uploads a stream as artifact `name`: spooled to a private file beside the attempt's directory
 * first (its digest must be known before the upload starts), which is removed afterwards.
 */
export async function uploadStream(
  client: Pick<WorkflowClient, 'uploadArtifact'>,
  leaseId: string,
  name: string,
  source: AsyncIterable<Uint8Array>,
  attemptDir: string,
  signal?: AbortSignal,
): Promise<ArtifactView> {
  const problem = artifactNameProblem(name);
  if (problem !== null) throw new Error(`artifact name "${name}" ${problem}`);
  const tmp = await fs.mkdtemp(path.join(path.dirname(attemptDir), '.upload-'));
  try {
    const file = path.join(tmp, 'data');
    await pipeline(Readable.from(source), createWriteStream(file, { flags: 'wx', mode: 0o600 }), { signal });
    return await uploadFile(client, leaseId, name, file, signal);
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
