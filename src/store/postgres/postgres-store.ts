import type { Outputs } from '../../domain/model.js';
import type {
  BeginUploadOutcome,
  FinishUploadOutcome,
  CancelRunOutcome,
  DecideApprovalOutcome,
  DecideApprovalRequest,
  StoreClaim,
  Claimed,
  CompleteOutcome,
  DeleteLimits,
  DeleteWorkflowOutcome,
  FailOutcome,
  FireScheduleOutcome,
  FireScheduleRequest,
  HeartbeatOutcome,
  IncomingChunk,
  JobChange,
  PruneOutcome,
  PruneRequest,
  PushLogsOutcome,
  ReapOutcome,
  JobGroupsOutcome,
  StartRunOutcome,
  StartedRuns,
  StartRunRequest,
  Store,
  StoreReads,
  WorkerRecord,
  WorkflowRecord,
  LogChunkKey,
  SecretRecord,
  CallChainRefusal,
  SettleCallOutcome,
  SettleCallRequest,
  StartChildRunOutcome,
  StartChildRunRequest,
  NewNotification,
  NotificationClaim,
  NotificationRecord,
  NotificationResult,
} from '../store.js';
import { abortArtifactUpload, beginArtifactUpload, finishArtifactUpload, putArtifactChunk } from './artifacts.js';
import { claim, releaseLeases } from './claim.js';
import { deleteSecret, putSecret, rewriteLogChunk } from './secrets.js';
import { claimNotifications, createNotifications, pruneNotifications, settleNotification } from './notifications.js';
import * as events from './events.js';
import { claimAfterCompletes, complete, fail, heartbeat, pushLogs } from './leases.js';
import type { PostgresOptions } from './options.js';
import { migrate } from './migrations.js';
import { makeReads } from './reads.js';
import { expireLeases, settleStrandedRuns, timeOutJobs } from './reaper.js';
import { decideApproval, timeOutApprovals } from './approvals.js';
import { settleJobGroups } from './job-concurrency.js';
import { finishRunEnds, pendingRunEnds } from './run-ends.js';
import type { RunEnd, RunEndConsumer } from '../run-end-types.js';
import { deleteWorkflow, pruneRuns } from './retention.js';
import { cancelRun, fireSchedule, startQueuedRuns, startRun } from './runs.js';
import { pruneWorkers, registerWorker } from './workers.js';
import { createWorkflow, saveWorkflow } from './workflows.js';
import { settleCall, startChildRun } from './calls.js';
import { endPool, observeCommits, openPool, transaction, type PoolOptions, type Sql } from './tx.js';

export { QUERIES } from './queries.js';

export type PostgresStoreOptions = PostgresOptions;

/** README "Configuration": PG_POOL_MAX, PG_STATEMENT_TIMEOUT_MS, PG_CONNECT_TIMEOUT_MS. */
export const POSTGRES_DEFAULTS = { max: 10, statementTimeoutMs: 30_000, connectTimeoutMs: 5_000 } as const;

/**
 * Seconds a closed connection waits before it reconnects, by how many connection attempts failed in a
 * row. postgres.js's own curve climbs to 20 s within a few failures, so a pool that failed through a
 * short outage would keep requests waiting, and itself away from the database, long after the
 * database is back. Half a second at most keeps reconnecting cheap (a refused connect costs nothing)
 * and recovery prompt.
 */
function reconnectDelaySecs(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 0.5) * (0.5 + Math.random() / 2);
}

/**
 * Settings every connection starts with (startup parameters, so they hold on every connection,
 * reconnects included; strings, since the driver leaves falsy values out and 0 must still override a
 * database default).
 *
 * `enable_seqscan = off`: each connection keeps its statements prepared, and PostgreSQL keeps the
 * plan it chose for one from the statistics of that moment until the table is analyzed again. On a
 * new or fast-growing database that moment sees tables of a few rows, where reading all of them is
 * cheapest, and the plan then reads the whole table at every run as it grows: the run check behind
 * each complete (runsOpenOfLeases) scanned all of `leases`, a third of PostgreSQL's CPU per job on
 * the spec path until autovacuum's next ANALYZE (docs/performance.md "Fourth round"). Every statement
 * of queries.ts is written for an index, and the index-plan tests check them with this setting
 * (test/helpers/plans.ts); a statement with no index to use still reads the table.
 */
export function connectionParameters(statementTimeoutMs: number): Record<string, string> {
  return { application_name: 'weft', statement_timeout: String(statementTimeoutMs), enable_seqscan: 'off' };
}

/** A one-dimensional PostgreSQL array literal, every element quoted (numbers included). */
function arrayLiteral(xs: readonly unknown[]): string {
  return `{${xs.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
}

/**
 * The array types queries.ts sends as parameters (text[], int[], bigint[]). The driver would learn
 * them from a catalogue query on every new connection (`fetch_types`), but when that query fails
 * (the server shutting down or the backend terminated just then) its rejection is unhandled and ends
 * the process. A statement with another array parameter needs its type added here.
 */
const ARRAY_PARAMETERS = {
  text_array: { to: 1009, from: [] as number[], serialize: arrayLiteral, parse: (x: string) => x },
  int4_array: { to: 1007, from: [] as number[], serialize: arrayLiteral, parse: (x: string) => x },
  int8_array: { to: 1016, from: [] as number[], serialize: arrayLiteral, parse: (x: string) => x },
};

/**
 * The networked store, over postgres.js connections (tx.ts). Every operation is one statement or one
 * READ COMMITTED transaction whose writes are guarded by the state they expect, with rows locked in one
 * order (see queries.ts), so any number of server processes can share a database without a global
 * lock. `read` is a REPEATABLE READ, READ ONLY transaction, so everything `fn` reads comes from one
 * snapshot.
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly writesShareCommits = false;

  private constructor(
    readonly sql: Sql,
    private readonly url: string,
  ) {}

  /** Connects, applies pending migrations and returns the store. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const statementTimeoutMs = opts.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs;
    const connectTimeoutMs = opts.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs;
    const options: PoolOptions = {
      connect_timeout: connectTimeoutMs / 1000,
      backoff: reconnectDelaySecs,
      connection: connectionParameters(statementTimeoutMs) as unknown as PoolOptions['connection'],
      onnotice: () => {},
      fetch_types: false,
      types: {
        // int8 (BIGINT, BIGSERIAL, count(*)) as JS numbers: epoch milliseconds and row ids fit easily.
        bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
        ...ARRAY_PARAMETERS,
      },
    };
    // Each statement has the statement timeout; a whole operation (waiting for a connection, then its
    // statements) gets one connect timeout and one statement timeout, and a second to spare, before
    // the caller is told the database is unavailable.
    const operationLimitMs = statementTimeoutMs > 0 ? connectTimeoutMs + statementTimeoutMs + 1000 : 0;
    const sql = openPool(url, options, opts.max ?? POSTGRES_DEFAULTS.max, operationLimitMs);
    try {
      await migrate(sql);
    } catch (err) {
      await endPool(sql, 1).catch(() => {});
      throw new Error(`cannot open PostgreSQL database ${redact(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new PostgresStore(sql, url);
  }

  read<T>(fn: (reads: StoreReads) => Promise<T>): Promise<T> {
    // `fn` is the caller's code: never run it twice.
    return transaction(this.sql, (q) => fn(makeReads(q)), {
      mode: 'ISOLATION LEVEL REPEATABLE READ READ ONLY',
      retry: false,
    });
  }

  // Each write below is the Store method (documented in store.ts) handed to the function of the same
  // name, in the file of the same name as the SQLite store's (docs/architecture.md "The two stores
  // side by side").

  createWorkflow(rec: WorkflowRecord): Promise<'created' | 'exists' | CallChainRefusal> {
    return createWorkflow(this.sql, rec);
  }

  saveWorkflow(rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged' | CallChainRefusal> {
    return saveWorkflow(this.sql, rec);
  }

  startRun(req: StartRunRequest): Promise<StartRunOutcome> {
    return startRun(this.sql, req);
  }

  cancelRun(workflowId: string, nowMs: number, runNumber?: number): Promise<CancelRunOutcome> {
    return cancelRun(this.sql, workflowId, nowMs, runNumber);
  }

  startQueuedRuns(workflowId: string, nowMs: number): Promise<StartedRuns> {
    return startQueuedRuns(this.sql, workflowId, nowMs);
  }

  fireSchedule(req: FireScheduleRequest): Promise<FireScheduleOutcome> {
    return fireSchedule(this.sql, req);
  }

  claim(req: StoreClaim): Promise<Claimed[]> {
    return req.after_completes ? claimAfterCompletes(this.sql, req) : claim(this.sql, req);
  }

  releaseLeases(leaseIds: readonly string[]): Promise<JobChange[]> {
    return releaseLeases(this.sql, leaseIds);
  }

  heartbeat(leaseId: string, nowMs: number, holder: string | null = null): Promise<HeartbeatOutcome> {
    return heartbeat(this.sql, leaseId, nowMs, holder);
  }

  complete(leaseId: string, outputs: Outputs, nowMs: number, holder: string | null = null): Promise<CompleteOutcome> {
    return complete(this.sql, leaseId, outputs, nowMs, holder);
  }

  fail(leaseId: string, error: string, retryable: boolean, nowMs: number, holder: string | null = null): Promise<FailOutcome> {
    return fail(this.sql, leaseId, error, retryable, nowMs, holder);
  }

  pushLogs(leaseId: string, chunks: readonly IncomingChunk[], nowMs: number, holder: string | null = null, maxBytes?: number): Promise<PushLogsOutcome> {
    return pushLogs(this.sql, leaseId, chunks, nowMs, holder, maxBytes);
  }

  decideApproval(req: DecideApprovalRequest): Promise<DecideApprovalOutcome> {
    return decideApproval(this.sql, req);
  }

  timeOutApprovals(nowMs: number, limit: number): Promise<ReapOutcome> {
    return timeOutApprovals(this.sql, nowMs, limit);
  }

  settleJobGroups(nowMs: number, limit: number): Promise<JobGroupsOutcome> {
    return settleJobGroups(this.sql, nowMs, limit);
  }

  pendingRunEnds(consumer: RunEndConsumer, limit: number): Promise<RunEnd[]> {
    return pendingRunEnds(this.sql, consumer, limit);
  }

  finishRunEnds(consumer: RunEndConsumer, seqs: readonly number[]): Promise<void> {
    return finishRunEnds(this.sql, consumer, seqs);
  }

  startChildRun(req: StartChildRunRequest): Promise<StartChildRunOutcome> {
    return startChildRun(this.sql, req);
  }

  settleCall(req: SettleCallRequest): Promise<SettleCallOutcome> {
    return settleCall(this.sql, req);
  }

  expireLeases(nowMs: number, limit: number): Promise<ReapOutcome> {
    return expireLeases(this.sql, nowMs, limit);
  }

  timeOutJobs(nowMs: number, limit: number): Promise<ReapOutcome> {
    return timeOutJobs(this.sql, nowMs, limit);
  }

  listen(onMessage: (payload: string) => void, onResync: () => void, onError?: (err: Error) => void): Promise<() => Promise<void>> {
    return events.listen(this.url, onMessage, onResync, onError ?? (() => {}));
  }

  publish(payload: string): Promise<void> {
    return events.publish(this.sql, payload);
  }

  settleStrandedRuns(nowMs: number, limit: number): Promise<number> {
    return settleStrandedRuns(this.sql, nowMs, limit);
  }

  pruneRuns(req: PruneRequest): Promise<PruneOutcome> {
    return pruneRuns(this.sql, req);
  }

  deleteWorkflow(id: string, limits: DeleteLimits): Promise<DeleteWorkflowOutcome> {
    return deleteWorkflow(this.sql, id, limits);
  }

  beginArtifactUpload(leaseId: string, nowMs: number, holder: string | null = null): Promise<BeginUploadOutcome> {
    return beginArtifactUpload(this.sql, leaseId, nowMs, holder);
  }

  putArtifactChunk(blobId: string, seq: number, data: Uint8Array): Promise<void> {
    return putArtifactChunk(this.sql, blobId, seq, data);
  }

  finishArtifactUpload(
    leaseId: string,
    upload: { blob_id: string; name: string; size: number; sha256: string; chunk_bytes: number },
    nowMs: number,
    holder: string | null = null,
  ): Promise<FinishUploadOutcome> {
    return finishArtifactUpload(this.sql, leaseId, upload, nowMs, holder);
  }

  abortArtifactUpload(blobId: string): Promise<void> {
    return abortArtifactUpload(this.sql, blobId);
  }

  putSecret(rec: SecretRecord): Promise<'created' | 'updated'> {
    return putSecret(this.sql, rec);
  }

  deleteSecret(scope: string, name: string): Promise<boolean> {
    return deleteSecret(this.sql, scope, name);
  }

  rewriteLogChunk(key: LogChunkKey, expected: string, data: string): Promise<boolean> {
    return rewriteLogChunk(this.sql, key, expected, data);
  }

  createNotifications(rows: readonly NewNotification[]): Promise<number> {
    return createNotifications(this.sql, rows);
  }

  claimNotifications(req: NotificationClaim): Promise<NotificationRecord[]> {
    return claimNotifications(this.sql, req);
  }

  settleNotification(id: string, claimId: string, result: NotificationResult, nowMs: number): Promise<boolean> {
    return settleNotification(this.sql, id, claimId, result, nowMs);
  }

  pruneNotifications(beforeMs: number, limit: number): Promise<number> {
    return pruneNotifications(this.sql, beforeMs, limit);
  }

  registerWorker(workerId: string, labels: readonly string[], nowMs: number): Promise<WorkerRecord> {
    return registerWorker(this.sql, workerId, labels, nowMs);
  }

  pruneWorkers(seenBeforeMs: number, limit: number): Promise<number> {
    return pruneWorkers(this.sql, seenBeforeMs, limit);
  }

  onCommit(observer: (seconds: number) => void): void {
    observeCommits(this.sql, observer);
  }

  async close(): Promise<void> {
    await endPool(this.sql, 5);
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
