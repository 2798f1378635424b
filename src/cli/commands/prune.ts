/**
 * `weft prune [--dry-run] [--retain-runs N] [--retain-days D] [--json]`: retention (README
 * "Retention") applied once, directly on the store DATABASE_URL names, as `weft scheduler` works. The
 * policy comes from RETAIN_RUNS / RETAIN_DAYS unless an option gives it.
 */
import { type Command, InvalidArgumentError } from 'commander';
import type { PrunedRun } from '../../store/store.js';
import type { ServerConfig } from '../../runtime/config.js';
import type { RetentionPolicy } from '../../engine/retention.js';
import { CliError, intOption, paintState, palette, table } from './common.js';

/** A dry run lists at most this many runs (it is one read; a real run deletes in batches however many). */
const DRY_RUN_LIST_MAX = 100_000;

interface PruneOptions {
  dryRun?: boolean;
  retainRuns?: number;
  retainDays?: number;
  json?: boolean;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number above 0 (fractions allowed)');
  return n;
}

function describePolicy(p: RetentionPolicy): string {
  const rules: string[] = [];
  if (p.retainRuns !== null) rules.push(`keep the newest ${p.retainRuns} run${p.retainRuns === 1 ? '' : 's'} of each workflow`);
  if (p.retainDays !== null) rules.push(`delete runs finished more than ${p.retainDays} day${p.retainDays === 1 ? '' : 's'} ago`);
  return `retention: ${rules.join('; ')} (never a running run, nor a workflow's latest)`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function report(runs: readonly PrunedRun[], dryRun: boolean, more: boolean, policy: RetentionPolicy, json: boolean): string {
  const total = {
    runs: runs.length,
    jobs: runs.reduce((n, r) => n + r.jobs, 0),
    log_chunks: runs.reduce((n, r) => n + r.log_chunks, 0),
  };
  if (json) {
    const listed = runs.map((r) => ({ ...r, finished_at: new Date(r.finished_at_ms).toISOString() }));
    const body = { dry_run: dryRun, retain_runs: policy.retainRuns, retain_days: policy.retainDays, runs: listed, total, more };
    return `${JSON.stringify(body, null, 2)}\n`;
  }
  const p = palette(process.stdout);
  const lines = [describePolicy(policy)];
  if (runs.length > 0) {
    const rows = runs.map((r) => [
      r.workflow_id,
      String(r.run_number),
      paintState(p, r.status),
      new Date(r.finished_at_ms).toISOString(),
      String(r.jobs),
      String(r.log_chunks),
    ]);
    lines.push(...table(['WORKFLOW', 'RUN', 'STATUS', 'FINISHED', 'JOBS', 'LOG CHUNKS'], rows, p));
  }
  const counts = `${plural(total.runs, 'run')} (${plural(total.jobs, 'job')}, ${plural(total.log_chunks, 'log chunk')})`;
  if (total.runs === 0) lines.push(dryRun ? 'nothing would be deleted' : 'nothing to delete');
  else if (dryRun) lines.push(`would delete ${counts}; nothing was deleted (--dry-run)`);
  else lines.push(`deleted ${counts}`);
  if (dryRun && more) lines.push(`more runs are due than the ${DRY_RUN_LIST_MAX} listed`);
  return `${lines.join('\n')}\n`;
}

async function prune(config: ServerConfig, opts: PruneOptions): Promise<void> {
  const policy: RetentionPolicy = {
    retainRuns: opts.retainRuns ?? config.retention.retainRuns,
    retainDays: opts.retainDays ?? config.retention.retainDays,
  };
  if (policy.retainRuns === null && policy.retainDays === null) {
    throw new CliError('nothing to do: set RETAIN_RUNS or RETAIN_DAYS, or pass --retain-runs or --retain-days', 2);
  }
  // Loaded here so the other commands do not pay for the store's modules at start-up.
  const { openStore } = await import('../../store/index.js');
  const { pruneInBatches, pruneRequest } = await import('../../engine/retention.js');
  const store = await openStore(config.databaseUrl, {
    sqliteSynchronous: config.sqliteSynchronous,
    postgres: config.postgres,
    warn: (_fields, message) => process.stderr.write(`weft: warning: ${message}\n`),
  });
  try {
    const dryRun = opts.dryRun === true;
    const req = pruneRequest(policy, Date.now(), dryRun, dryRun ? DRY_RUN_LIST_MAX : undefined);
    const { runs, more, unnamed_blobs } = await pruneInBatches(store, req, Infinity);
    if (!dryRun && config.artifactsDir !== null && unnamed_blobs.length > 0) {
      // The files of the blobs these runs alone named (ARTIFACTS_DIR, README "Artifacts").
      const { FileBlobs } = await import('../../runtime/file-blobs.js');
      await (await FileBlobs.open(config.artifactsDir, store)).remove(unnamed_blobs);
    }
    process.stdout.write(report(runs, dryRun, more, policy, opts.json === true));
  } finally {
    await store.close();
  }
}

export function registerPrune(program: Command, loadConfig: () => ServerConfig): void {
  program
    .command('prune')
    .description('delete finished runs by the retention policy (RETAIN_RUNS, RETAIN_DAYS), directly on the DATABASE_URL store')
    .option('--dry-run', 'list what would be deleted, delete nothing')
    .option('--retain-runs <n>', 'keep the newest N runs of each workflow (default: $RETAIN_RUNS)', intOption(1))
    .option('--retain-days <d>', 'delete runs finished more than D days ago (default: $RETAIN_DAYS)', positiveNumber)
    .option('--json', 'print what was deleted as JSON')
    .action(async (opts: PruneOptions) => {
      try {
        await prune(loadConfig(), opts);
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        process.stderr.write(`weft: ${err.message}\n`);
        process.exitCode = err.exitCode;
      }
    });
}
