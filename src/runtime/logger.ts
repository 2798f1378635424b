import { pino, type Logger } from 'pino';

/** Structured JSON logs on stdout; LOG_LEVEL picks the level. */
export function createLogger(level: string, name: string): Logger {
  return pino({ name, level });
}
