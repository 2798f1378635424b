/** `weft runs <workflow> [--limit N] [--offset N] [--json]`: a workflow's run history, newest first. */
import type { Command } from 'commander';
import type { RunSummary } from '../../protocol/wire.js';
import { action, formatAgo, formatDuration, intOption, makeClient, paintState, palette, serverOption, table, type ServerOptions } from './common.js';

/** `2 success, 1 failed` in a fixed order of states. */
export function jobCounts(run: RunSummary): string {
  const order = ['success', 'failed', 'running', 'queued', 'pending', 'skipped', 'cancelled'] as const;
  return order
    .filter((s) => (run.job_counts[s] ?? 0) > 0)
    .map((s) => `${run.job_counts[s]} ${s}`)
    .join(', ');
}

export function registerRuns(program: Command): void {
  program
    .command('runs')
    .description("list a workflow's runs, newest first")
    .argument('<workflow>', 'workflow id')
    .option('--limit <n>', 'at most this many', intOption(1), 20)
    .option('--offset <n>', 'skip this many (paging)', intOption(0), 0)
    .option('--json', 'print the raw run list')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: ServerOptions & { limit: number; offset: number; json?: boolean }) => {
        const runs = await makeClient(opts).listRuns(workflow, { limit: opts.limit, offset: opts.offset });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
          return;
        }
        if (runs.length === 0) {
          process.stdout.write(opts.offset ? 'no more runs\n' : `workflow ${workflow} has not run yet: start it with \`weft run ${workflow}\`\n`);
          return;
        }
        const p = palette(process.stdout);
        const now = Date.now();
        const rows = runs.map((r) => [
          String(r.run_number),
          paintState(p, r.status),
          formatAgo(r.created_at_ms, now),
          formatDuration(((r.finished_at_ms ?? now) - r.created_at_ms) / 1000),
          jobCounts(r),
        ]);
        process.stdout.write(`${table(['RUN', 'STATUS', 'STARTED', 'DURATION', 'JOBS'], rows, p).join('\n')}\n`);
      }),
    );
}
