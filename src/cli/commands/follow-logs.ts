/**
 * Follows one job's log stream until the job ends, reconnecting when the connection drops or the
 * server answers "try again" (a restart behind a proxy, say). Each reconnect replays the stored chunks;
 * the ones already seen are skipped by their (attempt, sequence), so nothing is printed twice and
 * nothing is lost.
 */
import { WorkflowApiError, type LogChunkView, type WorkflowClient } from '../../client/index.js';
import type { JobState } from '../../domain/model.js';
import { transientFailure } from './common.js';
import { sleep } from '../../util/sleep.js';

export interface FollowHandlers {
  onChunk(chunk: LogChunkView): void;
  /** The output moves on to a later attempt (a retry); its chunks follow. Not called for the first attempt shown. */
  onAttempt?(attempt: number): void;
  /** The connection dropped and will be retried (called once per outage). */
  onReconnecting?(reason: string): void;
}

export interface FollowOptions {
  signal?: AbortSignal;
  /** Give up after the server has been unreachable (or answering 5xx/408/429) this long. */
  giveUpAfterMs?: number;
  retryEveryMs?: number;
  /**
   * Show every attempt from this one on, each once and in order. The server's stream starts at the
   * newest attempt that logged anything and moves forward from there, so attempts it never showed
   * (a retry that came and went before the stream opened, or during an outage) are fetched with
   * getLogs. Unset: start wherever the stream starts.
   */
  fromAttempt?: number;
  /** The run those earlier attempts are read from (default: the latest). */
  run?: number;
  /**
   * After the job ends `cancelled`, keep reading its stored chunks this long. The server ends the
   * stream at the cancel, but the worker learns of it only at its next heartbeat or cancellation
   * check, stops the job, and still sends what the job printed until then (docs/api.md: logs are
   * stored after a cancel). Default 0.
   */
  lateLogsMs?: number;
}

/** How often late chunks of a cancelled job are looked for. */
const LATE_POLL_MS = 250;

/**
 * How long the commands wait for a cancelled job's late lines: a `weft worker` checks for a cancel
 * every CANCEL_POLL_SECS (2 s by default) and sends output within 250 ms (README "The worker").
 */
export const CANCELLED_LATE_LOGS_MS = 3000;

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
  /** The attempt being shown; every attempt before it has been shown in full. Null before the first. */
  let current: number | null = null;
  /** The latest attempt onAttempt was called for (or the first one shown). */
  let announced: number | null = null;
  let outageSince: number | null = null;

  const emit = (c: LogChunkView) => {
    if (c.sequence <= (lastSeq.get(c.attempt) ?? -1)) return;
    lastSeq.set(c.attempt, c.sequence);
    handlers.onChunk(c);
  };
  const announce = (n: number) => {
    if (announced !== null && n > announced) handlers.onAttempt?.(n);
    if (announced === null || n > announced) announced = n;
  };
  /** Moves the output on to attempt `n`, first showing the attempts before it that were never shown. */
  const moveTo = async (n: number) => {
    if (current !== null && n <= current) return;
    const from = current === null ? Math.min(opts.fromAttempt ?? n, n) : current + 1;
    for (let k = from; k < n; k++) {
      announce(k);
      for (const c of await client.getLogs(workflowId, jobId, { run: opts.run, attempt: k })) emit(c);
      // Only now: when the fetch fails, the next connection fetches attempt k again (emit skips repeats).
      current = k;
    }
    announce(n);
    current = n;
  };

  /** Chunks stored after the stream ended, until `ms` have passed (or the signal aborts). */
  const readLate = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (!opts.signal?.aborted) {
      await sleep(Math.min(LATE_POLL_MS, Math.max(0, deadline - Date.now())), opts.signal);
      try {
        for (const c of await client.getLogs(workflowId, jobId, { run: opts.run, attempt: current ?? undefined })) {
          await moveTo(c.attempt);
          emit(c);
        }
      } catch {
        // Late lines are a courtesy: `weft logs` shows them later all the same.
      }
      if (Date.now() >= deadline) return;
    }
  };

  while (!opts.signal?.aborted) {
    try {
      for await (const ev of client.streamLogs(workflowId, jobId, { signal: opts.signal })) {
        outageSince = null;
        if (ev.type === 'end') {
          if (ev.status === 'cancelled' && (opts.lateLogsMs ?? 0) > 0) await readLate(opts.lateLogsMs!);
          return ev.status;
        }
        if (ev.type === 'attempt') {
          await moveTo(ev.attempt);
          continue;
        }
        await moveTo(ev.chunk.attempt);
        emit(ev.chunk);
      }
      // The server closed the stream without `end`: reconnect (after a breath, in case it keeps doing so).
      await sleep(Math.min(250, retryEveryMs), opts.signal);
    } catch (err) {
      if (opts.signal?.aborted) return null;
      const transient = transientFailure(err);
      // A 404 or 400 will not go away; anything else (a broken stream, a 502 from a proxy) may.
      if (err instanceof WorkflowApiError && transient === null) throw err;
      const reason = transient ?? (err instanceof Error ? err.message : String(err));
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
