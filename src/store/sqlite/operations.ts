/**
 * Every change the SQLite store makes, as a synchronous function of a connection: its statements run
 * back to back with no await, and none of them opens or ends a transaction. The store wraps each in
 * its own BEGIN IMMEDIATE … COMMIT today; because they neither yield nor commit, several can as well
 * run one after another inside a single transaction (one commit for a batch) without changing what
 * any of them does. An operation that throws leaves its statements half done: a batch must give each
 * its own savepoint.
 */
export { createWorkflow, saveWorkflow, startRun, startQueuedRuns, cancelRun, fireSchedule } from './run-ops.js';
export { claim, releaseLeases, heartbeat, complete, fail, pushLogs, registerWorker, pruneWorkers } from './worker-ops.js';
export { expireLeases, timeOutJobs, settleStrandedRuns } from './reaper-ops.js';
export { pruneRuns, deleteWorkflow } from './retention-ops.js';
