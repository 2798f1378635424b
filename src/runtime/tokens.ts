/**
 * The tokens a server accepts (README "Access tokens"): WEFT_TOKENS_FILE, a file of
 * `name role sha256:<hex> [labels=…] [workers=…]` lines, and/or WEFT_ADMIN_TOKEN / WEFT_WORKER_TOKEN /
 * WEFT_READ_TOKEN / WEFT_APPROVER_TOKEN / WEFT_TRIGGER_TOKEN. Read once at start; a malformed line or a missing file stops the process naming
 * the file, line and column, never what is written there (a token pasted in the wrong place would
 * otherwise end up in the process's output and its logs).
 */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { ROLES, TOKEN_NAME, looksLikeToken, parseTokenHash, type Role, type TokenEntry, type TokenScope } from '../domain/access.js';
import { CONTROL_CHARACTERS, labelProblem, MAX_LABELS } from '../domain/labels.js';
import { ConfigError, type Env } from './env.js';
import { credentialFileWarning } from '../util/credential-file.js';

/** Shorter tokens could be guessed; `weft token new` makes 256-bit ones. */
export const MIN_TOKEN_LENGTH = 16;

const ENV_TOKENS: ReadonlyArray<{ variable: string; role: Role }> = [
  { variable: 'WEFT_ADMIN_TOKEN', role: 'admin' },
  { variable: 'WEFT_WORKER_TOKEN', role: 'worker' },
  { variable: 'WEFT_READ_TOKEN', role: 'read' },
  { variable: 'WEFT_APPROVER_TOKEN', role: 'approver' },
  { variable: 'WEFT_TRIGGER_TOKEN', role: 'trigger' },
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
    // Leases are bound to the name of the token that claimed them: two tokens may not share one.
    if (entries.some((e) => e.name === variable)) {
      throw new ConfigError(`${variable} is set, and WEFT_TOKENS_FILE names a token ${variable} too: rename the file's token`);
    }
    // The variable's name stands for the token's name in logs and errors.
    entries.push({ name: variable, role, hash: createHash('sha256').update(token, 'utf8').digest() });
  }
  return entries;
}

/** Start-up warnings about the token settings (logged by the server, which keeps running). */
export function tokenWarnings(env: Env): string[] {
  const file = env.WEFT_TOKENS_FILE?.trim();
  const w = file ? credentialFileWarning('WEFT_TOKENS_FILE', file) : null;
  return w ? [w] : [];
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

const LINE_FORMAT = '`name role sha256:<hex>`, then optionally `labels=a,b` and `workers=prefix*`';

/**
 * Lines of `name role sha256:<hex> [labels=a,b] [workers=p*,id]`; blank lines and `#` comments are
 * skipped. Errors say where (file, line, column) and what is expected, and quote nothing of the line.
 */
export function parseTokensFile(text: string, file: string): TokenEntry[] {
  const entries: TokenEntry[] = [];
  const firstLine = new Map<string, number>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '');
    const fields = [...line.matchAll(/\S+/g)].map((m) => ({ text: m[0], column: m.index + 1 }));
    if (fields.length === 0) return;
    const fail = (column: number, why: string): never => {
      throw new ConfigError(`WEFT_TOKENS_FILE ${file} line ${i + 1}, column ${column}: ${why}`);
    };
    if (fields.length < 3) fail(1, `expected ${LINE_FORMAT}; found ${fields.length} field(s)`);
    const [name, role, hashField, ...options] = fields as [(typeof fields)[0], (typeof fields)[0], (typeof fields)[0], ...typeof fields];
    if (looksLikeToken(name.text)) {
      fail(name.column, 'the first field (the name) looks like a token; a tokens file holds hashes only: `weft token new` prints the line to use');
    }
    if (!TOKEN_NAME.test(name.text)) fail(name.column, 'the name may hold letters, digits and _ . @ - only, at most 64 of them');
    if (!(ROLES as readonly string[]).includes(role.text)) fail(role.column, `the second field (the role) is not one of ${ROLES.join(', ')}`);
    const hash = parseTokenHash(hashField.text);
    if (hash === null) {
      fail(hashField.column, 'the third field is not a token hash (sha256: and 64 hex digits); `weft token new` prints the line to use');
    }
    const earlier = firstLine.get(name.text);
    if (earlier !== undefined) fail(name.column, `this name is already used on line ${earlier}; each token needs its own`);
    firstLine.set(name.text, i + 1);
    const scope: TokenScope = {};
    for (const opt of options) {
      const eq = opt.text.indexOf('=');
      const key = eq < 0 ? '' : opt.text.slice(0, eq);
      const value = opt.text.slice(eq + 1);
      if (key !== 'labels' && key !== 'workers') fail(opt.column, `expected ${LINE_FORMAT}: after the hash only labels=… and workers=… may follow`);
      if (role.text !== 'worker') fail(opt.column, `${key}= limits worker tokens only; this line's role is ${role.text}`);
      if (scope[key as 'labels' | 'workers'] !== undefined) fail(opt.column, `${key}= is given twice`);
      const items = value.split(',');
      if (items.some((it) => it === '')) fail(opt.column, `${key}= needs a comma-separated list without empty items`);
      if (key === 'labels') {
        if (items.length > MAX_LABELS) fail(opt.column, `labels= may list at most ${MAX_LABELS} labels`);
        if (items.some((l) => labelProblem(l) !== null)) fail(opt.column, 'labels= holds a label that is not valid (README "Limits")');
        scope.labels = [...new Set(items)];
      } else {
        if (items.some((p) => p.indexOf('*') !== -1 && p.indexOf('*') !== p.length - 1) || items.some((p) => CONTROL_CHARACTERS.test(p))) {
          fail(opt.column, 'workers= takes worker ids, each exact or ending in one `*` (a prefix)');
        }
        scope.workers = [...new Set(items)];
      }
    }
    entries.push({ name: name.text, role: role.text as Role, hash: hash!, ...(options.length > 0 ? { scope } : {}) });
  });
  return entries;
}
