import type { FastifyReply } from 'fastify';

/**
 * Tells a long-running handler that its client went away before the answer was sent (the connection
 * closed), so that it stops waiting on the client's behalf. `done()` detaches once the wait is over.
 */
export function clientGone(reply: FastifyReply): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.on('close', onClose);
  return { signal: controller.signal, done: () => reply.raw.off('close', onClose) };
}
