import postgres from 'postgres';
import type { Outputs } from '../../domain/types.js';
import type {
  CancelRunOutcome,
  ClaimRequest,
  Claimed,
  CompleteOutcome,
  FailOutcome,
  HeartbeatOutcome,
  IncomingChunk,
  JobChange,
  LabelSet,
  NewJob,
  PushLogsOutcome,
  StartRunOutcome,
  Store,
  StoreReads,
  WorkerRecord,
  WorkflowRecord,
} from '../store.js';
import { settleStrandedRuns } from './failures.js';
import * as leaseOps from './lease-ops.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { makeReads } from './reads.js';
import * as runOps from './run-ops.js';
import { transaction, type Sql } from './tx.js';

export { QUERIES } from './queries.js';

export interface PostgresStoreOptions {
  /** Pool size. */
  max?: number;
}

/** Advisory lock key (hashtext of a name; scoped to the database by PostgreSQL). */
const MIGRATION_LOCK = `hashtext('weft.store.migrations')`;

/**
 * The networked store: a postgres.js pool. Every operation is one statement or one READ COMMITTED
 * transaction whose writes are guarded by the state they expect, with rows locked in one order (see
 * queries.ts), so any number of server processes can share a database without a global lock. `read` is
 * a REPEATABLE READ, READ ONLY transaction, so everything `fn` reads comes from one snapshot.
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';

  private constructor(readonly sql: Sql) {}

  /** Connects, applies pending migrations and returns the store. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const sql = postgres(url, {
      max: opts.max ?? 10,
      onnotice: () => {},
      // int8 (BIGINT, BIGSERIAL, count(*)) as JS numbers: epoch milliseconds and row ids fit easily.
      types: {
        bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      },
    }) as unknown as Sql;
    try {
      await migrate(sql);
    } catch (err) {
      await sql.end({ timeout: 1 }).catch(() => {});
      throw new Error(`cannot open PostgreSQL database ${redact(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new PostgresStore(sql);
  }

  read<T>(fn: (reads: StoreReads) => Promise<T>): Promise<T> {
    // `fn` is the caller's code: never run it twice.
    return transaction(this.sql, (q) => fn(makeReads(q)), {
      mode: 'ISOLATION LEVEL REPEATABLE READ READ ONLY',
      retry: false,
    });
  }

  createWorkflow(rec: WorkflowRecord): Promise<'created' | 'exists'> {
    return runOps.createWorkflow(this.sql, rec);
  }

  saveWorkflow(rec: WorkflowRecord): Promise<'created' | 'updated' | 'unchanged'> {
    return runOps.saveWorkflow(this.sql, rec);
  }

  startRun(req: {
    workflow_id: string;
    expected_hash: string;
    jobs: readonly NewJob[];
    label_sets: readonly LabelSet[];
    now_ms: number;
  }): Promise<StartRunOutcome> {
    return runOps.startRun(this.sql, req);
  }

  cancelRun(workflowId: string, nowMs: number): Promise<CancelRunOutcome> {
    return runOps.cancelRun(this.sql, workflowId, nowMs);
  }

  claim(req: ClaimRequest): Promise<Claimed[]> {
    return runOps.claim(this.sql, req);
  }

  releaseLeases(leaseIds: readonly string[], _nowMs: number): Promise<JobChange[]> {
    return leaseOps.releaseLeases(this.sql, leaseIds);
  }

  heartbeat(leaseId: string, nowMs: number): Promise<HeartbeatOutcome> {
    return leaseOps.heartbeat(this.sql, leaseId, nowMs);
  }

  complete(leaseId: string, outputs: Outputs, nowMs: number): Promise<CompleteOutcome> {
    return leaseOps.complete(this.sql, leaseId, outputs, nowMs);
  }

  fail(leaseId: string, error: string, retryable: boolean, nowMs: number): Promise<FailOutcome> {
    return leaseOps.fail(this.sql, leaseId, error, retryable, nowMs);
  }

  pushLogs(leaseId: string, chunks: readonly IncomingChunk[], nowMs: number): Promise<PushLogsOutcome> {
    return leaseOps.pushLogs(this.sql, leaseId, chunks, nowMs);
  }

  expireLeases(nowMs: number, limit: number): Promise<JobChange[]> {
    return leaseOps.expireLeases(this.sql, nowMs, limit);
  }

  timeOutJobs(nowMs: number, limit: number): Promise<JobChange[]> {
    return leaseOps.timeOutJobs(this.sql, nowMs, limit);
  }

  settleStrandedRuns(nowMs: number, limit: number): Promise<number> {
    return settleStrandedRuns(this.sql, nowMs, limit);
  }

  registerWorker(workerId: string, labels: readonly string[], nowMs: number): Promise<WorkerRecord> {
    return runOps.registerWorker(this.sql, workerId, labels, nowMs);
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

async function migrate(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    // Two processes starting on a fresh database queue here; the second finds everything applied.
    await tx.unsafe(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)`);
    const applied = new Set((await tx`SELECT version FROM schema_migrations`).map((r) => r.version as number));
    for (const m of POSTGRES_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (${m.version}, ${m.name}, ${Date.now()})`;
    }
  });
}
