/** The embeddable worker and the shell handler `weft worker` runs. */
export {
  Worker,
  PermanentError,
  JobAbortedError,
  parseSetOutput,
  truncateError,
  isTransient,
  defaultWorkerId,
  MAX_ERROR_CHARS,
} from './worker.js';
export type {
  WorkerOptions,
  WorkerEvents,
  WorkerStats,
  JobContext,
  JobHandler,
  HandlerOutputs,
  AbortReason,
  JobStartEvent,
  JobDoneEvent,
  JobFailedEvent,
  JobAbandonedEvent,
} from './worker.js';
export { createShellHandler, shellHandler, jobEnvironment, upstreamEnvName, formatExitError, ShellCommandError } from './shell.js';
export type { ShellHandlerOptions } from './shell.js';
export { loadWorkerConfig } from './command.js';
export type { WorkerConfig } from './command.js';
