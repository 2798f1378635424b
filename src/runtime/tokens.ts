/**
 * The tokens a server accepts (README "Access tokens"): WEFT_TOKENS_FILE, a file of
 * `name role sha256:<hex>` lines, and/or WEFT_ADMIN_TOKEN / WEFT_WORKER_TOKEN / WEFT_READ_TOKEN.
 * Read once at start; a malformed line or a missing file stops the process naming it.
 */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { ROLES, parseTokenHash, type Role, type TokenEntry } from '../domain/access.js';
import { ConfigError, type Env } from './env.js';

/** Shorter tokens could be guessed; `weft token new` makes 256-bit ones. */
export const MIN_TOKEN_LENGTH = 16;

const ENV_TOKENS: ReadonlyArray<{ variable: string; role: Role }> = [
  { variable: 'WEFT_ADMIN_TOKEN', role: 'admin' },
  { variable: 'WEFT_WORKER_TOKEN', role: 'worker' },
  { variable: 'WEFT_READ_TOKEN', role: 'read' },
];

export function loadTokens(env: Env): TokenEntry[] {
  const entries: TokenEntry[] = [];
  const file = env.WEFT_TOKENS_FILE?.trim();
  if (file) entries.push(...readTokensFile(file));
  for (const { variable, role } of ENV_TOKENS) {
    const token = env[variable];
    if (token === undefined || token === '') continue;
    if (token.trim() !== token || /\s/.test(token)) throw new ConfigError(`${variable} is not valid: a token cannot contain spaces`);
    if (token.length < MIN_TOKEN_LENGTH) {
      throw new ConfigError(`${variable} is not valid: a token needs at least ${MIN_TOKEN_LENGTH} characters (\`weft token new\` makes one)`);
    }
    // The variable's name stands for the token's name in logs and errors.
    entries.push({ name: variable, role, hash: createHash('sha256').update(token, 'utf8').digest() });
  }
  return entries;
}

function readTokensFile(file: string): TokenEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`WEFT_TOKENS_FILE="${file}" cannot be read: ${(err as Error).message}`);
  }
  return parseTokensFile(text, file);
}

/** Lines of `name role sha256:<hex>`; blank lines and `#` comments are skipped. */
export function parseTokensFile(text: string, file: string): TokenEntry[] {
  const entries: TokenEntry[] = [];
  const names = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const where = `WEFT_TOKENS_FILE ${file} line ${i + 1}`;
    const fields = line.split(/\s+/);
    if (fields.length !== 3) throw new ConfigError(`${where}: expected \`name role sha256:<hex>\`, found ${fields.length} field(s)`);
    const [name, role, hashText] = fields as [string, string, string];
    if (!(ROLES as readonly string[]).includes(role)) throw new ConfigError(`${where}: role '${role}' is not one of ${ROLES.join(', ')}`);
    const hash = parseTokenHash(hashText);
    if (hash === null) {
      // Not echoed: a token pasted in place of its hash would end up in the process's output.
      throw new ConfigError(`${where}: the third field is not a token hash (sha256: and 64 hex digits); \`weft token new\` prints the line to use`);
    }
    if (names.has(name)) throw new ConfigError(`${where}: the name '${name}' is used twice`);
    names.add(name);
    entries.push({ name, role: role as Role, hash });
  });
  return entries;
}
