/** `weft workers [--json]`: the workers the server knows, with what they hold. */
import type { Command } from 'commander';
import type { CurrentJob, WorkerView } from '../../protocol/wire.js';
import { action, formatAgo, makeClient, palette, serverOption, table, type Palette, type ServerOptions } from './common.js';
import { terminalLine } from '../terminal-text.js';

const jobRef = (j: CurrentJob) => terminalLine(`${j.workflow_id}/${j.job_id} (run ${j.run_number})`);

function currentJob(w: WorkerView): string {
  // current_jobs names every job whatever the token; older servers send only the leases.
  const jobs = w.current_jobs ?? w.current_leases ?? (w.current_lease ? [w.current_lease] : []);
  if (jobs.length === 0) return '-';
  return jobs.length === 1 ? jobRef(jobs[0]!) : `${jobRef(jobs[0]!)} +${jobs.length - 1} more`;
}

function paintWorker(p: Palette, status: WorkerView['status']): string {
  return status === 'busy' ? p.yellow(status) : status === 'idle' ? p.green(status) : p.dim(status);
}

export function registerWorkers(program: Command): void {
  program
    .command('workers')
    .description('list the workers the server has seen')
    .option('--json', 'print the raw worker list')
    .addOption(serverOption())
    .action(
      action(async (opts: ServerOptions & { json?: boolean }) => {
        const workers = await makeClient(opts).listWorkers();
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(workers, null, 2)}\n`);
          return;
        }
        if (workers.length === 0) {
          process.stdout.write('no workers have registered or claimed yet\n');
          return;
        }
        const p = palette(process.stdout);
        const now = Date.now();
        const rows = workers.map((w) => [
          // Both chosen by the worker.
          terminalLine(w.worker_id),
          w.labels.length > 0 ? terminalLine(w.labels.join(',')) : '-',
          paintWorker(p, w.status),
          currentJob(w),
          formatAgo(w.last_seen_ms, now),
        ]);
        process.stdout.write(`${table(['ID', 'LABELS', 'STATUS', 'CURRENT JOB', 'LAST SEEN'], rows, p).join('\n')}\n`);
      }),
    );
}
