/**
 * Every change the SQLite store makes, by name: the table the writer runs (group-commit.ts), on the
 * writer thread or inline. Each is a synchronous function of a connection: its statements run back to
 * back with no await, and none of them opens or ends a transaction, so several can run one after
 * another inside a single transaction (one commit for a batch) without changing what any of them does.
 * A write that throws leaves its statements half done: a batch gives each its own savepoint.
 *
 * The hop to the writer thread carries a name and an argument list; WriteArgs and WriteResult derive
 * both from the functions below, so a call with the wrong arguments, or a caller expecting another
 * result, does not compile.
 */
import type { Conn } from './connection.js';
import { abortArtifactUpload, beginArtifactUpload, finishArtifactUpload, putArtifactChunk } from './artifacts.js';
import { decideApproval, timeOutApprovals } from './approvals.js';
import { settleJobGroups } from './job-concurrency.js';
import { finishRunEnds } from './run-ends.js';
import { settleCall, startChildRun } from './calls.js';
import { claim, releaseLeases } from './claim.js';
import { complete, fail, heartbeat, pushLogs } from './leases.js';
import { expireLeases, settleStrandedRuns, timeOutJobs } from './reaper.js';
import { deleteWorkflow, pruneRuns } from './retention.js';
import { cancelRun, fireSchedule, startQueuedRuns, startRun } from './runs.js';
import { deleteSecret, putSecret, rewriteLogChunk } from './secrets.js';
import { claimNotifications, createNotifications, pruneNotifications, settleNotification } from './notifications.js';
import { pruneWorkers, registerWorker } from './workers.js';
import { createWorkflow, saveWorkflow } from './workflows.js';

export const WRITES = {
  createWorkflow,
  saveWorkflow,
  startRun,
  startQueuedRuns,
  fireSchedule,
  cancelRun,
  claim,
  releaseLeases,
  heartbeat,
  complete,
  fail,
  pushLogs,
  decideApproval,
  timeOutApprovals,
  settleJobGroups,
  finishRunEnds,
  startChildRun,
  settleCall,
  registerWorker,
  pruneWorkers,
  expireLeases,
  timeOutJobs,
  settleStrandedRuns,
  pruneRuns,
  deleteWorkflow,
  beginArtifactUpload,
  putArtifactChunk,
  finishArtifactUpload,
  abortArtifactUpload,
  putSecret,
  deleteSecret,
  rewriteLogChunk,
  createNotifications,
  claimNotifications,
  settleNotification,
  pruneNotifications,
} satisfies Record<string, (c: Conn, ...args: never[]) => unknown>;

export type WriteName = keyof typeof WRITES;

/** The arguments of write `K` after the connection. */
export type WriteArgs<K extends WriteName> = (typeof WRITES)[K] extends (c: Conn, ...args: infer A) => unknown ? A : never;

/** What write `K` answers. */
export type WriteResult<K extends WriteName> = ReturnType<(typeof WRITES)[K]>;

/** Each write with its own signature, so that indexing by a generic name keeps name and arguments paired. */
type WriteFunctions = { [K in WriteName]: (c: Conn, ...args: WriteArgs<K>) => WriteResult<K> };
const TYPED: WriteFunctions = WRITES;

/**
 * One write as it crosses to the writer: a name and its arguments. Built by writeCall, which checks
 * the arguments against the name; the writer, which gets it through a thread's message port, checks
 * the name again (group-commit.ts).
 */
export interface WriteCall {
  id: number;
  op: WriteName;
  args: readonly unknown[];
}

export function writeCall<K extends WriteName>(id: number, op: K, ...args: WriteArgs<K>): WriteCall {
  return { id, op, args };
}

/** Runs write `name` on `c`, outside any batch (the caller owns the transaction). */
export function runWrite<K extends WriteName>(c: Conn, name: K, ...args: WriteArgs<K>): WriteResult<K> {
  return TYPED[name](c, ...args);
}
