import type { Command } from 'commander';
import { ConfigError } from '../../runtime/env.js';
import { createLogger, flushLogs } from '../../runtime/logger.js';
import { startTelemetry, type Telemetry } from '../../runtime/telemetry.js';
import { traceCommands } from '../../worker/command-span.js';
import { createShellHandler, Worker } from '../../worker/index.js';
import { loadWorkerConfig, type WorkerConfig } from '../../worker/config.js';
import { hideTokenFromJobs } from '../../worker/credentials.js';

const SIGNAL_NUMBERS: Record<string, number> = { SIGINT: 2, SIGTERM: 15 };

/** `weft worker`. */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run jobs with `sh -c`; settings come from the environment (listed below)')
    .addHelpText(
      'after',
      `
Environment:
  SERVER_URL        the weft server (default http://localhost:3000)
  WORKER_LABELS     comma-separated labels; a job fits when its labels are a subset
  WORKER_ID         this worker's id (default <hostname>-<random>)
  LEASE_TTL_SECS    lease length requested with each claim, 1..86400 (default 30)
  HEARTBEAT_SECS    heartbeat interval, below the ttl; at most half of it is advised (default ttl/3)
  LONG_POLL_SECS    how long a claim waits on the server for a job, 0..60; 0 turns it off (default 20)
  POLL_SECS         wait after an empty claim when the server has no long polls (default 2)
  CONCURRENCY       jobs run at once (default 1); above 1, claims, reports and heartbeats are batched
  CANCEL_POLL_SECS  how often a running job's cancellation is checked (default 2)
  KILL_GRACE_SECS   between SIGTERM and SIGKILL when a job's processes are killed (default 5)
  LOG_LEVEL         level of the worker's own logs (default info)
  LOG_FORMAT        json or pretty (default pretty on a terminal, json otherwise)
  WEFT_TOKEN        token with the worker role, when the server requires tokens (not passed to jobs;
                    removed from this process's /proc/<pid>/environ at start)
  WEFT_TOKEN_FILE   file holding that token instead (read at start; keeps it out of every environment)
  JOB_USER          run jobs as this user (the worker must run as root): they cannot read its token
  WORK_DIR          each attempt runs in a fresh directory under it, removed afterwards; artifacts
                    are downloaded and uploaded there (default: weft under the OS temp directory)
  OTEL_EXPORTER_OTLP_ENDPOINT  export a span around each command over OTLP/HTTP, and give the
                    command a TRACEPARENT naming it (README "Traces (OpenTelemetry)")
`,
    )
    .action(async () => {
      let config: WorkerConfig;
      try {
        config = loadWorkerConfig();
      } catch (err) {
        process.stderr.write(`weft: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(err instanceof ConfigError ? 2 : 1);
      }
      const log = createLogger(config.logLevel, 'weft-worker', config.logFormat);
      for (const warning of config.tokenWarnings) log.warn(warning);
      hideTokenFromJobs(config.token, config.tokenSource, log);
      // README "Traces (OpenTelemetry)": null, with nothing loaded, unless an OTLP endpoint is set.
      let telemetry: Telemetry | null;
      try {
        telemetry = await startTelemetry(process.env, 'weft-worker', log);
      } catch (err) {
        log.error({ err }, 'could not start the trace exporter');
        await flushLogs();
        process.exit(1);
      }
      // The environment jobs are laid over, copied once: this process's own does not change after
      // start, and reading `process.env` whole at every job costs a native call per variable.
      const baseEnv = { ...process.env };
      const shell = createShellHandler({ baseEnv, killGraceMs: config.killGraceSecs * 1000, ...(config.jobUser ? { user: config.jobUser } : {}) });
      // Spans still buffered go out before the process ends, whichever way it stops.
      const finish = async () => {
        await telemetry?.shutdown();
        await flushLogs();
      };
      const worker = new Worker({
        serverUrl: config.serverUrl,
        token: config.token,
        workerId: config.workerId,
        labels: config.labels,
        leaseTtlSecs: config.leaseTtlSecs,
        heartbeatSecs: config.heartbeatSecs,
        pollSecs: config.pollSecs,
        longPollSecs: config.longPollSecs,
        concurrency: config.concurrency,
        cancelPollSecs: config.cancelPollSecs,
        // After the last SIGKILL a handler settles within the 2 s it waits for the pipes to close; then
        // up to 2 s go to the job's last log lines and the rest to its failure report.
        abortGraceMs: config.killGraceSecs * 1000 + 7000,
        logger: log,
        workDir: config.workDir,
        ...(config.jobUser ? { workDirOwner: { uid: config.jobUser.uid, gid: config.jobUser.gid } } : {}),
        handler: telemetry ? traceCommands(shell, telemetry) : shell,
      });

      // A stray rejection must not take down a worker holding leases.
      process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));

      let signals = 0;
      const onSignal = (signal: NodeJS.Signals) => {
        signals++;
        if (signals === 1) {
          log.info({ running: worker.stats.running }, `${signal} received: no new jobs; waiting for running jobs to finish (send again to abort them)`);
          worker.stop().then(
            () => {
              // A second signal arrived meanwhile: its abort path decides the exit code.
              if (signals > 1) return;
              log.info('worker stopped');
              void finish().then(() => process.exit(0));
            },
            (err: unknown) => {
              log.error({ err }, 'stop failed');
              void finish().then(() => process.exit(1));
            },
          );
        } else if (signals === 2) {
          log.warn({ running: worker.stats.running }, `${signal} received again: aborting running jobs`);
          const code = 128 + (SIGNAL_NUMBERS[signal] ?? 15);
          const exit = () => void finish().then(() => process.exit(code));
          worker.stop({ abort: true }).then(exit, exit);
        } else {
          // The jobs' process groups are SIGKILLed on the way out (see shell.ts).
          log.warn(`${signal} received a third time: exiting now; killing what the jobs left running`);
          process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 15));
        }
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);

      log.info(
        {
          worker_id: worker.workerId,
          labels: config.labels,
          server: config.serverUrl,
          concurrency: config.concurrency,
          lease_ttl_secs: config.leaseTtlSecs,
          heartbeat_secs: config.heartbeatSecs,
          poll_secs: config.pollSecs,
          token_from: config.tokenSource,
          job_user: config.jobUser?.name ?? null,
        },
        `weft worker ${worker.workerId} started: labels [${config.labels.join(', ')}], server ${config.serverUrl}, concurrency ${config.concurrency}`,
      );
      if (config.heartbeatSecs > config.leaseTtlSecs / 2) {
        log.warn(
          { heartbeat_secs: config.heartbeatSecs, lease_ttl_secs: config.leaseTtlSecs },
          `HEARTBEAT_SECS (${config.heartbeatSecs}) is above half of LEASE_TTL_SECS (${config.leaseTtlSecs}): one slow or lost heartbeat can cost a job its lease`,
        );
      }
      try {
        await worker.start();
      } catch (err) {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'the server refused to register this worker');
        await finish();
        process.exit(1);
      }
    });
}
