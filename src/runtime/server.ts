import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DefinitionError, loadWorkflowDir } from '../definitions/index.js';
import { DEFAULT_SCHEDULE_GRACE_MS } from '../domain/schedule.js';
import { Engine } from '../engine/engine.js';
import { buildApp } from '../http/app.js';
import { openStore, type Store } from '../store/index.js';
import type { ServerConfig } from './config.js';
import { displayHost, isLoopback, listenWithFallForward } from './listen.js';
import { FileBlobs } from './file-blobs.js';
import { Reaper } from './reaper.js';
import { notifySettings } from './notify-config.js';
import { startTelemetry } from './telemetry.js';

export interface RunningServer {
  url: string;
  port: number;
  app: FastifyInstance;
  engine: Engine;
  store: Store;
  close(): Promise<void>;
}

/** Loads WORKFLOWS_DIR: each good file is created or updated in place; a broken one is reported and skipped. */
export async function loadWorkflowFiles(engine: Engine, dir: string, log: Logger): Promise<void> {
  const { loaded, errors } = loadWorkflowDir(dir);
  for (const { file, error } of errors) {
    log.warn({ file, issues: error.issues }, `skipped workflow file ${file}: ${error.message}`);
  }
  for (const { file, definition, hash } of loaded) {
    let outcome;
    try {
      ({ outcome } = await engine.saveWorkflow(definition, hash, 'file'));
    } catch (err) {
      // What only other workflows can tell (README "Workflows calling workflows": a call chain too
      // deep, a cycle, inputs the called workflow does not take): reported and skipped like any problem.
      if (!(err instanceof DefinitionError)) throw err;
      log.warn({ file, issues: err.issues }, `skipped workflow file ${file}: ${err.message}`);
      continue;
    }
    if (outcome !== 'unchanged') log.info({ file, workflow_id: definition.id, outcome }, `workflow ${definition.id} ${outcome} from ${file}`);
  }
}

/**
 * The store, artifact files, telemetry and engine a server or a scheduler runs on, and how to put
 * them down again in the order that loses nothing: notifications settled, the last spans sent, peers
 * told about the last changes, then the store closed.
 */
async function openEngine(config: ServerConfig, log: Logger): Promise<{ store: Store; blobs: FileBlobs | undefined; telemetry: Awaited<ReturnType<typeof startTelemetry>>; engine: Engine; shutdown(): Promise<void> }> {
  const store = await openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous, postgres: config.postgres, warn: (f, m) => log.warn(f, m) });
  const blobs = await blobStore(config, store);
  // README "Traces (OpenTelemetry)": null, with nothing loaded, unless an OTLP endpoint is set. The
  // scheduler's reaper ends attempts too (expiries, timeouts), whose spans it exports.
  const telemetry = await startTelemetry(process.env, 'weft', log);
  const engine = new Engine({
    store,
    blobs,
    traceSink: telemetry,
    logger: log,
    workerOfflineAfterMs: config.workerOfflineAfterMs,
    workerRetainMs: config.workerRetainMs,
    scheduleGraceMs: scheduleGraceMs(config),
    maxLogBytesPerAttempt: config.maxLogBytesPerAttempt,
    maxArtifactBytes: config.maxArtifactBytes,
    secretKey: config.secretKey,
    notify: notifySettings(config.notify, config.publicUrl, config.retention.retainDays),
  });
  return {
    store,
    blobs,
    telemetry,
    engine,
    async shutdown() {
      await engine.notifications.close();
      // What the last operations ended is read while the store is still open, then sent.
      await engine.tracing?.close();
      // What the last pass changed still reaches the other servers.
      await engine.disconnectPeers();
      await telemetry?.shutdown();
      await store.close();
    },
  };
}

/** The all-in-one server: HTTP API, plus the reaper unless API_ONLY. */
export async function startServer(config: ServerConfig, log: Logger): Promise<RunningServer> {
  const { store, blobs, telemetry, engine, shutdown } = await openEngine(config, log);
  let reaper: Reaper | null = null;
  let app: FastifyInstance | null = null;
  try {
    // A key the stored secrets were not sealed with stops the start here, naming both keys.
    await engine.secrets.checkKey();
    await engine.connectPeers();
    await loadWorkflowFiles(engine, config.workflowsDir, log);
    app = await buildApp({
      engine,
      logger: log,
      corsOrigins: config.corsOrigins,
      allowedHosts: config.allowedHosts,
      bindHost: config.host,
      bodyLimitBytes: config.bodyLimitBytes,
      logPollMs: config.logPollMs,
      tokens: config.tokens,
      requestTimeoutMs: config.requestTimeoutMs,
      maxStreams: config.maxStreams,
      eventsReplayBytes: config.eventsReplayBytes,
      streamBacklogBytes: config.streamBacklogBytes,
      traceSink: telemetry,
    });
    const port = await listenWithFallForward(app, config.host, config.port);
    if (config.port !== 0 && port !== config.port) {
      // Often a second server started by mistake on the same store: make it visible.
      log.warn({ requested_port: config.port, port }, `port ${config.port} is taken; listening on ${port} instead`);
    }
    const url = `http://${displayHost(config.host)}:${port}`;
    if (config.tokens.length === 0 && !isLoopback(config.host)) {
      log.warn(
        { host: config.host },
        `no access tokens are configured and ${config.host} is reachable from other machines: anyone who reaches it can have workers run commands; set WEFT_TOKENS_FILE or WEFT_ADMIN_TOKEN and WEFT_WORKER_TOKEN (README "Access tokens")`,
      );
    }
    if (config.tokens.length === 0 && config.corsOrigins.includes('*')) {
      log.warn(
        { cors_origins: '*' },
        'CORS_ORIGINS=* without access tokens: any web page open in a browser on a machine that reaches this server can have workers run commands; list the origins that need the API instead, or configure tokens (README "Browsers and origins")',
      );
    }
    for (const warning of config.tokenWarnings) log.warn(warning);
    // Dashboard links in notifications point here unless PUBLIC_URL says otherwise (README "Notifications").
    engine.notifications.setPublicUrl(url);
    engine.notifications.start();
    if (!config.apiOnly) {
      reaper = new Reaper(engine.housekeeping, config.reapIntervalMs, log, config.retention);
      reaper.start();
    }
    // Scripts wait for this line, so it is printed whatever LOG_LEVEL says.
    log.child({}, { level: 'info' }).info(
      { port, store: store.kind, artifacts_dir: blobs?.dir ?? null, api_only: config.apiOnly, reap_interval_ms: config.apiOnly ? null : config.reapIntervalMs, ...retentionFields(config) },
      `weft server listening on ${url}`,
    );
    const server = app;
    return {
      url,
      port,
      app: server,
      engine,
      store,
      async close() {
        await reaper?.stop();
        await server.close();
        await shutdown();
      },
    };
  } catch (err) {
    await reaper?.stop();
    await app?.close();
    await shutdown();
    throw err;
  }
}

/** `weft scheduler`: the reaper alone, against the same database as an API_ONLY server. */
export async function startScheduler(
  config: ServerConfig,
  log: Logger,
): Promise<{ engine: Engine; close(): Promise<void> }> {
  const { store, engine, shutdown } = await openEngine(config, log);
  const reaper = new Reaper(engine.housekeeping, config.reapIntervalMs, log, config.retention);
  reaper.start();
  engine.notifications.start();
  log.info({ store: store.kind, reap_interval_ms: config.reapIntervalMs, ...retentionFields(config) }, 'weft scheduler started');
  return {
    engine,
    async close() {
      await reaper.stop();
      await shutdown();
    },
  };
}

/**
 * ARTIFACTS_DIR's file store, or undefined for bytes in the store. The scheduler and `weft prune` need
 * it too: they delete runs, and with them the files no row names any more.
 */
export async function blobStore(config: ServerConfig, store: Store): Promise<FileBlobs | undefined> {
  if (config.artifactsDir === null) return undefined;
  try {
    return await FileBlobs.open(config.artifactsDir, store);
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * A scheduled time found by a pass within a minute, or two reaper intervals when they are longer, is on
 * time; an older one was missed (docs/api.md "Schedules").
 */
function scheduleGraceMs(config: ServerConfig): number {
  return Math.max(DEFAULT_SCHEDULE_GRACE_MS, 2 * config.reapIntervalMs);
}

/** The retention settings in a start line, so that a deployment's policy is visible in its logs. */
function retentionFields(config: ServerConfig): { retain_runs: number | null; retain_days: number | null } {
  return { retain_runs: config.retention.retainRuns, retain_days: config.retention.retainDays };
}
