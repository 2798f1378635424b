import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { Outputs } from '../../domain/model.js';
import type {
  LogChunkKey,
  SecretRecord,
  NewNotification,
  NotificationClaim,
  NotificationRecord,
  NotificationResult,
  BeginUploadOutcome,
  FinishUploadOutcome,
  CancelRunOutcome,
  DecideApprovalOutcome,
  DecideApprovalRequest,
  Claimed,
  StoreClaim,
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
  CallChainRefusal,
  SettleCallOutcome,
  SettleCallRequest,
  StartChildRunOutcome,
  StartChildRunRequest,
} from '../store.js';
import { Mutex } from '../mutex.js';
import { Conn, openConnection, prepareDatabaseFile, type SqliteStoreOptions } from './connection.js';
import { timedBatch } from './group-commit.js';
import { ThreadWriter } from './writer.js';
import { migrate } from './migrations.js';
import { makeReads } from './reads.js';
import { previewPrune } from './retention.js';
import { pendingRunEnds } from './run-ends.js';
import type { RunEnd, RunEndConsumer } from '../run-end-types.js';
import { writeCall, type WriteArgs, type WriteName, type WriteResult } from './writes.js';

export type { SqliteStoreOptions } from './connection.js';

/**
 * The embedded store, SQLite in WAL mode (docs/architecture.md "Store"). Writes run on a dedicated
 * writer thread with its own connection: the operations that arrive while one commit is being made
 * durable are applied together in the next transaction, each in its own savepoint, and each is
 * answered only after the commit that holds it (group commit, docs/performance.md). Reads run here, on
 * this thread's connection; WAL lets them proceed while the writer commits. Other processes on the
 * same file (a `weft scheduler` beside an API_ONLY server) take turns through BEGIN IMMEDIATE +
 * busy_timeout, which now blocks the writer thread, never the event loop.
 *
 * Only `read` spans awaits: its `fn` may yield between statements while its transaction is open on
 * this connection, so the mutex keeps other reads (and inline writes) out of it meanwhile.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly writesShareCommits = true;
  private readonly db: Database.Database;
  private readonly conn: Conn;
  private readonly reads: StoreReads;
  private readonly lock = new Mutex();
  private readonly beginRead: Statement;
  private readonly commit: Statement;
  private readonly rollback: Statement;
  private readonly writer: ThreadWriter | null;
  private commitObserver: ((seconds: number) => void) | null = null;
  /** The mode of an existing database file that group or others may read or write (see prepareDatabaseFile), else null. */
  readonly exposedFileMode: number | null;

  constructor(
    readonly file: string,
    opts: SqliteStoreOptions = {},
  ) {
    this.exposedFileMode = prepareDatabaseFile(file);
    this.db = openConnection(file, opts);
    migrate(this.db);
    // The writer thread opens its own connection, which only a file can be shared with.
    const threaded = (opts.writer ?? (file === ':memory:' ? 'inline' : 'thread')) === 'thread' && file !== ':memory:';
    this.writer = threaded ? new ThreadWriter(file, opts) : null;
    this.conn = new Conn(this.db);
    this.reads = makeReads(this.conn);
    this.beginRead = this.db.prepare('BEGIN DEFERRED');
    this.commit = this.db.prepare('COMMIT');
    this.rollback = this.db.prepare('ROLLBACK');
  }

  async read<T>(fn: (reads: StoreReads) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      this.beginRead.run();
      try {
        const result = await fn(this.reads);
        this.commit.run();
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.rollback.run();
        throw err;
      }
    });
  }

  // Each write below is the Store method (documented in store.ts) handed to the write of the same name
  // (writes.ts). They stay methods rather than a generated table: each one is checked against both
  // the Store interface and its write's own signature, and the few that differ (pruneRuns)
  // read as what they are.

  createWorkflow(rec: WorkflowRecord): Promise<'created' | 'exists' | CallChainRefusal> {
    return this.write('createWorkflow', rec);
  }

  saveWorkflow(rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged' | CallChainRefusal> {
    return this.write('saveWorkflow', rec);
  }

  startRun(req: StartRunRequest): Promise<StartRunOutcome> {
    return this.write('startRun', req);
  }

  cancelRun(workflowId: string, nowMs: number, runNumber?: number): Promise<CancelRunOutcome> {
    return this.write('cancelRun', workflowId, nowMs, runNumber);
  }

  startQueuedRuns(workflowId: string, nowMs: number): Promise<StartedRuns> {
    return this.write('startQueuedRuns', workflowId, nowMs);
  }

  fireSchedule(req: FireScheduleRequest): Promise<FireScheduleOutcome> {
    return this.write('fireSchedule', req);
  }

  claim(req: StoreClaim): Promise<Claimed[]> {
    return this.write('claim', req);
  }

  releaseLeases(leaseIds: readonly string[]): Promise<JobChange[]> {
    return this.write('releaseLeases', leaseIds);
  }

  heartbeat(leaseId: string, nowMs: number, holder: string | null = null): Promise<HeartbeatOutcome> {
    return this.write('heartbeat', leaseId, nowMs, holder);
  }

  complete(leaseId: string, outputs: Outputs, nowMs: number, holder: string | null = null): Promise<CompleteOutcome> {
    return this.write('complete', leaseId, outputs, nowMs, holder);
  }

  fail(leaseId: string, error: string, retryable: boolean, nowMs: number, holder: string | null = null): Promise<FailOutcome> {
    return this.write('fail', leaseId, error, retryable, nowMs, holder);
  }

  pushLogs(leaseId: string, chunks: readonly IncomingChunk[], nowMs: number, holder: string | null = null, maxBytes?: number): Promise<PushLogsOutcome> {
    return this.write('pushLogs', leaseId, chunks, nowMs, holder, maxBytes);
  }

  decideApproval(req: DecideApprovalRequest): Promise<DecideApprovalOutcome> {
    return this.write('decideApproval', req);
  }

  timeOutApprovals(nowMs: number, limit: number): Promise<ReapOutcome> {
    return this.write('timeOutApprovals', nowMs, limit);
  }

  settleJobGroups(nowMs: number, limit: number): Promise<JobGroupsOutcome> {
    return this.write('settleJobGroups', nowMs, limit);
  }

  /** A read on this thread's connection: WAL lets it go on while the writer commits. */
  pendingRunEnds(consumer: RunEndConsumer, limit: number): Promise<RunEnd[]> {
    return this.lock.run(async () => pendingRunEnds(this.conn, consumer, limit));
  }

  finishRunEnds(consumer: RunEndConsumer, seqs: readonly number[]): Promise<void> {
    return this.write('finishRunEnds', consumer, seqs);
  }

  startChildRun(req: StartChildRunRequest): Promise<StartChildRunOutcome> {
    return this.write('startChildRun', req);
  }

  settleCall(req: SettleCallRequest): Promise<SettleCallOutcome> {
    return this.write('settleCall', req);
  }

  expireLeases(nowMs: number, limit: number): Promise<ReapOutcome> {
    return this.write('expireLeases', nowMs, limit);
  }

  timeOutJobs(nowMs: number, limit: number): Promise<ReapOutcome> {
    return this.write('timeOutJobs', nowMs, limit);
  }

  settleStrandedRuns(nowMs: number, limit: number): Promise<number> {
    return this.write('settleStrandedRuns', nowMs, limit);
  }

  /** A dry run is a read: it takes no write lock, however much it lists. */
  pruneRuns(req: PruneRequest): Promise<PruneOutcome> {
    if (req.dry_run) return this.read(async () => previewPrune(this.conn, req));
    return this.write('pruneRuns', req);
  }

  deleteWorkflow(id: string, limits: DeleteLimits): Promise<DeleteWorkflowOutcome> {
    return this.write('deleteWorkflow', id, limits);
  }

  beginArtifactUpload(leaseId: string, nowMs: number, holder: string | null = null): Promise<BeginUploadOutcome> {
    return this.write('beginArtifactUpload', leaseId, nowMs, holder);
  }

  putArtifactChunk(blobId: string, seq: number, data: Uint8Array): Promise<void> {
    return this.write('putArtifactChunk', blobId, seq, data);
  }

  finishArtifactUpload(
    leaseId: string,
    upload: { blob_id: string; name: string; size: number; sha256: string; chunk_bytes: number },
    nowMs: number,
    holder: string | null = null,
  ): Promise<FinishUploadOutcome> {
    return this.write('finishArtifactUpload', leaseId, upload, nowMs, holder);
  }

  abortArtifactUpload(blobId: string): Promise<void> {
    return this.write('abortArtifactUpload', blobId);
  }

  putSecret(rec: SecretRecord): Promise<'created' | 'updated'> {
    return this.write('putSecret', rec);
  }

  deleteSecret(scope: string, name: string): Promise<boolean> {
    return this.write('deleteSecret', scope, name);
  }

  rewriteLogChunk(key: LogChunkKey, expected: string, data: string): Promise<boolean> {
    return this.write('rewriteLogChunk', key, expected, data);
  }

  createNotifications(rows: readonly NewNotification[]): Promise<number> {
    return this.write('createNotifications', rows);
  }

  claimNotifications(req: NotificationClaim): Promise<NotificationRecord[]> {
    return this.write('claimNotifications', req);
  }

  settleNotification(id: string, claimId: string, result: NotificationResult, nowMs: number): Promise<boolean> {
    return this.write('settleNotification', id, claimId, result, nowMs);
  }

  pruneNotifications(beforeMs: number, limit: number): Promise<number> {
    return this.write('pruneNotifications', beforeMs, limit);
  }

  registerWorker(workerId: string, labels: readonly string[], nowMs: number): Promise<WorkerRecord> {
    return this.write('registerWorker', workerId, labels, nowMs);
  }

  pruneWorkers(seenBeforeMs: number, limit: number): Promise<number> {
    return this.write('pruneWorkers', seenBeforeMs, limit);
  }

  onCommit(observer: (seconds: number) => void): void {
    this.commitObserver = observer;
    if (this.writer) this.writer.onCommit = observer;
  }

  async close(): Promise<void> {
    await this.writer?.close();
    await this.lock.run(async () => {
      if (this.db.open) this.db.close();
    });
  }

  /**
   * One operation, durable when the promise resolves. On the writer thread it joins whatever batch
   * commits next; inline it runs in a transaction of its own, after any read transaction open here.
   */
  private async write<K extends WriteName>(name: K, ...args: WriteArgs<K>): Promise<WriteResult<K>> {
    if (this.writer) return this.writer.call(name, args);
    if (this.db.inTransaction) return this.lock.run(async () => this.inline(name, args));
    return this.inline(name, args);
  }

  private inline<K extends WriteName>(name: K, args: WriteArgs<K>): WriteResult<K> {
    const { results: [result], seconds } = timedBatch(this.db, this.conn, [writeCall(0, name, ...args)]);
    this.commitObserver?.(seconds);
    if (!result!.ok) throw Object.assign(new Error(result!.message), { stack: result!.stack ?? result!.message });
    return result!.value as WriteResult<K>;
  }
}
