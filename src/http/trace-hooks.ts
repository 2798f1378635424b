import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseTraceparent, preciseNowMs, randomSpanId, randomTraceId, type SpanRecord, type SpanSink } from '../domain/trace-context.js';

/**
 * A server span per HTTP request (README "Traces (OpenTelemetry)"), registered only when tracing is
 * on. Fastify's own hooks time the request: OpenTelemetry's HTTP auto-instrumentation patches modules
 * as they are required, which an ESM process like this one only allows through a loader given on the
 * node command line (`--import`/`--experimental-loader`), and it would then load the SDK at every
 * start, tracing or not. A `traceparent` header makes the span a child of the caller's.
 */
export function registerTraceHooks(app: FastifyInstance, sink: SpanSink): void {
  const started = new WeakMap<FastifyRequest, number>();
  app.addHook('onRequest', async (req) => {
    started.set(req, preciseNowMs());
  });
  app.addHook('onResponse', async (req, reply) => {
    const startMs = started.get(req);
    if (startMs === undefined) return;
    const parent = parseTraceparent(req.headers.traceparent);
    // The caller decided not to sample this trace: its spans are not recorded anywhere, nor here.
    if (parent && !parent.sampled) return;
    const route = req.routeOptions.url;
    const status = reply.statusCode;
    const q = req.url.indexOf('?');
    const span: SpanRecord = {
      traceId: parent?.traceId ?? randomTraceId(),
      spanId: randomSpanId(),
      ...(parent ? { parentSpanId: parent.spanId } : {}),
      name: route ? `${req.method} ${route}` : req.method,
      kind: 'server',
      startMs,
      endMs: Math.max(startMs, preciseNowMs()),
      attributes: {
        'http.request.method': req.method,
        // The path only: a query string is the caller's and may hold anything.
        'url.path': q === -1 ? req.url : req.url.slice(0, q),
        'url.scheme': 'http',
        'http.response.status_code': status,
        'client.address': req.ip,
        ...(route ? { 'http.route': route } : {}),
      },
      // OpenTelemetry's HTTP conventions: a server span fails on a 5xx, not on the caller's 4xx.
      ...(status >= 500 ? { error: String(status) } : {}),
    };
    sink.export([span]);
  });
}
