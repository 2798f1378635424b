/**
 * `weft apply <files...>`: validate locally, then PUT /api/workflows/{id} for each file (create or
 * update in place), printing `created`, `updated` or `unchanged` for each. Nothing is sent unless
 * every file is valid and no two files give the same id.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { action, CliError, describeError, makeClient, serverOption, serverUrl, type ServerOptions } from './common.js';
import { checkFiles, type CheckedFile } from './validate.js';

export function registerApply(program: Command): void {
  program
    .command('apply')
    .description('validate workflow files, then create or update them on the server (id = file name)')
    .argument('<files...>', 'workflow files (.yml, .yaml, .json) or directories of them')
    .addOption(serverOption())
    .action(
      action(async (files: string[], opts: ServerOptions) => {
        const results = refuseDuplicateIds(checkFiles(files));
        const bad = results.filter((r) => !r.definition);
        if (bad.length > 0 || results.length === 0) {
          for (const r of bad) for (const line of r.problems) process.stderr.write(`${line}\n`);
          process.stderr.write(
            results.length === 0 ? 'weft: no workflow files found\n' : 'weft: nothing applied: fix the errors above first\n',
          );
          process.exitCode = 1;
          return;
        }
        const put = putReportingOutcome(opts);
        for (const r of results) {
          const id = r.definition!.id;
          let outcome: string;
          try {
            outcome = await put(id, r.document as object);
          } catch (err) {
            throw new CliError(`${r.file}: ${describeError(err, serverUrl(opts))}`);
          }
          process.stdout.write(`${outcome} ${id}\n`);
        }
      }),
    );
}

/**
 * The workflow id is the file name, so two files in different directories can give the same id and
 * the second PUT would silently replace the first. Every file after the first with an id becomes a
 * problem. (checkFiles already does this within one directory.) A file named twice is applied once.
 */
function refuseDuplicateIds(results: CheckedFile[]): CheckedFile[] {
  const seenFiles = new Set<string>();
  const owners = new Map<string, string>();
  const kept: CheckedFile[] = [];
  for (const r of results) {
    const path = resolve(r.file);
    if (seenFiles.has(path)) continue;
    seenFiles.add(path);
    kept.push(r);
    if (!r.definition) continue;
    const id = r.definition.id;
    const owner = owners.get(id);
    if (owner === undefined) {
      owners.set(id, r.file);
      continue;
    }
    r.problems.push(`${r.file}: workflow id '${id}' is also given by ${owner}; apply one of them at a time`);
    delete r.definition;
    delete r.document;
  }
  return kept;
}

/**
 * What each PUT did: the answer's `outcome` says `created`, `updated` or `unchanged` (the definition
 * was the one already stored). A server that predates the field tells only 201 created from 200
 * updated, and WorkflowClient.putWorkflow returns the body alone, so the status is read off the
 * response on its way through a fetch wrapper; the calls are sequential, so the last status seen is
 * this call's.
 */
function putReportingOutcome(opts: ServerOptions): (id: string, document: object) => Promise<'created' | 'updated' | 'unchanged'> {
  let lastStatus = 0;
  const client = makeClient(opts, async (input, init) => {
    const res = await fetch(input, init);
    lastStatus = res.status;
    return res;
  });
  return async (id, document) => {
    const answer = await client.putWorkflow(id, document);
    if (answer.outcome === 'created' || answer.outcome === 'updated' || answer.outcome === 'unchanged') return answer.outcome;
    return lastStatus === 201 ? 'created' : 'updated';
  };
}
