/**
 * At LOG_LEVEL debug (or trace), one log line per request once it is answered: its request id (the
 * logger's `reqId`), method, route pattern, path, status, time taken and, with tokens on, the token's
 * name (bound by src/http/auth.ts; the token itself never). Off at info and above, where workers'
 * constant claims and heartbeats would drown every other line.
 *
 * The line is written when the connection's response closes, not from onResponse, so that answers
 * Fastify does not see end (event streams, whose replies are written by hand) and requests the
 * client gave up on are logged too. The query string is left out: it is the caller's text, and the
 * route pattern and path say what was asked.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/** Must be registered before the auth hook: a request refused there runs no later onRequest hook. */
export function registerRequestLog(app: FastifyInstance, logger: Logger): void {
  if (!logger.isLevelEnabled('debug')) return;
  app.addHook('onRequest', async (req, reply) => {
    reply.raw.once('close', () => {
      const path = req.url.split('?', 1)[0]!;
      const status = reply.raw.statusCode;
      // Read now, not when the request came: the auth hook binds the token's name to req.log meanwhile.
      req.log.debug(
        {
          method: req.method,
          route: req.routeOptions.url ?? null,
          path,
          status,
          response_time_ms: Math.round(reply.elapsedTime * 100) / 100,
          // The client went away before the whole answer was written.
          ...(reply.raw.writableFinished ? {} : { aborted: true }),
        },
        `${req.method} ${path} ${status}`,
      );
    });
  });
}
