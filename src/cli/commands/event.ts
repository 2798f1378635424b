/**
 * `weft event NAME` (README "Events"): sends a named event, starting a run of every workflow whose
 * on.event lists it, with a JSON payload from `--data` or a file (`--data @file`, `-` for stdin).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { action, makeClient, serverOption, type ServerOptions } from './common.js';

type EventOptions = ServerOptions & { data?: string; delivery?: string; json?: boolean };

async function payloadOf(data: string | undefined): Promise<unknown> {
  if (data === undefined) return {};
  let text = data;
  if (data === '-' || data === '@-') {
    const parts: Buffer[] = [];
    for await (const chunk of process.stdin) parts.push(chunk as Buffer);
    text = Buffer.concat(parts).toString('utf8');
  } else if (data.startsWith('@')) {
    text = await readFile(data.slice(1), 'utf8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`--data is not JSON: ${(err as Error).message}`);
  }
}

export function registerEvent(program: Command): void {
  program
    .command('event')
    .description('send a named event: a run of every workflow whose on.event lists it (admin or trigger token; README "Events")')
    .argument('<name>', 'the event name, e.g. deployed')
    .option('--data <json>', 'the payload: JSON text, @FILE, or - for stdin (default {})')
    .option('--delivery <id>', 'a delivery id: sent again, it starts no second run of a workflow')
    .option('--json', 'print the raw answer')
    .addOption(serverOption())
    .action(
      action(async (name: string, opts: EventOptions) => {
        const answer = await makeClient(opts).sendEvent(name, await payloadOf(opts.data), { deliveryId: opts.delivery });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
          return;
        }
        const lines = [
          ...answer.runs.map((r) => `${r.workflow_id} #${r.run_number} ${r.duplicate ? 'already started by this delivery' : r.status}`),
          ...answer.refused.map((r) => `${r.workflow_id}: not started (${r.error}): ${r.message}`),
        ];
        process.stdout.write(`${lines.length > 0 ? lines.join('\n') : `no workflow listens for "${answer.event}"`}\n`);
      }),
    );
}
