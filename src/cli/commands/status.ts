/** `weft status <workflow> [--json]`: the latest run of a workflow as a table of its jobs. */
import type { Command } from 'commander';
import type { JobView, StatusDocument } from '../../protocol/wire.js';
import { action, formatDuration, intOption, makeClient, paintState, palette, serverOption, summary, table, type Palette, type ServerOptions } from './common.js';
import { terminalLine, terminalText } from '../terminal-text.js';

/** Seconds a job has taken: its duration once finished, the time since its start while running. */
export function elapsedSecs(job: JobView, now = Date.now()): number | null {
  if (job.duration_ms !== null) return job.duration_ms / 1000;
  if (job.state === 'running' && job.started_at_ms !== null) return (now - job.started_at_ms) / 1000;
  return null;
}

/**
 * Which try this is, of how many the job may have: `1/1` with no retries, `2/4` for the first retry of
 * a job with `retries: 3`. (The server's `attempt`, which `weft logs --attempt` takes, is one less.)
 */
export function formatAttempt(job: Pick<JobView, 'attempt' | 'max_retries'>): string {
  return `${job.attempt + 1}/${job.max_retries + 1}`;
}

/** `retry in 42s` while a queued retry waits for its backoff, else ''. */
export function retryWait(job: Pick<JobView, 'state' | 'delayed_until_ms'>, now = Date.now()): string {
  if (job.state !== 'queued' || !(job.delayed_until_ms > now)) return '';
  return `retry in ${Math.ceil((job.delayed_until_ms - now) / 1000)}s`;
}

export const JOB_HEADER = ['JOB', 'STATUS', 'ATTEMPT', 'DURATION', 'WORKER', 'ERROR'];

export function jobRow(job: JobView, p: Palette, now = Date.now(), errorWidth = 100): string[] {
  return [
    terminalLine(job.id),
    retryWait(job, now) === '' ? paintState(p, job.state) : `${paintState(p, job.state)} (${retryWait(job, now)})`,
    formatAttempt(job),
    formatDuration(elapsedSecs(job, now)),
    // A worker chose its id and wrote the error: neither may drive the terminal.
    job.worker_id === null ? '-' : terminalLine(job.worker_id),
    terminalLine(summary(job.error === null ? null : terminalText(job.error), errorWidth)),
  ];
}

export function statusLines(doc: StatusDocument, p: Palette, now = Date.now()): string[] {
  const name = doc.name !== doc.id ? ` (${terminalLine(doc.name)})` : '';
  const run = doc.run_number === null ? 'never run' : `run ${doc.run_number}`;
  return [
    `workflow ${p.bold(terminalLine(doc.id))}${name}: ${paintState(p, doc.status)}, ${run}`,
    '',
    ...table(JOB_HEADER, doc.jobs.map((j) => jobRow(j, p, now)), p),
  ];
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description("show a workflow's latest run (or run N): its status and a table of its jobs")
    .argument('<workflow>', 'workflow id')
    .option('--run <n>', 'an earlier run (see `weft runs`)', intOption(1))
    .option('--json', 'print the raw status document')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: ServerOptions & { json?: boolean; run?: number }) => {
        const api = makeClient(opts);
        const doc = opts.run === undefined ? await api.getStatus(workflow) : await api.getRun(workflow, opts.run);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
          return;
        }
        process.stdout.write(`${statusLines(doc, palette(process.stdout)).join('\n')}\n`);
      }),
    );
}
