import { pino, type Logger } from 'pino';

/** Structured JSON logs on stdout; LOG_LEVEL picks the level. */
export function createLogger(level: string, name: string): Logger {
  // Credentials never reach a log line, whatever a future log call passes along (README "Access tokens").
  return pino({ name, level, redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' } });
}
