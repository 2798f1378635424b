/**
 * One attempt's handler run in its own fresh directory (README "Artifacts"): the needs' artifacts its
 * job's `download:` names are fetched there first, the files its `artifacts:` match uploaded after a
 * success, and the directory removed at the end. A failed download or upload fails the attempt,
 * retryably, with the reason in the job's log.
 */
import type { WorkflowClient } from '../client/client.js';
import { chownTree, fetchDownloads, makeAttemptDir, removeAttemptDir, uploadMatches } from './artifacts.js';
import type { JobRun } from './job-run.js';
import { errorText, isRetryable, normalizeOutputs, truncateError, type Outcome } from './outcome.js';
import type { JobHandler } from './worker-api.js';
import { withEventFile } from './event-file.js';

export interface AttemptPlace {
  client: Pick<WorkflowClient, 'uploadArtifact' | 'downloadArtifactPath'>;
  /** WORK_DIR. */
  workRoot: string;
  /** JOB_USER's ids, who gets the directory and what is downloaded into it. */
  owner: { uid: number; gid: number } | undefined;
}

export async function runAttempt(run: JobRun, place: AttemptPlace, handler: JobHandler): Promise<Outcome> {
  let dir: string | null = null;
  let removeEvent = async () => {};
  let stage = 'preparing its working directory';
  try {
    if (run.abandoned) throw run.controller.signal.reason;
    dir = await makeAttemptDir(place.workRoot, run.job, place.owner);
    stage = "writing its run's event to a file";
    const event = await withEventFile(run.job, dir, place.owner);
    removeEvent = event.remove;
    const signal = run.controller.signal;
    if (run.job.downloads && run.job.downloads.length > 0) {
      stage = 'downloading the artifacts of its needs';
      await fetchDownloads(place.client, run.job.downloads, dir, signal);
      if (place.owner) await chownTree(dir, place.owner);
      run.log.info({ artifacts: run.job.downloads.length }, "downloaded the artifacts of the job's needs");
    }
    stage = '';
    const returned = await handler(event.job, run.context(dir));
    const outputs = { ...run.outputs, ...normalizeOutputs(returned) };
    if (run.job.artifacts && run.job.artifacts.length > 0 && !run.abandoned) {
      stage = 'uploading its artifacts';
      const { stored, missing } = await uploadMatches(place.client, run.lease.lease_id, run.job.artifacts, dir, signal);
      if (missing.length > 0) {
        run.context(dir).log(`weft: warning: no file matched the artifacts pattern(s) ${missing.map((m) => JSON.stringify(m)).join(', ')}`, 'stderr');
      }
      run.log.info({ artifacts: stored.length, bytes: stored.reduce((n, a) => n + a.size, 0) }, "uploaded the job's artifacts");
    }
    return { ok: true, outputs };
  } catch (err) {
    if (stage === '' || run.abandoned) return { ok: false, error: truncateError(errorText(err)), retryable: isRetryable(err) };
    const error = truncateError(`the worker failed while ${stage}: ${errorText(err)}`);
    if (dir !== null) run.context(dir).log(`weft: ${error}`, 'stderr');
    run.log.error({ err: errorText(err) }, `the worker failed while ${stage}; the attempt fails (retryable)`);
    return { ok: false, error, retryable: true };
  } finally {
    // Removed behind the result rather than before it: a large tree takes a while to delete, and the
    // report (with the next claim it carries) should not wait for that.
    if (dir !== null) void removeAttemptDir(dir).catch((err: unknown) => run.log.warn({ err: errorText(err), dir }, "could not remove the attempt's directory"));
    void removeEvent().catch((err: unknown) => run.log.warn({ err: errorText(err) }, "could not remove the file of the run's event"));
  }
}
