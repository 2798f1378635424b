/** The embeddable worker and the shell handler `weft worker` runs. */
export { Worker } from './worker.js';
export { PermanentError, JobAbortedError } from './types.js';
export { parseSetOutput, truncateError, isTransient, defaultWorkerId, MAX_ERROR_CHARS } from './helpers.js';
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
} from './types.js';
export { createShellHandler, shellHandler, jobEnvironment, upstreamEnvName, formatExitError, ShellCommandError } from './shell.js';
export type { ShellHandlerOptions } from './shell.js';
export { loadWorkerConfig } from './command.js';
export type { WorkerConfig } from './command.js';
