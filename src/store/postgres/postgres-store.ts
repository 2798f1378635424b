import postgres from 'postgres';
import { JOB_STATES, type RunState, type WorkflowDefinition } from '../../domain/types.js';
import type {
  JobPatch,
  LabelSet,
  LeasePatch,
  LeaseRecord,
  ListWorkflowsQuery,
  LogQuery,
  NewJob,
  Store,
  StoreOps,
  WorkerRecord,
} from '../store.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import {
  JOB_PATCH_COLUMNS,
  LEASE_PATCH_COLUMNS,
  jobPatchValues,
  jobRow,
  patchKeys,
  toJob,
  toLease,
  toLogChunk,
  toRun,
  toWorker,
  toWorkflow,
  type Row,
} from '../rows.js';

export interface PostgresStoreOptions {
  /** Pool size. */
  max?: number;
  /**
   * Serialize write transactions (`tx`) with one transaction-scoped advisory lock, the way SQLite's
   * BEGIN IMMEDIATE does. The engine's transactions read, decide, then write (a job completing reads its
   * dependents' needs to decide what to enqueue; a lease check reads the lease then settles it), which
   * under READ COMMITTED could lose an update between two concurrent transactions. Default true.
   * Claiming locks its row with FOR UPDATE SKIP LOCKED either way.
   */
  serializeWrites?: boolean;
}

type Tx = postgres.TransactionSql<Record<string, unknown>>;

/** Advisory lock keys (hashtext of a name; scoped to the database by PostgreSQL). */
const MIGRATION_LOCK = `hashtext('weft.store.migrations')`;
const WRITE_LOCK = `hashtext('weft.store.write')`;

const JOB_INSERT_COLUMNS = [
  'workflow_id', 'run_number', 'job_id', 'name', 'command', 'env', 'labels', 'label_key', 'needs', 'dependents',
  'max_retries', 'backoff', 'timeout_secs', 'status', 'attempt', 'enqueued_at_ms', 'delayed_until_ms', 'ready_at_ms',
  'started_at_ms', 'finished_at_ms', 'deadline_ms', 'error', 'outputs', 'upstream_outputs', 'worker_id', 'lease_id',
] as const;
/** Rows per multi-row INSERT: 26 columns x 1000 stays far below the 65535 bind-parameter limit. */
const INSERT_BATCH = 1000;
/** Claim candidates read per label key per round. */
const CLAIM_BATCH = 8;

/** The claim's candidate query for one label key: an ordered range read of jobs_claim. */
export const CLAIM_CANDIDATES_SQL = `SELECT row_id, ready_at_ms FROM jobs
  WHERE status = 'queued' AND label_key = $1 AND ready_at_ms <= $2 AND (ready_at_ms, row_id) > ($3, $4)
  ORDER BY ready_at_ms, row_id LIMIT $5`;

/**
 * The networked store: a postgres.js pool. `tx` is one `sql.begin` transaction (serialized with an
 * advisory lock unless disabled, see PostgresStoreOptions); `read` is a REPEATABLE READ, READ ONLY
 * transaction, so everything `fn` reads comes from one snapshot.
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  private readonly serializeWrites: boolean;

  private constructor(
    readonly sql: postgres.Sql<Record<string, unknown>>,
    opts: PostgresStoreOptions,
  ) {
    this.serializeWrites = opts.serializeWrites ?? true;
  }

  /** Connects, applies pending migrations and returns the store. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const sql = postgres(url, {
      max: opts.max ?? 10,
      onnotice: () => {},
      // int8 (BIGINT, BIGSERIAL, count(*)) as JS numbers: epoch milliseconds and row ids fit easily.
      types: {
        bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      },
    }) as unknown as postgres.Sql<Record<string, unknown>>;
    try {
      await migrate(sql);
    } catch (err) {
      await sql.end({ timeout: 1 }).catch(() => {});
      throw new Error(`cannot open PostgreSQL database ${redact(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new PostgresStore(sql, opts);
  }

  async tx<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    return (await this.sql.begin(async (tx) => {
      if (this.serializeWrites) await tx.unsafe(`SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
      return fn(makeOps(tx as Tx));
    })) as T;
  }

  async read<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    return (await this.sql.begin('isolation level repeatable read read only', (tx) => fn(makeOps(tx as Tx)))) as T;
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

async function migrate(sql: postgres.Sql<Record<string, unknown>>): Promise<void> {
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

function makeOps(sql: Tx): StoreOps {
  const one = async (q: Promise<readonly Row[]>): Promise<Row | undefined> => (await q)[0];
  return {
    getWorkflow: async (id) => {
      const row = await one(sql`SELECT * FROM workflows WHERE id = ${id}`);
      return row ? toWorkflow(row) : null;
    },
    insertWorkflow: async (rec) => {
      await sql`INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run)
        VALUES (${rec.id}, ${rec.name}, ${rec.trigger}, ${JSON.stringify(rec.definition)}, ${rec.source}, ${rec.hash},
          ${rec.created_at_ms}, ${rec.updated_at_ms}, ${rec.latest_run})`;
    },
    updateWorkflowDefinition: async (id, def: WorkflowDefinition, hash, source, nowMs) => {
      await sql`UPDATE workflows SET name = ${def.name}, trigger = ${def.trigger}, definition = ${JSON.stringify(def)},
        hash = ${hash}, source = ${source}, updated_at_ms = ${nowMs} WHERE id = ${id}`;
    },
    setLatestRun: async (id, runNumber) => {
      await sql`UPDATE workflows SET latest_run = ${runNumber} WHERE id = ${id}`;
    },
    listWorkflows: async ({ limit, offset, jobStatus }: ListWorkflowsQuery) => {
      const rows = jobStatus
        ? await sql`SELECT w.* FROM workflows w
            WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = ${jobStatus})
               OR (${jobStatus}::text = 'pending' AND w.latest_run = 0)
            ORDER BY w.id LIMIT ${limit} OFFSET ${offset}`
        : await sql`SELECT * FROM workflows ORDER BY id LIMIT ${limit} OFFSET ${offset}`;
      return rows.map(toWorkflow);
    },

    insertRun: async (run) => {
      await sql`INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms)
        VALUES (${run.workflow_id}, ${run.run_number}, ${run.status}, ${run.created_at_ms}, ${run.finished_at_ms})`;
    },
    getRun: async (workflowId, runNumber) => {
      const row = await one(sql`SELECT * FROM runs WHERE workflow_id = ${workflowId} AND run_number = ${runNumber}`);
      return row ? toRun(row) : null;
    },
    updateRun: async (workflowId, runNumber, status: RunState, finishedAtMs) => {
      await sql`UPDATE runs SET status = ${status}, finished_at_ms = ${finishedAtMs}
        WHERE workflow_id = ${workflowId} AND run_number = ${runNumber}`;
    },
    getRuns: async (keys) => {
      if (keys.length === 0) return [];
      return (
        await sql`SELECT r.* FROM unnest(${sql.array(keys.map((k) => k.workflow_id), 25)}::text[],
            ${sql.array(keys.map((k) => k.run_number), 23)}::int[]) AS k(workflow_id, run_number)
          JOIN runs r ON r.workflow_id = k.workflow_id AND r.run_number = k.run_number`
      ).map(toRun);
    },

    insertJobs: async (jobs: NewJob[]) => {
      for (let i = 0; i < jobs.length; i += INSERT_BATCH) {
        const rows = jobs.slice(i, i + INSERT_BATCH).map(jobRow);
        // Insert in the given order so row_id (the claim tie-break) follows it.
        await sql`INSERT INTO jobs ${(sql as any)(rows, ...JOB_INSERT_COLUMNS)}`;
      }
    },
    getRunJobs: async (workflowId, runNumber) =>
      (await sql`SELECT * FROM jobs WHERE workflow_id = ${workflowId} AND run_number = ${runNumber} ORDER BY row_id`).map(
        toJob,
      ),
    getJobsOfRuns: async (keys) => {
      if (keys.length === 0) return [];
      return (
        await sql`SELECT j.* FROM unnest(${sql.array(keys.map((k) => k.workflow_id), 25)}::text[],
            ${sql.array(keys.map((k) => k.run_number), 23)}::int[]) AS k(workflow_id, run_number)
          JOIN jobs j ON j.workflow_id = k.workflow_id AND j.run_number = k.run_number
          ORDER BY j.row_id`
      ).map(toJob);
    },
    getJob: async (workflowId, runNumber, jobId) => {
      const row = await one(
        sql`SELECT * FROM jobs WHERE workflow_id = ${workflowId} AND run_number = ${runNumber} AND job_id = ${jobId}`,
      );
      return row ? toJob(row) : null;
    },
    getJobs: async (workflowId, runNumber, jobIds) => {
      if (jobIds.length === 0) return [];
      return (
        await sql`SELECT * FROM jobs WHERE workflow_id = ${workflowId} AND run_number = ${runNumber}
          AND job_id = ANY(${sql.array([...jobIds], 25)}::text[]) ORDER BY row_id`
      ).map(toJob);
    },
    presentStates: async (workflowId, runNumber) => {
      const [row] = await sql.unsafe(
        `SELECT ${JOB_STATES.map(
          (s) => `EXISTS (SELECT 1 FROM jobs WHERE workflow_id = $1 AND run_number = $2 AND status = '${s}') AS "${s}"`,
        ).join(', ')}`,
        [workflowId, runNumber],
      );
      return new Set(JOB_STATES.filter((s) => (row as Row)[s] === true));
    },
    getJobByRowId: async (rowId) => {
      const row = await one(sql`SELECT * FROM jobs WHERE row_id = ${rowId}`);
      return row ? toJob(row) : null;
    },
    updateJob: async (rowId, patch: JobPatch) => {
      const keys = patchKeys(patch, JOB_PATCH_COLUMNS, 'jobs');
      if (keys.length === 0) return;
      await sql`UPDATE jobs SET ${(sql as any)(jobPatchValues(patch, keys), ...keys)} WHERE row_id = ${rowId}`;
    },
    nextClaimable: async (labelKeys, nowMs) => {
      // Per label key, read the next few candidates in claim order from jobs_claim without locking;
      // then try to lock the overall best with SKIP LOCKED. A row another transaction holds (or has
      // just claimed) is passed over and the next best candidate tried, so only the returned row is
      // locked, and concurrent claimers never get the same job.
      type Cand = { row_id: number; ready_at_ms: number };
      const lanes = [...new Set(labelKeys)].map((key) => ({
        key,
        buf: [] as Cand[],
        after: { ready: Number.MIN_SAFE_INTEGER, row: 0 },
        done: false,
      }));
      const refill = async (lane: (typeof lanes)[number]) => {
        const rows = (await sql.unsafe(CLAIM_CANDIDATES_SQL, [
          lane.key,
          nowMs,
          lane.after.ready,
          lane.after.row,
          CLAIM_BATCH,
        ])) as unknown as Cand[];
        lane.buf = rows.map((r) => ({ row_id: r.row_id, ready_at_ms: r.ready_at_ms }));
        const last = lane.buf[lane.buf.length - 1];
        if (last) lane.after = { ready: last.ready_at_ms, row: last.row_id };
        lane.done = lane.buf.length < CLAIM_BATCH;
      };
      for (const lane of lanes) await refill(lane);
      for (;;) {
        let best: (typeof lanes)[number] | undefined;
        for (const lane of lanes) {
          const head = lane.buf[0];
          if (!head) continue;
          const b = best?.buf[0];
          if (!b || head.ready_at_ms < b.ready_at_ms || (head.ready_at_ms === b.ready_at_ms && head.row_id < b.row_id)) {
            best = lane;
          }
        }
        if (!best) return null;
        const cand = best.buf.shift()!;
        const row = await one(
          sql`SELECT * FROM jobs WHERE row_id = ${cand.row_id} AND status = 'queued' AND ready_at_ms <= ${nowMs}
            FOR UPDATE SKIP LOCKED`,
        );
        if (row) return toJob(row);
        if (best.buf.length === 0 && !best.done) await refill(best);
      }
    },
    timedOutJobs: async (nowMs, limit) =>
      (
        await sql`SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ${nowMs}
          ORDER BY deadline_ms LIMIT ${limit}`
      ).map(toJob),

    ensureLabelSet: async (set: LabelSet) => {
      await sql`INSERT INTO label_sets (key, labels) VALUES (${set.key}, ${JSON.stringify(set.labels)})
        ON CONFLICT (key) DO NOTHING`;
    },
    listLabelSets: async () =>
      (await sql`SELECT key, labels FROM label_sets`).map((r) => ({
        key: r.key as string,
        labels: JSON.parse(r.labels as string) as string[],
      })),

    insertLease: async (l: LeaseRecord) => {
      await sql`INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
          granted_at_ms, renewed_at_ms, expires_at_ms, state)
        VALUES (${l.lease_id}, ${l.job_row_id}, ${l.workflow_id}, ${l.run_number}, ${l.job_id}, ${l.attempt},
          ${l.worker_id}, ${l.ttl_secs}, ${l.granted_at_ms}, ${l.renewed_at_ms}, ${l.expires_at_ms}, ${l.state})`;
    },
    getLease: async (leaseId) => {
      const row = await one(sql`SELECT * FROM leases WHERE lease_id = ${leaseId}`);
      return row ? toLease(row) : null;
    },
    updateLease: async (leaseId, patch: LeasePatch) => {
      const keys = patchKeys(patch, LEASE_PATCH_COLUMNS, 'leases');
      if (keys.length === 0) return;
      await sql`UPDATE leases SET ${(sql as any)(patch, ...keys)} WHERE lease_id = ${leaseId}`;
    },
    expiredLeases: async (nowMs, limit) =>
      (
        await sql`SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < ${nowMs}
          ORDER BY expires_at_ms LIMIT ${limit}`
      ).map(toLease),
    activeLeases: async () => (await sql`SELECT * FROM leases WHERE state = 'active'`).map(toLease),

    insertLogChunks: async (chunks) => {
      for (let i = 0; i < chunks.length; i += INSERT_BATCH) {
        const rows = chunks.slice(i, i + INSERT_BATCH).map((c) => ({
          workflow_id: c.workflow_id,
          run_number: c.run_number,
          job_id: c.job_id,
          attempt: c.attempt,
          sequence: c.sequence,
          stream: c.stream,
          data: c.data,
          timestamp_ms: c.timestamp_ms,
        }));
        await sql`INSERT INTO log_chunks ${(sql as any)(
          rows,
          'workflow_id', 'run_number', 'job_id', 'attempt', 'sequence', 'stream', 'data', 'timestamp_ms',
        )} ON CONFLICT DO NOTHING`;
      }
    },
    getLogChunks: async ({ workflow_id, run_number, job_id, attempt, afterSequence, limit }: LogQuery) =>
      (
        await sql`SELECT * FROM log_chunks WHERE workflow_id = ${workflow_id} AND run_number = ${run_number}
          AND job_id = ${job_id} AND attempt = ${attempt} AND sequence > ${afterSequence ?? -1}
          ORDER BY sequence LIMIT ${limit === undefined || limit < 0 ? null : limit}`
      ).map(toLogChunk),
    latestLogAttempt: async (workflowId, runNumber, jobId) => {
      const row = await one(
        sql`SELECT max(attempt) AS a FROM log_chunks WHERE workflow_id = ${workflowId} AND run_number = ${runNumber}
          AND job_id = ${jobId}`,
      );
      return (row?.a as number | null | undefined) ?? null;
    },

    upsertWorker: async (rec: WorkerRecord) => {
      await sql`INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
        VALUES (${rec.worker_id}, ${JSON.stringify(rec.labels)}, ${rec.registered_at_ms}, ${rec.last_seen_ms})
        ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`;
    },
    touchWorker: async (workerId, nowMs, labels) => {
      if (labels) {
        await sql`INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
          VALUES (${workerId}, ${JSON.stringify(labels)}, ${nowMs}, ${nowMs})
          ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`;
      } else {
        await sql`INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms)
          VALUES (${workerId}, '[]', ${nowMs}, ${nowMs})
          ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`;
      }
    },
    listWorkers: async () =>
      (await sql`SELECT * FROM workers ORDER BY worker_id`).map(toWorker),
  };
}
