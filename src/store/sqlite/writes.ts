/**
 * Every change the SQLite store makes, as a synchronous function of a connection: its statements run
 * back to back with no await, and none of them opens or ends a transaction. The store wraps each in
 * its own BEGIN IMMEDIATE … COMMIT today; because they neither yield nor commit, several can as well
 * run one after another inside a single transaction (one commit for a batch) without changing what
 * any of them does. An operation that throws leaves its statements half done: a batch must give each
 * its own savepoint.
 */
export { createWorkflow, saveWorkflow } from './workflows.js';
export { startRun, startQueuedRuns, fireSchedule, cancelRun } from './runs.js';
export { claim, releaseLeases } from './claim.js';
export { heartbeat, complete, fail, pushLogs } from './leases.js';
export { registerWorker, pruneWorkers } from './workers.js';
export { expireLeases, timeOutJobs, settleStrandedRuns } from './reaper.js';
export { pruneRuns, deleteWorkflow } from './retention.js';
