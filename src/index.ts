/**
 * Package entry point: the client SDK and the building blocks for embedding weft. The `weft` command
 * lives in cli/.
 */
export * from './client/index.js';
export { Worker, PermanentError, JobAbortedError, createShellHandler, shellHandler } from './worker/index.js';
export type { WorkerOptions, JobHandler, JobContext, HandlerOutputs } from './worker/index.js';
export { Engine } from './engine/engine.js';
export { WeftError } from './protocol/index.js';
export { buildApp } from './http/app.js';
export { openStore, parseDatabaseUrl } from './store/index.js';
export type { Store } from './store/index.js';
export { parseWorkflowObject, parseWorkflowText, loadWorkflowDir, DefinitionError } from './definitions/index.js';
export type { WorkflowDefinition, JobSpec, Backoff, WireBackoff, JobState } from './domain/model.js';
export { startServer, startScheduler } from './runtime/server.js';
export { loadServerConfig } from './runtime/config.js';
export { VERSION } from './version.js';
