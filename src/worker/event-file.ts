/**
 * The event a job's run was started with (README "Triggers and notifications"), as GitHub Actions
 * hands it to a step: a JSON file whose path is in WEFT_EVENT_PATH. The claim answer carries the
 * payload (`event`), which can be up to 1 MiB: more than one environment variable may hold on Linux
 * (128 KiB), so it travels as a file. The file sits beside the attempt's directory, not in it, so that
 * the job's `artifacts:` patterns never pick it up; it goes with the attempt.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { EVENT_PATH_ENV } from '../domain/triggers.js';
import type { ClaimedJob } from '../protocol/wire.js';

/**
 * Writes `job.event` to a fresh private directory beside `attemptDir` (readable by `owner`, JOB_USER,
 * when given) and answers the job as its handler is to see it, with WEFT_EVENT_PATH in its env, and a
 * function that removes the file; the job as it is when its run has no event.
 */
export async function withEventFile(job: ClaimedJob, attemptDir: string, owner?: { uid: number; gid: number }): Promise<{ job: ClaimedJob; remove: () => Promise<void> }> {
  if (job.event === undefined) return { job, remove: async () => {} };
  const dir = await fs.mkdtemp(path.join(path.dirname(attemptDir), '.event-'));
  const file = path.join(dir, 'event.json');
  const remove = () => fs.rm(dir, { recursive: true, force: true });
  try {
    await fs.writeFile(file, JSON.stringify(job.event), { flag: 'wx', mode: 0o600 });
    if (owner) {
      await fs.chown(dir, owner.uid, owner.gid);
      await fs.chown(file, owner.uid, owner.gid);
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { job: { ...job, env: { ...job.env, [EVENT_PATH_ENV]: file } }, remove };
}
