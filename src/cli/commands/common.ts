/**
 * What every client command shares: the `--server` option, the client, error reporting, and plain
 * text formatting (tables, durations, colour that switches itself off when not on a terminal).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from '../../runtime/env.js';
import { isTransientStatus, WorkflowApiError, WorkflowClient } from '../../client/index.js';
import type { JobState, WorkflowState } from '../../domain/model.js';
import { isPriority, MAX_PRIORITY, MIN_PRIORITY } from '../../domain/priority.js';
import { terminalLine } from '../terminal-text.js';

export const DEFAULT_SERVER = 'http://localhost:3000';

/** A failure the command has already explained: printed as `weft: <message>`, then exit `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface ServerOptions {
  server?: string;
}

export function serverOption(): Option {
  return new Option('--server <url>', `weft server URL (default: $SERVER_URL, else ${DEFAULT_SERVER})`).argParser(parseUrl);
}

function parseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected a URL such as http://localhost:3000');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected an http:// or https:// URL');
  return value;
}

/** `--server`, else SERVER_URL (an empty one counts as unset), else the default. */
export function serverUrl(opts: ServerOptions): string {
  if (opts.server) return opts.server;
  const env = process.env.SERVER_URL;
  if (env !== undefined && env !== '') {
    try {
      return parseUrl(env);
    } catch (err) {
      throw new CliError(`SERVER_URL: ${(err as Error).message} (got '${env}')`);
    }
  }
  return DEFAULT_SERVER;
}

export function makeClient(opts: ServerOptions, fetchImpl?: typeof fetch): WorkflowClient {
  // Only from the environment: a token on the command line would be visible to every user in `ps`.
  const token = process.env.WEFT_TOKEN?.trim() || undefined;
  return new WorkflowClient({ baseUrl: serverUrl(opts), fetch: fetchImpl, token });
}

/** Positive/non-negative integer option parsers for commander. */
export function intOption(min: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min) {
      throw new InvalidArgumentError(min === 0 ? 'expected a non-negative integer' : `expected an integer >= ${min}`);
    }
    return Number(value);
  };
}

/** `--priority n` (README "Priorities"): an integer from -100 to 100. */
export function priorityOption(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !isPriority(n)) {
    throw new InvalidArgumentError(`expected an integer from ${MIN_PRIORITY} (least urgent) to ${MAX_PRIORITY} (most urgent)`);
  }
  return n;
}

/**
 * The reason a request never got an HTTP answer (refused, DNS, reset, timeout), or null when `err`
 * is something else. Node's fetch reports these as `TypeError: fetch failed` with the socket error
 * as `cause` (an AggregateError when several addresses were tried).
 */
export function networkFailure(err: unknown): string | null {
  if (err instanceof WorkflowApiError || !(err instanceof Error)) return null;
  if (err.name === 'TimeoutError') return 'the request timed out';
  if (!(err instanceof TypeError)) return null;
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    if (cause.message !== '') return cause.message;
    if (typeof code === 'string') return code;
  }
  return err.message;
}

/**
 * A failure worth waiting out while following: no HTTP answer at all, or an answer that says "try
 * again" (408, 429, or any 5xx, such as a proxy's 502/503 while the server restarts). Returns the
 * reason to show, or null when retrying cannot help (a 404, a 400, a bug).
 */
export function transientFailure(err: unknown): string | null {
  if (err instanceof WorkflowApiError) return isTransientStatus(err.status) ? httpStatus(err) : null;
  return networkFailure(err);
}

/** `502 Bad Gateway` (a status text may be empty, e.g. over HTTP/2). */
function httpStatus(err: WorkflowApiError): string {
  return `${err.status} ${err.statusText}`.trim();
}

/** One line saying what went wrong (no `weft: ` prefix); `server` is the URL the client talked to. */
export function describeError(err: unknown, server: string): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof WorkflowApiError) {
    const hint = err.status === 401 ? (process.env.WEFT_TOKEN ? ' (WEFT_TOKEN is set but not accepted)' : ' (set WEFT_TOKEN)') : '';
    return `${httpStatus(err)}: ${err.serverMessage}${hint}`;
  }
  const reason = networkFailure(err);
  if (reason !== null) return `cannot reach the server at ${server}: ${reason}`;
  return err instanceof Error ? err.message : String(err);
}

/** Runs a command body and turns every failure into one `weft: …` line on stderr and exit code 1. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      process.exitCode = reportError(err, args);
    }
  };
}

function reportError(err: unknown, args: unknown[]): number {
  // commander passes the Command itself last.
  const cmd = args[args.length - 1];
  const opts: ServerOptions = typeof cmd === 'object' && cmd !== null && isCommand(cmd) ? cmd.opts() : {};
  let url: string;
  try {
    url = serverUrl(opts);
  } catch {
    url = process.env.SERVER_URL ?? DEFAULT_SERVER;
  }
  // A server's message may quote what a worker or a job wrote.
  process.stderr.write(`weft: ${terminalLine(describeError(err, url))}\n`);
  return err instanceof CliError ? err.exitCode : 1;
}

function isCommand(x: object): x is Command {
  return typeof (x as { opts?: unknown }).opts === 'function';
}

// --------------------------------------------------------------------------------------- colour

export interface Palette {
  enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

/** ANSI colour only on a terminal, and never with NO_COLOR set (https://no-color.org) or TERM=dumb. */
export function palette(stream: NodeJS.WriteStream): Palette {
  const enabled = stream.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return {
    enabled,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}

export function paintState(p: Palette, state: JobState | WorkflowState): string {
  switch (state) {
    case 'success':
      return p.green(state);
    case 'failed':
      return p.red(state);
    case 'running':
      return p.yellow(state);
    case 'queued':
      return p.cyan(state);
    case 'awaiting_approval':
      // A person is asked to act (README "Approvals"): as visible as a running job.
      return p.yellow(state);
    default:
      return p.dim(state);
  }
}

// --------------------------------------------------------------------------------------- text

const ANSI = /\x1b\[[0-9;]*m/g;
const visible = (s: string) => s.replace(ANSI, '').length;

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(header: string[], rows: string[][], p?: Palette): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => visible(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i]! - visible(c))))
      .join('  ')
      .trimEnd();
  const head = line(header);
  return [p ? p.bold(head) : head, ...rows.map(line)];
}

/** 0.4s, 12.3s, 2m05s, 1h02m. */
export function formatDuration(secs: number | null | undefined): string {
  if (secs === null || secs === undefined || !Number.isFinite(secs)) return '-';
  const s = Math.max(0, secs);
  if (s < 60) return `${s.toFixed(1)}s`;
  const whole = Math.floor(s);
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}

/** 3s ago, 4m ago, 2h ago, 5d ago. */
export function formatAgo(ms: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** A time to come, relative to now: `in 42s`, `in 5m`, `in 3h`, `in 2d`; `due` once it has come. */
export function formatIn(ms: number, now = Date.now()): string {
  const s = Math.round((ms - now) / 1000);
  if (s <= 0) return 'due';
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 86_400) return `in ${Math.floor(s / 3600)}h`;
  return `in ${Math.floor(s / 86_400)}d`;
}

/**
 * An error text in one line: its first non-empty line, plus its last one when they differ (a worker's
 * error is `command exited with code 1; stderr:` followed by the stderr tail, whose last line usually
 * says what went wrong), e.g. `command exited with code 1: test_fetch_remote FAILED: connection timed
 * out`. Cut to `max` characters, shortening the first line before the last.
 */
export function summary(text: string | null | undefined, max = 60): string {
  if (!text) return '';
  const all = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  if (all.length === 0) return '';
  const first = all[0]!;
  const last = all[all.length - 1]!;
  if (all.length === 1 || first === last) return cut(first, max);
  // `…; stderr:` (or a bare trailing colon) only introduces what follows, which is shown after `: `.
  const head = first.replace(/(?:[;,]\s*(?:stderr|stdout|output))?\s*[:;,]?\s*$/i, '') || first;
  const joined = `${head}: ${last}`;
  if (joined.length <= max) return joined;
  const room = max - last.length - 2;
  return room >= 12 ? `${cut(head, room)}: ${last}` : cut(joined, max);
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, Math.max(0, max - 1))}…` : s;
}

/** Splits chunk text into lines; a trailing newline does not make an extra empty line. */
export function lines(data: string): string[] {
  const parts = data.split(/\r?\n/);
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

/** Cuts `s` to `width` visible characters, keeping (and closing) its ANSI colour codes. */
export function fit(s: string, width: number): string {
  if (visible(s) <= width) return s;
  let out = '';
  let shown = 0;
  for (const part of s.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith('\x1b[')) out += part;
    else {
      const take = part.slice(0, Math.max(0, width - 1 - shown));
      out += take;
      shown += take.length;
    }
  }
  return `${out}${s.includes('\x1b[') ? '\x1b[0m' : ''}…`;
}

/** Ends the process after a failure: a bad setting or argument exits 2, anything else 1 (README "The `weft` command"). */
export function exitOnError(err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`weft: ${message}\n`);
  process.exit(err instanceof ConfigError || err instanceof InvalidArgumentError ? 2 : 1);
}
