import http from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ErrorBody, ErrorCode } from '../protocol/errors.js';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Fastify options that cut off a client sending its request too slowly (README "Limits"). The
 * deadline covers receiving the request, headers and body, from the connection's first byte (or the
 * previous request's end on a kept-alive one); once the request is in, the answer may take as long as
 * it needs, so long-poll claims and log streams are not cut.
 */
export function requestTimeoutOptions(timeoutMs: number): { requestTimeout: number; http: http.ServerOptions } {
  return {
    requestTimeout: timeoutMs,
    http: {
      requestTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      // Node looks for late requests on this period; its default (30 s) would let one overstay by that much.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeoutMs / 4))),
    },
  };
}

/**
 * Errors Node's HTTP parser raises before any route runs (a request too slow, headers too large, a
 * malformed request line), answered in weft's error shape; then the connection is closed.
 */
export function clientErrorHandler(log: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, code, message] = describe(err);
    // A flood of these is exactly what a hostile client sends: one line each, below info.
    log.debug({ code: err.code, status }, `client error: ${message}`);
    // Node's own rule: write only when no answer has begun on this socket.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const body = JSON.stringify({ error: code, message } satisfies ErrorBody);
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

function describe(err: Error & { code?: string }): [number, ErrorCode, string] {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'the request did not arrive in time (REQUEST_TIMEOUT_SECS); send it whole and promptly'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'the request headers are larger than the server accepts'];
    default:
      return [400, 'bad_request', `the HTTP request is malformed (${err.code ?? err.message})`];
  }
}
