/**
 * `weft rerun <workflow> [--run N] [--all | --from JOB] [--priority N] [--follow | --json]`: starts a re-run of a run
 * (the latest by default) that keeps the outputs of the jobs it does not run again (README "Re-running a run").
 */
import type { Command } from 'commander';
import type { RerunRequest } from '../../protocol/wire.js';
import { action, CliError, intOption, makeClient, priorityOption, serverOption } from './common.js';
import { reportStart, type StartOptions } from './run.js';

interface RerunOptions extends StartOptions {
  run?: number;
  all?: boolean;
  from?: string;
  priority?: number;
}

export function registerRerun(program: Command): void {
  program
    .command('rerun')
    .description('run a finished run again: by default only its failed, cancelled and skipped jobs, keeping the outputs of the rest')
    .argument('<workflow>', 'workflow id')
    .option('--run <n>', 'the run to re-run (default: the latest)', intOption(1))
    .option('--all', 'run every job again')
    .option('--from <job>', 'run this job and everything downstream of it again')
    .option('-p, --priority <n>', "queue every job of the new run with this priority, -100..100 (default: the definition's)", priorityOption)
    .option('-f, --follow', 'show job states and logs until the run ends; exit 1 unless it succeeds')
    .option('--json', 'print the status document of the new run')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: RerunOptions) => {
        if (opts.all && opts.from !== undefined) throw new CliError('--all and --from do not go together: --from runs a job and what follows it');
        if (opts.json && opts.follow) throw new CliError('--json and --follow do not go together: --json prints the new run once');
        const client = makeClient(opts);
        let run = opts.run;
        if (run === undefined) {
          const latest = (await client.getStatus(workflow)).run_number;
          if (latest === null) throw new CliError(`workflow ${workflow} has not run yet: start it with \`weft run ${workflow}\``);
          run = latest;
        }
        const body: RerunRequest = {
          ...(opts.from !== undefined ? { from: opts.from } : { only: opts.all ? 'all' : 'failed' }),
          ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
        };
        const doc = await client.rerun(workflow, run, body);
        const kept = doc.jobs.filter((j) => j.state === 'success').map((j) => j.id);
        const detail = ` (re-run of run ${run}${kept.length > 0 ? `; kept ${kept.join(', ')}` : ''})`;
        await reportStart(client, workflow, doc, opts, detail);
      }),
    );
}
