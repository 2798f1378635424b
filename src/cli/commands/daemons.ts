import type { Command } from 'commander';
import { loadServerConfig } from '../../runtime/config.js';
import { createLogger, flushLogs } from '../../runtime/logger.js';
import { exitOnError } from './common.js';

/** Stops on SIGTERM/SIGINT: finish in-flight requests, close the store, exit 0. */
function onShutdown(close: () => Promise<void>, log: { info: (m: string) => void; error: (o: object, m: string) => void }) {
  let closing = false;
  const handler = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
    log.info(`${signal} received, shutting down`);
    close().then(
      () => flushLogs().then(() => process.exit(0)),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        void flushLogs().then(() => process.exit(1));
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

type Daemon = 'startServer' | 'startScheduler';

/**
 * Starts one long-running process of src/runtime/server.ts with the server configuration and its
 * logger, handling signals from before the start line (scripts take that line as the moment to send
 * them). The runtime is loaded here so client commands do not pay for the server's modules.
 */
async function runDaemon(start: Daemon, name: string): Promise<void> {
  try {
    const config = loadServerConfig();
    const log = createLogger(config.logLevel, name, config.logFormat);
    const runtime = await import('../../runtime/server.js');
    const starting: Promise<{ close(): Promise<void> }> = runtime[start](config, log);
    onShutdown(async () => (await starting).close(), log);
    await starting;
  } catch (err) {
    exitOnError(err);
  }
}

/** `weft server` and `weft scheduler`: the long-running processes (src/runtime/server.ts starts them). */
export function registerDaemons(program: Command): void {
  program
    .command('server')
    .description('run the HTTP API and the lease reaper (API_ONLY=1: the API alone)')
    .action(() => runDaemon('startServer', 'weft-server'));

  program
    .command('scheduler')
    .description('run the lease reaper (and the schedules) alone, against the same DATABASE_URL as an API_ONLY server')
    .action(() => runDaemon('startScheduler', 'weft-scheduler'));
}
