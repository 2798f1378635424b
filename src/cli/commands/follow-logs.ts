/**
 * Follows one job's log stream until the job ends, reconnecting when the connection drops (a server
 * restart, say). Each reconnect replays the stored chunks; the ones already seen are skipped by their
 * (attempt, sequence), so nothing is printed twice and nothing is lost.
 */
import { WorkflowApiError, type LogChunkView, type WorkflowClient } from '../../client/client.js';
import type { JobState } from '../../domain/types.js';
import { networkFailure } from './common.js';
import { sleep } from '../../util/sleep.js';

export interface FollowHandlers {
  onChunk(chunk: LogChunkView): void;
  /** A new attempt (a retry) started; its chunks follow. */
  onAttempt?(attempt: number): void;
  /** The connection dropped and will be retried (called once per outage). */
  onReconnecting?(reason: string): void;
}

export interface FollowOptions {
  signal?: AbortSignal;
  /** Give up after the server has been unreachable this long. */
  giveUpAfterMs?: number;
  retryEveryMs?: number;
}

/** Resolves with the job's terminal state, or null when `signal` aborted first. */
export async function followJobLogs(
  client: WorkflowClient,
  workflowId: string,
  jobId: string,
  handlers: FollowHandlers,
  opts: FollowOptions = {},
): Promise<JobState | null> {
  const giveUpAfterMs = opts.giveUpAfterMs ?? 30_000;
  const retryEveryMs = opts.retryEveryMs ?? 1000;
  const lastSeq = new Map<number, number>();
  let attempt: number | null = null;
  let outageSince: number | null = null;

  const seeAttempt = (n: number) => {
    if (attempt !== null && n > attempt) handlers.onAttempt?.(n);
    if (attempt === null || n > attempt) attempt = n;
  };

  while (!opts.signal?.aborted) {
    try {
      for await (const ev of client.streamLogs(workflowId, jobId, { signal: opts.signal })) {
        outageSince = null;
        if (ev.type === 'end') return ev.status;
        if (ev.type === 'attempt') {
          seeAttempt(ev.attempt);
          continue;
        }
        const c = ev.chunk;
        if (c.sequence <= (lastSeq.get(c.attempt) ?? -1)) continue;
        lastSeq.set(c.attempt, c.sequence);
        seeAttempt(c.attempt);
        handlers.onChunk(c);
      }
      // The server closed the stream without `end`: reconnect (after a breath, in case it keeps doing so).
      await sleep(Math.min(250, retryEveryMs), opts.signal);
    } catch (err) {
      if (opts.signal?.aborted) return null;
      if (err instanceof WorkflowApiError) throw err;
      const reason = networkFailure(err) ?? (err instanceof Error ? err.message : String(err));
      const now = Date.now();
      if (outageSince === null) {
        outageSince = now;
        handlers.onReconnecting?.(reason);
      } else if (now - outageSince > giveUpAfterMs) {
        throw err;
      }
      await sleep(retryEveryMs, opts.signal);
    }
  }
  return null;
}

