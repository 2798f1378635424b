/** `weft cancel <workflow> [--run N] [--json]`: cancels a run's (or every active run's) unfinished jobs. */
import type { Command } from 'commander';
import { action, intOption, makeClient, serverOption, type ServerOptions } from './common.js';

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description("cancel a workflow's active runs (or one of them): their pending, queued and running jobs")
    .argument('<workflow>', 'workflow id')
    .option('--run <n>', 'cancel only run number n (default: every active run)', intOption(1))
    .option('--json', 'print the raw answer (the status document, cancelled_jobs and cancelled_runs)')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: ServerOptions & { json?: boolean; run?: number }) => {
        const answer = await makeClient(opts).cancelWorkflow(workflow, { run: opts.run });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
          return;
        }
        const jobs = answer.cancelled_jobs;
        const runs = answer.cancelled_runs ?? [];
        const which = opts.run !== undefined ? `run ${opts.run} of workflow ${workflow} is not active` : `workflow ${workflow} has no active run`;
        const named = runs.length > 0 ? runs.join(', ') : String(answer.run_number);
        process.stdout.write(
          runs.length === 0 && jobs.length === 0
            ? `${which}; nothing to cancel\n`
            : `cancelled ${jobs.length} job${jobs.length === 1 ? '' : 's'} of run${runs.length > 1 ? 's' : ''} ${named}${jobs.length > 0 ? `: ${jobs.join(', ')}` : ''}\n`,
        );
      }),
    );
}
