import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifySchema, type RouteOptions } from 'fastify';
import cors from '@fastify/cors';
import { fastifySSE } from '@fastify/sse';
import type { Logger } from 'pino';
import type { Engine } from '../engine/engine.js';
import { registerErrorHandling } from './errors.js';
import { validatorCompiler } from './validation.js';
import { workflowRoutes } from './routes/workflows.js';
import { workerRoutes } from './routes/workers.js';
import { jobRoutes } from './routes/jobs.js';
import { batchRoutes } from './routes/batches.js';
import { logRoutes } from './routes/logs.js';
import { artifactRoutes } from './routes/artifacts.js';
import { secretRoutes } from './routes/secrets.js';
import { triggerRoutes } from './routes/triggers.js';
import { notificationRoutes } from './routes/notifications.js';
import { runRoutes } from './routes/runs.js';
import { eventRoutes } from './routes/events.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { LiveEvents } from '../engine/live-events.js';
import { registerOpenApi } from './openapi.js';
import { metricsRoutes } from './routes/metrics.js';
import { appMetrics } from './metrics.js';
import { TokenTable, type TokenEntry } from '../domain/access.js';
import { registerAuth } from './auth.js';
import { originAllowed, registerOriginGuard } from './origin-guard.js';
import { registerRequestLog } from './request-log.js';
import type { ErrorBody } from '../protocol/errors.js';
import { HealthAnswer, ReadyAnswer } from '../protocol/wire.js';
import { clientErrorHandler, DEFAULT_REQUEST_TIMEOUT_MS, requestTimeoutOptions } from './connection-limits.js';
import { parseJsonBody } from './json-body.js';
import { DEFAULT_MAX_STREAMS, StreamSlots } from './stream-slots.js';
import { registerTraceHooks } from './trace-hooks.js';
import type { SpanSink } from '../domain/trace-context.js';

export interface AppOptions {
  engine: Engine;
  logger: Logger;
  /** CORS_ORIGINS: allowed origins (`*`: all); undefined or empty: the default of src/http/origin-guard.ts. */
  corsOrigins?: string[];
  /** ALLOWED_HOSTS: host names accepted besides the built-in ones (src/http/origin-guard.ts). */
  allowedHosts?: string[];
  /** HOST, the address the server binds: a Host header naming it is accepted. */
  bindHost?: string;
  bodyLimitBytes?: number;
  /** How often live log streams look for changes made by other processes. */
  logPollMs?: number;
  /** Accepted tokens; none (the default) leaves authentication off (README "Access tokens"). */
  tokens?: readonly TokenEntry[];
  /** Sees every route as it is added (the API reference test checks each one is documented). */
  onRoute?: (route: RouteOptions) => void;
  /** REQUEST_TIMEOUT_SECS in ms: how long a request may take to arrive whole. */
  requestTimeoutMs?: number;
  /** MAX_STREAMS: open event streams at once. */
  maxStreams?: number;
  /** EVENTS_REPLAY_BYTES and STREAM_BACKLOG_BYTES (README "Limits"). */
  eventsReplayBytes?: number;
  streamBacklogBytes?: number;
  /** Where a span per request goes (README "Traces (OpenTelemetry)"); absent: no span, no hook. */
  traceSink?: SpanSink | null;
}

/** The service routes' documentation (src/http/route-docs.ts); their answers are written by hand. */
const READY_SCHEMA: FastifySchema = {
  summary: 'Readiness: whether the store answers',
  description: 'Point a load balancer readiness check here (503 while the database is away) and a liveness check at /healthz.',
  tags: ['service'],
  docs: { answers: { 200: { description: 'The store answers', schema: ReadyAnswer } } },
};
const HEALTH_SCHEMA: FastifySchema = {
  summary: 'Liveness, with how long callbacks waited for the event loop',
  tags: ['service'],
  docs: { store: false, answers: { 200: { description: 'The process is serving', schema: HealthAnswer } } },
};

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** How long a graceful close waits for requests in flight before it closes their connections. */
const CLOSE_GRACE_MS = 5000;

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    bodyLimit: opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    ...requestTimeoutOptions(opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
    clientErrorHandler: clientErrorHandler(opts.logger),
    // A caller's x-request-id is kept (bounded), else one is made; it is in every log line of the request.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    // Workers poll claim every few seconds; a log line per request would drown everything else.
    logController: new LogController({ disableRequestLogging: true }),
    // Lease ids and job ids travel in paths; keep routing exact.
    // Ids may be 128 characters; lease ids and percent-encoding need headroom beyond that.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // Errors raised by the router before any route runs still answer in weft's error shape.
    frameworkErrors: (err, _req, reply: FastifyReply) => {
      void reply.code(err.statusCode ?? 400).send({ error: 'bad_url', message: err.message } satisfies ErrorBody);
    },
  });
  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);
  app.setValidatorCompiler(validatorCompiler);
  registerErrorHandling(app);
  // README "Traces (OpenTelemetry)": a server span per request, refusals included.
  if (opts.traceSink) registerTraceHooks(app, opts.traceSink);
  // First, so that every answer, refusals included, leaves its line at debug.
  registerRequestLog(app, opts.logger);
  // Before authentication: a page from a refused origin or host is refused whatever token it has.
  const originRule = registerOriginGuard(app, {
    corsOrigins: opts.corsOrigins ?? [],
    tokensEnabled: (opts.tokens ?? []).length > 0,
    allowedHosts: opts.allowedHosts ?? [],
    bindHost: opts.bindHost ?? '127.0.0.1',
  });
  registerAuth(app, new TokenTable(opts.tokens ?? []));

  // JSON is the only body type; Fastify's built-in text/plain parser would let a string through.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  await app.register(cors, {
    origin: originRule.kind === 'all' ? '*' : (origin, cb) => cb(null, origin !== undefined && originAllowed(originRule, origin)),
    methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
  });
  await app.register(fastifySSE, { heartbeatInterval: 15_000 });
  await registerOpenApi(app);

  // Long-poll claims would hold a graceful close for up to their wait; they end with `null` instead.
  // A connection that carries no request (a client's spare keep-alive socket, one left behind by an
  // aborted request) would hold it for as long as the client keeps it: requests in flight get a grace
  // period, then every connection still open is closed.
  app.addHook('preClose', async () => {
    opts.engine.close();
    app.server.closeIdleConnections();
    setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
  });

  // How long callbacks waited for the event loop lately: the figure a blocked loop (say, on an fsync)
  // would show first. Two histograms reset in turn, LOOP_WINDOW_MS apart and half a window out of step,
  // so the one read always holds between half a window and a whole one of recent samples
  // (docs/performance.md reads it under load).
  const LOOP_SAMPLE_MS = 10;
  const LOOP_WINDOW_MS = 2000;
  const monitors = [monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS }), monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS })];
  const resetAt = [Date.now(), Date.now()];
  for (const m of monitors) m.enable();
  const rotate = (i: number) => {
    monitors[i]!.reset();
    resetAt[i] = Date.now();
  };
  const timers = [setInterval(() => rotate(0), LOOP_WINDOW_MS).unref()];
  const stagger = setTimeout(() => {
    rotate(1);
    timers.push(setInterval(() => rotate(1), LOOP_WINDOW_MS).unref());
  }, LOOP_WINDOW_MS / 2).unref();
  app.addHook('onClose', async () => {
    clearTimeout(stagger);
    for (const t of timers) clearInterval(t);
    for (const m of monitors) m.disable();
  });
  // The histogram holds whole sampling intervals; what is beyond one interval is the delay.
  const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4) / 100 - LOOP_SAMPLE_MS);
  // Echoed so a client can quote it when it reports a problem. Set when the request arrives, so that
  // event streams, whose headers are written by hand and never pass onSend, carry it as well; onSend
  // covers answers given before this hook ran (a refused origin or token). nosniff: an answer is only
  // ever read as the type it declares (a log text in JSON is never taken for a page or a script).
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
  });
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
  });
  // Ready means the store answers: a load balancer sends no traffic to a server whose database is away.
  app.get('/readyz', { schema: READY_SCHEMA }, async (_req, reply) => {
    try {
      await opts.engine.ready();
      return { ok: true };
    } catch (err) {
      return reply.code(503).send({ error: 'store_unavailable', message: `the store does not answer: ${(err as Error).message}` } satisfies ErrorBody);
    }
  });
  app.get('/healthz', { schema: HEALTH_SCHEMA }, async () => {
    const m = monitors[resetAt[0]! <= resetAt[1]! ? 0 : 1]!;
    return {
      ok: true,
      event_loop_delay_ms: { p50: ms(m.percentile(50)), p99: ms(m.percentile(99)), max: ms(m.max) },
    };
  });
  const metrics = appMetrics(app, opts.engine, opts.logger);
  metricsRoutes(app, metrics);
  workflowRoutes(app, opts.engine);
  runRoutes(app, opts.engine);
  workerRoutes(app, opts.engine);
  jobRoutes(app, opts.engine);
  batchRoutes(app, opts.engine);
  artifactRoutes(app, opts.engine);
  secretRoutes(app, opts.engine);
  await triggerRoutes(app, opts.engine);
  notificationRoutes(app, opts.engine);
  const slots = new StreamSlots(opts.maxStreams ?? DEFAULT_MAX_STREAMS);
  logRoutes(app, opts.engine, { pollMs: opts.logPollMs, slots, streams: metrics.streams('logs') });
  const live = new LiveEvents(opts.engine, opts.logger, { pollMs: opts.logPollMs, replayBytes: opts.eventsReplayBytes, maxBacklogBytes: opts.streamBacklogBytes });
  eventRoutes(app, live, slots, metrics.streams('events'));
  await dashboardRoutes(app);
  return app;
}
