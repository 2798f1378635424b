/**
 * `weft approve <workflow> <job> [--run N] [--comment TEXT] [--json]` and `weft reject …`: decide a job
 * awaiting approval (README "Approvals"), of the latest run by default.
 */
import type { Command } from 'commander';
import type { ApprovalResponse } from '../../protocol/wire.js';
import { action, CliError, intOption, makeClient, serverOption, type ServerOptions } from './common.js';

interface DecideOptions extends ServerOptions {
  run?: number;
  comment?: string;
  json?: boolean;
}

export function registerApprovals(program: Command): void {
  for (const verb of ['approve', 'reject'] as const) {
    program
      .command(verb)
      .description(
        verb === 'approve'
          ? 'approve a job awaiting approval: it runs (or, an approval alone, succeeds and lets its dependents run)'
          : 'reject a job awaiting approval: it fails, and the jobs below it go as after any failure',
      )
      .argument('<workflow>', 'workflow id')
      .argument('<job>', 'job id')
      .option('--run <n>', 'the run (default: the latest)', intOption(1))
      .option('--comment <text>', 'a comment kept with the decision')
      .option('--json', 'print the raw answer (the run number, the decision and the job)')
      .addOption(serverOption())
      .action(
        action(async (workflow: string, job: string, opts: DecideOptions) => {
          const client = makeClient(opts);
          let run = opts.run;
          if (run === undefined) {
            const latest = (await client.getStatus(workflow)).run_number;
            if (latest === null) throw new CliError(`workflow ${workflow} has not run yet: nothing awaits approval`);
            run = latest;
          }
          const body = opts.comment !== undefined ? { comment: opts.comment } : {};
          const answer = verb === 'approve' ? await client.approveJob(workflow, run, job, body) : await client.rejectJob(workflow, run, job, body);
          process.stdout.write(opts.json ? `${JSON.stringify(answer, null, 2)}\n` : `${describe(answer)}\n`);
        }),
      );
  }
}

function describe(a: ApprovalResponse): string {
  const by = a.job.approval?.decided_by ? ` by ${a.job.approval.decided_by}` : '';
  const next = a.job.state === 'queued' ? 'it is queued to run' : a.job.state === 'success' ? 'its dependents proceed' : `it is ${a.job.state}`;
  return `${a.decision} job ${a.job.id} of run ${a.run_number} of workflow ${a.workflow_id}${by}: ${next}`;
}
