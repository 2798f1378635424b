/**
 * The processes' own logs (README "Configuration": LOG_LEVEL, LOG_FORMAT): pino, written to stdout as
 * JSON lines, or as pino-pretty's human-readable lines.
 *
 * Lines go through `process.stdout`, never a synchronous write to fd 1: on a pipe whose reader has
 * stalled (`weft worker | tee log` behind a stopped terminal, a reader that does not read) a
 * synchronous write waits until the pipe has room, and while it waits no signal handler can run, so
 * SIGTERM and Ctrl-C were never heard. Here a full pipe only queues lines, up to a bound past which
 * they are dropped (and counted in a warning once the reader catches up), and a pipe whose reader is
 * gone (EPIPE) silences the logs instead of failing the process.
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import { ConfigError, type Env } from './env.js';

export type LogFormat = 'json' | 'pretty';

const FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** LOG_FORMAT, checked; unset: pretty on a terminal, JSON lines otherwise. */
export function logFormatFrom(env: Env, stdoutIsTTY: boolean = process.stdout.isTTY === true): LogFormat {
  const raw = env.LOG_FORMAT?.trim().toLowerCase();
  if (raw === undefined || raw === '') return stdoutIsTTY ? 'pretty' : 'json';
  if (!(FORMATS as readonly string[]).includes(raw)) {
    throw new ConfigError(`LOG_FORMAT="${env.LOG_FORMAT}" is not valid: use json or pretty (unset: pretty on a terminal, json otherwise)`);
  }
  return raw as LogFormat;
}

/** Bytes of log lines queued for a stdout that does not keep up, before lines are dropped. */
const MAX_QUEUED_BYTES = 1024 * 1024;

type Stdout = NodeJS.WriteStream;

/** The one writer to stdout for every logger of this process. */
class StdoutLines {
  private broken = false;
  private dropped = 0;
  /** Told how many lines were dropped, once stdout has caught up. */
  onCaughtUp: ((dropped: number) => void) | null = null;

  constructor(private readonly out: Stdout) {
    // EPIPE and friends: nobody reads our logs any more; that is no reason to stop working.
    out.on('error', () => {
      this.broken = true;
    });
    out.on('drain', () => {
      if (this.dropped === 0) return;
      const n = this.dropped;
      this.dropped = 0;
      this.onCaughtUp?.(n);
    });
  }

  write(line: string): void {
    if (this.broken || this.out.destroyed) return;
    if (this.out.writableLength > MAX_QUEUED_BYTES) {
      this.dropped++;
      return;
    }
    this.out.write(line);
  }

  /** Resolves once queued lines are written, stdout is gone, or `timeoutMs` has passed. */
  flush(timeoutMs: number): Promise<void> {
    if (this.broken || this.out.destroyed || this.out.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.out.off('drain', done);
        this.out.off('error', done);
        this.out.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.out.once('drain', done);
      this.out.once('error', done);
      this.out.once('close', done);
    });
  }
}

let stdoutLines: StdoutLines | null = null;

function stdout(): StdoutLines {
  stdoutLines ??= new StdoutLines(process.stdout);
  return stdoutLines;
}

/** pino-pretty, loaded only by a process that logs for a person. */
function prettifier(colorize: boolean): (line: string) => string {
  const require = createRequire(import.meta.url);
  const { prettyFactory } = require('pino-pretty') as typeof import('pino-pretty');
  return prettyFactory({ colorize, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
}

/** A pino logger at `level` writing `format` lines to stdout. */
export function createLogger(level: string, name: string, format: LogFormat = 'json'): Logger {
  const out = stdout();
  const pretty = format === 'pretty' ? prettifier(process.stdout.isTTY === true) : null;
  // Credentials never reach a log line, whatever a future log call passes along (README "Access tokens").
  const redact = { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' };
  const logger = pino({ name, level, redact }, { write: pretty ? (line: string) => out.write(pretty(line)) : (line: string) => out.write(line) });
  out.onCaughtUp = (dropped) =>
    logger.warn({ dropped_lines: dropped }, `${dropped} log line(s) dropped: stdout was not being read fast enough`);
  return logger;
}

/**
 * Waits (at most `timeoutMs`) for log lines still queued for stdout, so that a process about to
 * exit leaves its last lines to a slow reader without hanging on one that does not read.
 */
export function flushLogs(timeoutMs = 1000): Promise<void> {
  return stdoutLines ? stdoutLines.flush(timeoutMs) : Promise.resolve();
}
