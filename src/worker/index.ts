/** The embeddable worker and the shell handler `weft worker` runs. */
export { Worker } from './worker.js';
export { PermanentError, JobAbortedError } from './worker-api.js';
export { parseSetOutput, truncateError, MAX_ERROR_CHARS } from './outcome.js';
export { isTransient } from './answers.js';
export { defaultWorkerId } from './worker-id.js';
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
} from './worker-api.js';
export { createShellHandler, shellHandler, jobEnvironment, upstreamEnvName, formatExitError, ShellCommandError } from './shell.js';
export type { ShellHandlerOptions } from './shell.js';
export { loadWorkerConfig } from './config.js';
export type { WorkerConfig } from './config.js';
