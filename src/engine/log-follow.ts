import type { JobState } from '../domain/model.js';
import { isTerminal } from '../domain/model.js';
import type { Engine, JobChange } from './engine.js';
import type { LogChunkView } from '../protocol/wire.js';
import { logChunkView } from './views.js';

export type FollowEvent =
  | { type: 'log'; chunk: LogChunkView }
  /** A retry started: the chunks that follow belong to this attempt and count their sequence from 0 again. */
  | { type: 'attempt'; attempt: number }
  | { type: 'end'; status: JobState; run_number: number | null };

export interface FollowOptions {
  /** Resume after this sequence of the first attempt followed (from Last-Event-ID). */
  afterSequence?: number;
  signal: AbortSignal;
  /**
   * Changes made by another process (a `weft scheduler`, a second API server) raise no in-process
   * event, so the follower also looks every pollMs.
   */
  pollMs?: number;
}

const PAGE = 500;

/**
 * Replays a job's stored chunks, then follows live ones until the job reaches a terminal state. The
 * run is fixed when following starts (the latest, or the first run once one starts).
 */
export async function* followLogs(
  engine: Engine,
  workflowId: string,
  jobId: string,
  opts: FollowOptions,
): AsyncGenerator<FollowEvent> {
  const pollMs = opts.pollMs ?? 1000;
  // Validates the ids (404) before anything is streamed.
  const target = await engine.readStore((ops) => engine.logTarget(ops, workflowId, jobId));
  let run = target?.run_number ?? null;
  let attempt = target?.attempt ?? 0;
  let after = opts.afterSequence ?? -1;

  let wake: (() => void) | null = null;
  let dirty = false;
  const onChange = (c: JobChange) => {
    if (c.workflow_id !== workflowId || c.job_id !== jobId) return;
    dirty = true;
    wake?.();
  };
  const onResync = () => {
    dirty = true;
    wake?.();
  };
  engine.events.on('job', onChange);
  engine.events.on('logs', onChange);
  engine.events.on('resync', onResync);
  // Other servers send their job and log changes only while some stream or claim here wants them.
  const unfollow = engine.followChanges();
  const onAbort = () => wake?.();
  opts.signal.addEventListener('abort', onAbort);
  try {
    while (!opts.signal.aborted) {
      dirty = false;
      const snap = await engine.readStore(async (ops) => {
        if (run === null) {
          const wf = await ops.getWorkflow(workflowId);
          if (!wf || wf.latest_run === 0) return null;
          run = wf.latest_run;
        }
        const job = await ops.getJob(workflowId, run, jobId);
        const chunks = await ops.getLogChunks({ workflow_id: workflowId, run_number: run, job_id: jobId, attempt, afterSequence: after, limit: PAGE });
        return { job, chunks };
      });
      if (snap?.job) {
        for (const c of snap.chunks) {
          after = c.sequence;
          yield { type: 'log', chunk: logChunkView(c) };
        }
        if (snap.chunks.length === PAGE) continue;
        const job = snap.job;
        if (job.attempt > attempt && job.status !== 'queued' && job.status !== 'pending') {
          attempt = job.attempt;
          after = -1;
          yield { type: 'attempt', attempt };
          continue;
        }
        if (isTerminal(job.status)) {
          yield { type: 'end', status: job.status, run_number: run };
          return;
        }
      }
      if (dirty) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pollMs);
        function done() {
          clearTimeout(timer);
          wake = null;
          resolve();
        }
        wake = done;
      });
    }
  } finally {
    engine.events.off('job', onChange);
    engine.events.off('logs', onChange);
    engine.events.off('resync', onResync);
    unfollow();
    opts.signal.removeEventListener('abort', onAbort);
  }
}
