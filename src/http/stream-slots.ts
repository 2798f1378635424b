import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ErrorBody } from '../protocol/errors.js';

export const DEFAULT_MAX_STREAMS = 1000;
/** What a refused stream is told to wait before trying again. */
const RETRY_AFTER_SECS = 5;

/**
 * The open server-sent-event streams of one server, up to MAX_STREAMS (README "Limits"). Each
 * holds a connection and a follower for as long as it lasts, so every streaming route takes a slot
 * before it writes anything and gives it back when its connection closes.
 */
export class StreamSlots {
  private count = 0;

  constructor(readonly max: number) {}

  get open(): number {
    return this.count;
  }

  /**
   * A slot for the stream answered by `reply`, freed when its connection closes; or, when every slot
   * is taken, a 503 `too_many_streams` sent on `reply` and null.
   */
  take(reply: FastifyReply): { release(): void } | null {
    if (this.count >= this.max) {
      void reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECS))
        .send({
          error: 'too_many_streams',
          message: `this server already serves ${this.max} streams (MAX_STREAMS); try again shortly`,
        } satisfies ErrorBody);
      return null;
    }
    this.count++;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.count--;
    };
    // However the stream ends (finished, failed, or the client went away), the connection closes.
    reply.raw.once('close', release);
    return { release };
  }
}

/**
 * A live stream ends only when its job ends or its client leaves, so a graceful shutdown must end the
 * open ones itself: otherwise closing the server waits for jobs that may run for hours. Every
 * streaming route adds its stream's controller to the set this returns, and removes it when done.
 */
export function endStreamsOnClose(app: FastifyInstance): Set<AbortController> {
  const open = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const c of open) c.abort();
  });
  return open;
}
