/** `weft logs <workflow> <job> [--follow] [--run N] [--attempt N]`: a job's log output. */
import type { Command } from 'commander';
import type { LogChunkView } from '../../client/client.js';
import { action, CliError, intOption, makeClient, serverOption, type ServerOptions } from './common.js';
import { followJobLogs } from './follow-logs.js';

interface LogsOptions extends ServerOptions {
  follow?: boolean;
  run?: number;
  attempt?: number;
}

/** A chunk as it was written: stderr chunks to stderr; each chunk ends its line. */
export function writeChunk(c: LogChunkView): void {
  const out = c.stream === 'stderr' ? process.stderr : process.stdout;
  out.write(c.data.endsWith('\n') ? c.data : `${c.data}\n`);
}

export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("print a job's logs (latest run and attempt unless --run/--attempt say otherwise)")
    .argument('<workflow>', 'workflow id')
    .argument('<job>', 'job id')
    .option('-f, --follow', 'stream new output until the job ends (latest run)')
    .option('--run <n>', 'run number (default: the latest)', intOption(1))
    .option('--attempt <n>', 'attempt number, counting from 0 (default: the latest that logged)', intOption(0))
    .addOption(serverOption())
    .action(
      action(async (workflow: string, job: string, opts: LogsOptions) => {
        const client = makeClient(opts);
        if (!opts.follow) {
          for (const c of await client.getLogs(workflow, job, { run: opts.run, attempt: opts.attempt })) writeChunk(c);
          return;
        }
        if (opts.run !== undefined || opts.attempt !== undefined) {
          throw new CliError('--follow streams the latest run and attempt; it cannot be combined with --run or --attempt');
        }
        const status = await followJobLogs(client, workflow, job, {
          onChunk: writeChunk,
          onAttempt: (n) => process.stderr.write(`weft: attempt ${n} of ${job} started\n`),
          onReconnecting: (reason) => process.stderr.write(`weft: lost the log stream (${reason}); reconnecting\n`),
        });
        if (status !== null) process.stderr.write(`weft: ${job} ended: ${status}\n`);
      }),
    );
}
