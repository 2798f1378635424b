/**
 * `weft token new --role R [--name N] [--labels a,b] [--workers prefix*] [--json]`: a new access token
 * and its line for WEFT_TOKENS_FILE.
 */
import { randomBytes } from 'node:crypto';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ROLES, TOKEN_NAME, hashToken, newToken, tokensFileLine, type Role, type TokenScope } from '../../domain/access.js';
import { CONTROL_CHARACTERS, labelProblem, MAX_LABELS } from '../../domain/labels.js';
import { action, CliError } from './common.js';

/** A comma-separated list without empty items (whitespace, which ends a field in the file, refused). */
function list(what: string, check: (item: string) => string | null) {
  return (v: string): string[] => {
    const items = v.split(',');
    if (items.some((i) => i === '' || /\s/.test(i))) throw new InvalidArgumentError(`a comma-separated list of ${what}, without spaces or empty items`);
    for (const item of items) {
      const problem = check(item);
      if (problem !== null) throw new InvalidArgumentError(`${JSON.stringify(item.slice(0, 40))} ${problem}`);
    }
    return [...new Set(items)];
  };
}

export function registerToken(program: Command): void {
  const token = program.command('token').description('manage access tokens (README "Access tokens")');
  token
    .command('new')
    .description('print a new random token and the line that lets a server accept it')
    .addOption(new Option('--role <role>', 'what the token may do').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'name shown in logs and errors (default: <role>-<random>)', (v: string) => {
      if (!TOKEN_NAME.test(v)) throw new InvalidArgumentError('letters, digits, _ . @ - only, at most 64');
      return v;
    })
    .option(
      '--labels <a,b>',
      'worker tokens: claim only with labels among these',
      list('labels', (l) => labelProblem(l)),
    )
    .option(
      '--workers <ids>',
      'worker tokens: act only as these worker ids (a trailing * matches any rest: ci-*)',
      list('worker ids', (p) => (CONTROL_CHARACTERS.test(p) || p.slice(0, -1).includes('*') ? 'is not an id, or a prefix ending in *' : null)),
    )
    .option('--json', 'print {name, role, token, line}')
    .action(
      action(async (opts: { role: Role; name?: string; labels?: string[]; workers?: string[]; json?: boolean }) => {
        if ((opts.labels || opts.workers) && opts.role !== 'worker') {
          throw new CliError('--labels and --workers limit worker tokens only: use them with --role worker', 2);
        }
        if (opts.labels && opts.labels.length > MAX_LABELS) throw new CliError(`--labels: at most ${MAX_LABELS} labels`, 2);
        const value = newToken();
        const name = opts.name ?? `${opts.role}-${randomBytes(3).toString('hex')}`;
        const scope: TokenScope = { ...(opts.labels ? { labels: opts.labels } : {}), ...(opts.workers ? { workers: opts.workers } : {}) };
        // The server keeps only this line; the token itself is shown once, here.
        const line = tokensFileLine(name, opts.role, hashToken(value), scope);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ name, role: opts.role, token: value, line })}\n`);
          return;
        }
        process.stdout.write(
          `token: ${value}\n` +
            `line for WEFT_TOKENS_FILE:\n${line}\n` +
            `\nGive the token to its user as WEFT_TOKEN_FILE (a file only it can read) or WEFT_TOKEN, or a client's \`token\` option; it is not shown again.\n`,
        );
      }),
    );
}
