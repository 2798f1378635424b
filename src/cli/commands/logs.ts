/** `weft logs <workflow> <job> [--follow] [--run N] [--attempt N]`: a job's log output. */
import type { Command } from 'commander';
import type { LogChunkView, WorkflowClient } from '../../client/index.js';
import { action, CliError, intOption, makeClient, serverOption, type ServerOptions } from './common.js';
import { CANCELLED_LATE_LOGS_MS, followJobLogs } from './follow-logs.js';
import { terminalText } from '../terminal-text.js';

interface LogsOptions extends ServerOptions {
  follow?: boolean;
  run?: number;
  attempt?: number;
}

/**
 * A chunk as it was written, colours included but no other escape sequence (a job's output must not
 * drive the terminal): stderr chunks to stderr; each chunk ends its line.
 */
export function writeChunk(c: LogChunkView): void {
  const out = c.stream === 'stderr' ? process.stderr : process.stdout;
  const data = terminalText(c.data);
  out.write(data.endsWith('\n') ? data : `${data}\n`);
}

/**
 * Says that there is nothing to show, and why when the status tells: the workflow never ran, the job
 * has not started or never will, or the attempt asked for has not happened.
 */
async function noOutput(client: WorkflowClient, workflow: string, job: string, opts: LogsOptions): Promise<string> {
  let what = `no output for ${workflow}/${job}`;
  if (opts.run !== undefined) what += ` run ${opts.run}`;
  if (opts.attempt !== undefined) what += ` attempt ${opts.attempt}`;
  let why = '';
  try {
    const doc = await client.getStatus(workflow);
    const j = doc.jobs.find((x) => x.id === job);
    if (doc.run_number === null) why = 'the workflow has never run';
    else if (j && (opts.run === undefined || opts.run === doc.run_number)) {
      if (opts.attempt !== undefined && opts.attempt > j.attempt) {
        why = `its latest attempt is ${j.attempt} (--attempt counts from 0)`;
      } else if (j.started_at_ms === null && j.attempt === 0) {
        why = j.state === 'skipped' || j.state === 'cancelled' ? `it never ran (${j.state})` : `it has not started yet (${j.state})`;
      }
    }
  } catch {
    // The note stands without a reason.
  }
  return why === '' ? what : `${what}: ${why}`;
}

export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("print a job's logs (latest run and attempt unless --run/--attempt say otherwise)")
    .argument('<workflow>', 'workflow id')
    .argument('<job>', 'job id')
    .option('-f, --follow', 'stream new output until the job ends (latest run)')
    .option('--run <n>', 'run number (default: the latest)', intOption(1))
    .option(
      '--attempt <n>',
      "attempt number as the server counts it, from 0: the first try is 0, so ATTEMPT 2/4 in `weft status` is --attempt 1 (default: the latest that logged)",
      intOption(0),
    )
    .addOption(serverOption())
    .action(
      action(async (workflow: string, job: string, opts: LogsOptions) => {
        const client = makeClient(opts);
        if (!opts.follow) {
          const chunks = await client.getLogs(workflow, job, { run: opts.run, attempt: opts.attempt });
          for (const c of chunks) writeChunk(c);
          // An unknown workflow, job or run was a 404 above (exit 1); an empty log is an answer (exit 0).
          if (chunks.length === 0) process.stderr.write(`weft: ${await noOutput(client, workflow, job, opts)}\n`);
          return;
        }
        if (opts.run !== undefined || opts.attempt !== undefined) {
          throw new CliError('--follow streams the latest run and attempt; it cannot be combined with --run or --attempt');
        }
        let shown = 0;
        const status = await followJobLogs(client, workflow, job, {
          onChunk: (c) => {
            shown++;
            writeChunk(c);
          },
          onAttempt: (n) => process.stderr.write(`weft: attempt ${n} of ${job} started (try ${n + 1})\n`),
          onReconnecting: (reason) => process.stderr.write(`weft: lost the log stream (${reason}); reconnecting\n`),
        }, { lateLogsMs: CANCELLED_LATE_LOGS_MS });
        if (status !== null) process.stderr.write(`weft: ${job} ended: ${status}${shown === 0 ? ' (no output)' : ''}\n`);
      }),
    );
}
