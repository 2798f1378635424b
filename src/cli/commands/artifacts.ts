/**
 * `weft artifacts list|download <workflow>` (README "Artifacts"): the files a run's jobs uploaded,
 * listed, or downloaded into a directory with each one's SHA-256 checked.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import type { WorkflowClient } from '../../client/index.js';
import type { ArtifactView } from '../../domain/artifacts.js';
import { insideDir } from '../../worker/artifacts.js';
import { action, CliError, formatAgo, intOption, makeClient, palette, serverOption, table, type ServerOptions } from './common.js';
import { formatBytes } from '../../domain/artifacts.js';

interface ArtifactOptions extends ServerOptions {
  run?: number;
  job?: string;
  json?: boolean;
}

/** `--run`, else the latest run. */
async function runOf(client: WorkflowClient, workflow: string, opts: ArtifactOptions): Promise<number> {
  if (opts.run !== undefined) return opts.run;
  const doc = await client.getStatus(workflow);
  if (doc.run_number === null) throw new CliError(`workflow ${workflow} has not run yet`);
  return doc.run_number;
}

export function registerArtifacts(program: Command): void {
  const cmd = program.command('artifacts').description("list or download the files a run's jobs uploaded (their `artifacts:`)");
  const common = (c: Command) =>
    c
      .argument('<workflow>', 'workflow id')
      .option('--run <n>', 'run number (default: the latest run)', intOption(1))
      .option('--job <id>', "only this job's artifacts")
      .addOption(serverOption());

  common(cmd.command('list').description("list a run's artifacts: job, name, size, SHA-256"))
    .option('--json', 'print the raw list')
    .action(
      action(async (workflow: string, opts: ArtifactOptions) => {
        const client = makeClient(opts);
        const run = await runOf(client, workflow, opts);
        const list = await client.listArtifacts(workflow, run, opts.job);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
          return;
        }
        if (list.artifacts.length === 0) {
          process.stdout.write(`run ${run} of ${workflow} has no artifacts${opts.job ? ` of job ${opts.job}` : ''}\n`);
          return;
        }
        const p = palette(process.stdout);
        const now = Date.now();
        const rows = list.artifacts.map((a) => [a.job_id, a.name, formatBytes(a.size), formatAgo(a.created_at_ms, now), a.sha256.slice(0, 12)]);
        process.stdout.write(`${table(['JOB', 'NAME', 'SIZE', 'UPLOADED', 'SHA-256'], rows, p).join('\n')}\n`);
      }),
    );

  common(cmd.command('download').description("download a run's artifacts into a directory, checking each one's SHA-256"))
    .option('--name <name>', 'only the artifact of this name')
    .option('--dir <dir>', 'where to put them: <dir>/<job>/<name>, or <dir>/<name> with --job (default: .)', '.')
    .action(
      action(async (workflow: string, opts: ArtifactOptions & { name?: string; dir: string }) => {
        const client = makeClient(opts);
        const run = await runOf(client, workflow, opts);
        const list = (await client.listArtifacts(workflow, run, opts.job)).artifacts.filter((a) => opts.name === undefined || a.name === opts.name);
        if (list.length === 0) throw new CliError(`run ${run} of ${workflow} has no ${opts.name ? `artifact named ${opts.name}` : 'artifacts'}${opts.job ? ` of job ${opts.job}` : ''}`);
        for (const a of list) {
          const base = opts.job !== undefined ? opts.dir : path.join(opts.dir, a.job_id.replace(/[/\\]/g, '_'));
          const target = await download(client, workflow, run, a, base);
          process.stdout.write(`${target} (${formatBytes(a.size)})\n`);
        }
      }),
    );
}

/** One artifact into `dir` under its name (which cannot lead outside it), checked against its SHA-256. */
async function download(client: WorkflowClient, workflow: string, run: number, a: ArtifactView, dir: string): Promise<string> {
  const target = insideDir(dir, a.name);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const res = await client.downloadArtifact(workflow, run, a.job_id, a.name);
  if (!res.body) throw new CliError(`artifact ${a.name}: the answer had no body`);
  const hash = createHash('sha256');
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  body.on('data', (b: Buffer) => hash.update(b));
  const partial = `${target}.partial`;
  await pipeline(body, createWriteStream(partial));
  const sha = hash.digest('hex');
  if (sha !== a.sha256) {
    await fs.rm(partial, { force: true });
    throw new CliError(`artifact ${a.name} of job ${a.job_id}: downloaded bytes hash to ${sha}, not ${a.sha256}; nothing kept`);
  }
  await fs.rename(partial, target);
  return target;
}
