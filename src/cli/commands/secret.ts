/**
 * `weft secret set|list|rm` (README "Secrets"). A value is read from stdin, never from the command
 * line, where `ps` and the shell's history would keep it.
 */
import type { Command } from 'commander';
import { action, makeClient, serverOption, type ServerOptions } from './common.js';

type ScopeOptions = ServerOptions & { workflow?: string; json?: boolean };

/** Everything on stdin; one trailing newline (what `echo` and a heredoc add) is not part of the value. */
async function readValue(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('value (end with Ctrl-D): ');
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(chunk as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
}

function scopeText(workflowId: string | null | undefined): string {
  return workflowId ? `workflow ${workflowId}` : 'every workflow';
}

export function registerSecret(program: Command): void {
  const secret = program.command('secret').description('set, list and remove secrets (admin token; README "Secrets")');

  secret
    .command('set')
    .description('set a secret from stdin: `printf %s "$KEY" | weft secret set DEPLOY_KEY`')
    .argument('<name>', 'letters, digits and underscores, not starting with a digit')
    .option('--workflow <id>', 'for this workflow only (it wins over a secret of the same name for every workflow)')
    .addOption(serverOption())
    .action(
      action(async (name: string, opts: ScopeOptions) => {
        const value = await readValue();
        if (value.length === 0) throw new Error('no value on stdin: pipe the value in, e.g. `printf %s "$KEY" | weft secret set ' + name + '`');
        const saved = await makeClient(opts).setSecret(name, value, { workflowId: opts.workflow });
        process.stdout.write(`secret ${saved.name} set for ${scopeText(saved.workflow_id)}\n`);
      }),
    );

  secret
    .command('list')
    .description('list secrets: names, scopes and times (never values)')
    .option('--json', 'print the raw answer')
    .addOption(serverOption())
    .action(
      action(async (opts: ScopeOptions) => {
        const secrets = await makeClient(opts).listSecrets();
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(secrets, null, 2)}\n`);
          return;
        }
        if (secrets.length === 0) {
          process.stdout.write('no secrets\n');
          return;
        }
        const rows = secrets.map((s) => [s.name, s.workflow_id ?? '(every workflow)', new Date(s.updated_at_ms).toISOString(), s.updated_by ?? '']);
        const widths = [0, 1, 2].map((i) => Math.max(...[['NAME', 'SCOPE', 'UPDATED'][i]!.length, ...rows.map((r) => r[i]!.length)]));
        const line = (r: string[]) => `${r.slice(0, 3).map((c, i) => c.padEnd(widths[i]!)).join('  ')}  ${r[3]}`.trimEnd();
        process.stdout.write(`${[line(['NAME', 'SCOPE', 'UPDATED', 'BY']), ...rows.map(line)].join('\n')}\n`);
      }),
    );

  secret
    .command('rm')
    .description('remove a secret')
    .argument('<name>', 'the secret')
    .option('--workflow <id>', "remove that workflow's own secret (default: the one for every workflow)")
    .addOption(serverOption())
    .action(
      action(async (name: string, opts: ScopeOptions) => {
        await makeClient(opts).removeSecret(name, { workflowId: opts.workflow });
        process.stdout.write(`secret ${name} removed for ${scopeText(opts.workflow)}\n`);
      }),
    );
}
