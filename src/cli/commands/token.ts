/** `weft token new --role R [--name N] [--json]`: a new access token and its line for WEFT_TOKENS_FILE. */
import { randomBytes } from 'node:crypto';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ROLES, hashToken, newToken, type Role } from '../../domain/access.js';
import { action } from './common.js';

const NAME = /^[\w.@-]{1,64}$/;

export function registerToken(program: Command): void {
  const token = program.command('token').description('manage access tokens (README "Access tokens")');
  token
    .command('new')
    .description('print a new random token and the line that lets a server accept it')
    .addOption(new Option('--role <role>', 'what the token may do').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'name shown in logs and errors (default: <role>-<random>)', (v: string) => {
      if (!NAME.test(v)) throw new InvalidArgumentError('letters, digits, _ . @ - only, at most 64');
      return v;
    })
    .option('--json', 'print {name, role, token, line}')
    .action(
      action(async (opts: { role: Role; name?: string; json?: boolean }) => {
        const value = newToken();
        const name = opts.name ?? `${opts.role}-${randomBytes(3).toString('hex')}`;
        // The server keeps only this line; the token itself is shown once, here.
        const line = `${name} ${opts.role} ${hashToken(value)}`;
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ name, role: opts.role, token: value, line })}\n`);
          return;
        }
        process.stdout.write(
          `token: ${value}\n` +
            `line for WEFT_TOKENS_FILE:\n${line}\n` +
            `\nGive the token to its user as WEFT_TOKEN (or a client's \`token\` option); it is not shown again.\n`,
        );
      }),
    );
}
