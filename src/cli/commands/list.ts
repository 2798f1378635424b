/** `weft list [--status S] [--search TEXT] [--limit N] [--offset N] [--json]`: the workflows the server holds. */
import { type Command, Option } from 'commander';
import type { JobState } from '../../domain/model.js';
import type { StatusDocument } from '../../protocol/wire.js';
import { STATUS_FILTER_VALUES } from '../../protocol/states.js';
import { action, formatAgo, formatIn, intOption, makeClient, paintState, palette, serverOption, table, type ServerOptions } from './common.js';
import { terminalLine } from '../terminal-text.js';

/** `3/5 done` or `2/5 done, 1 failed`: how far the latest run is. */
export function jobProgress(doc: StatusDocument): string {
  if (doc.run_number === null) return `${doc.jobs.length} jobs`;
  const count = (s: JobState) => doc.jobs.filter((j) => j.state === s).length;
  const finished = doc.jobs.filter((j) => ['success', 'failed', 'skipped', 'cancelled'].includes(j.state)).length;
  const failed = count('failed');
  return `${finished}/${doc.jobs.length} done${failed > 0 ? `, ${failed} failed` : ''}`;
}

function lastChange(doc: StatusDocument): number {
  return Math.max(Date.parse(doc.updated_at), doc.run?.finished_at_ms ?? doc.run?.created_at_ms ?? 0);
}

export function registerList(program: Command): void {
  program
    .command('list')
    .description('list workflows with their status, latest run, progress and next scheduled run')
    .addOption(new Option('--status <state>', 'only workflows whose latest run has a job in this state').choices(STATUS_FILTER_VALUES))
    .option('--search <text>', 'only workflows whose id or name contains this text')
    .option('--limit <n>', 'at most this many (the server caps at 1000)', intOption(1), 100)
    .option('--offset <n>', 'skip this many (paging)', intOption(0), 0)
    .option('--json', 'print the raw list')
    .addOption(serverOption())
    .action(
      action(async (opts: ServerOptions & { status?: string; search?: string; limit: number; offset: number; json?: boolean }) => {
        const docs = await makeClient(opts).listWorkflows({ limit: opts.limit, offset: opts.offset, status: opts.status as JobState, q: opts.search });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(docs, null, 2)}\n`);
          return;
        }
        if (docs.length === 0) {
          process.stdout.write(opts.status || opts.search || opts.offset ? 'no workflows match\n' : 'no workflows yet: add one with `weft apply <file>`\n');
          return;
        }
        const p = palette(process.stdout);
        const now = Date.now();
        const rows = docs.map((d) => [
          terminalLine(d.id),
          d.name !== d.id ? terminalLine(d.name) : '',
          paintState(p, d.status),
          d.run_number === null ? '-' : String(d.run_number),
          jobProgress(d),
          d.trigger ? terminalLine(d.trigger) : '-',
          // An older server sends no next_fire_at_ms.
          d.next_fire_at_ms === null || d.next_fire_at_ms === undefined ? '-' : formatIn(d.next_fire_at_ms, now),
          formatAgo(lastChange(d), now),
        ]);
        process.stdout.write(`${table(['WORKFLOW', 'NAME', 'STATUS', 'RUN', 'JOBS', 'TRIGGER', 'NEXT', 'CHANGED'], rows, p).join('\n')}\n`);
        if (docs.length === opts.limit) process.stdout.write(p.dim(`more may follow: --offset ${opts.offset + opts.limit}\n`));
      }),
    );
}
