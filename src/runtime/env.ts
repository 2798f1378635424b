/**
 * Reading settings from the environment. Every value is checked, so a typo stops the process at
 * start with a message naming the variable instead of a default silently standing in for it.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

export function envNumber(
  env: Env,
  name: string,
  def: number,
  opts: { min: number; max?: number; integer?: boolean; exclusiveMin?: boolean },
): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  const ok =
    Number.isFinite(n) &&
    (!opts.integer || Number.isInteger(n)) &&
    (opts.exclusiveMin ? n > opts.min : n >= opts.min) &&
    (opts.max === undefined || n <= opts.max);
  if (!ok) {
    const kind = opts.integer ? 'an integer' : 'a number';
    const low = opts.exclusiveMin ? `above ${opts.min}` : `of at least ${opts.min}`;
    const high = opts.max === undefined ? '' : ` and at most ${opts.max}`;
    throw new ConfigError(`${name}="${raw}" is not valid: expected ${kind} ${low}${high}`);
  }
  return n;
}

export function envFlag(env: Env, name: string): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name}="${env[name]}" is not valid: use 1 to enable or leave it unset`);
}
