import type { FastifyReply } from 'fastify';

/** What clientGone answers: whether the client left, and a signal for handlers that wait. */
export interface ClientGone {
  /** Whether the connection closed before the answer was written. */
  readonly left: boolean;
  /** Aborts when the client leaves; made on first use, since most claims never wait on it. */
  readonly signal: AbortSignal;
  /** Detaches once the wait is over. */
  done(): void;
}

/**
 * Tells a long-running handler that its client went away before the answer was sent (the connection
 * closed), so that it stops waiting on the client's behalf. The AbortController is made only when a
 * handler asks for the signal: an answer-at-once claim only asks `left`, and building a controller
 * (and its signal) on every claim was a visible part of the claim's cost (docs/performance.md
 * "Fourth round").
 */
export function clientGone(reply: FastifyReply): ClientGone {
  let controller: AbortController | null = null;
  let left = false;
  const onClose = () => {
    if (reply.raw.writableFinished) return;
    left = true;
    controller?.abort();
  };
  reply.raw.on('close', onClose);
  return {
    get left() {
      return left;
    },
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (left) controller.abort();
      }
      return controller.signal;
    },
    done: () => reply.raw.off('close', onClose),
  };
}
