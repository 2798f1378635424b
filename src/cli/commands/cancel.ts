/** `weft cancel <workflow> [--json]`: cancels the active run's unfinished jobs. */
import type { Command } from 'commander';
import { action, makeClient, serverOption, type ServerOptions } from './common.js';

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description("cancel a workflow's active run: its pending, queued and running jobs")
    .argument('<workflow>', 'workflow id')
    .option('--json', 'print the raw answer (the status document and cancelled_jobs)')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: ServerOptions & { json?: boolean }) => {
        const answer = await makeClient(opts).cancelWorkflow(workflow);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
          return;
        }
        const jobs = answer.cancelled_jobs;
        process.stdout.write(
          jobs.length === 0
            ? `workflow ${workflow} has no active run; nothing to cancel\n`
            : `cancelled ${jobs.length} job${jobs.length === 1 ? '' : 's'} of run ${answer.run_number}: ${jobs.join(', ')}\n`,
        );
      }),
    );
}
