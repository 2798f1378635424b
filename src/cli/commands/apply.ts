/**
 * `weft apply <files...>`: validate locally, then PUT /api/workflows/{id} for each file (create or
 * update in place). Nothing is sent unless every file is valid.
 */
import type { Command } from 'commander';
import { action, makeClient, serverOption, type ServerOptions } from './common.js';
import { checkFiles } from './validate.js';

export function registerApply(program: Command): void {
  program
    .command('apply')
    .description('validate workflow files, then create or update them on the server (id = file name)')
    .argument('<files...>', 'workflow files (.yml, .yaml, .json) or directories of them')
    .addOption(serverOption())
    .action(
      action(async (files: string[], opts: ServerOptions) => {
        const results = checkFiles(files);
        const bad = results.filter((r) => !r.definition);
        if (bad.length > 0 || results.length === 0) {
          for (const r of bad) for (const line of r.problems) process.stderr.write(`${line}\n`);
          process.stderr.write(
            results.length === 0 ? 'weft: no workflow files found\n' : 'weft: nothing applied: fix the errors above first\n',
          );
          process.exitCode = 1;
          return;
        }
        // PUT answers 201 for a new workflow and 200 for an update; WorkflowClient.putWorkflow returns
        // only the document, so the status is read off the response on its way through.
        let lastStatus = 0;
        const client = makeClient(opts, async (input, init) => {
          const res = await fetch(input, init);
          lastStatus = res.status;
          return res;
        });
        for (const r of results) {
          const id = r.definition!.id;
          await client.putWorkflow(id, r.document as object);
          process.stdout.write(`${lastStatus === 201 ? 'created' : 'updated'} ${id}\n`);
        }
      }),
    );
}
