import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { JOB_STATES, type JobState, type RunState, type WorkflowDefinition } from '../../domain/types.js';
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
import { Mutex } from '../mutex.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
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

export interface SqliteStoreOptions {
  /** `synchronous` pragma. FULL makes every acknowledged commit survive power loss, not only a crash. */
  synchronous?: 'FULL' | 'NORMAL';
  busyTimeoutMs?: number;
}

/**
 * The embedded store: one better-sqlite3 connection in WAL mode. better-sqlite3 is synchronous, so a
 * transaction never yields to the event loop between statements except at the engine's awaits; the
 * mutex keeps other requests from running statements inside it meanwhile. Other processes on the same
 * file (a `weft scheduler` beside an API_ONLY server) are kept out by BEGIN IMMEDIATE + busy_timeout.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly lock = new Mutex();
  private readonly ops: StoreOps;
  private readonly stmts = new Map<string, Statement>();
  private readonly begin: Statement;
  private readonly beginRead: Statement;
  private readonly commit: Statement;
  private readonly rollback: Statement;

  constructor(
    readonly file: string,
    opts: SqliteStoreOptions = {},
  ) {
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    try {
      this.db = new Database(file);
    } catch (err) {
      throw new Error(`cannot open SQLite database at ${file}: ${(err as Error).message}`, { cause: err });
    }
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    this.db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    this.db.pragma('foreign_keys = ON');
    migrate(this.db);
    this.begin = this.db.prepare('BEGIN IMMEDIATE');
    this.beginRead = this.db.prepare('BEGIN DEFERRED');
    this.commit = this.db.prepare('COMMIT');
    this.rollback = this.db.prepare('ROLLBACK');
    this.ops = this.makeOps();
  }

  async tx<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    return this.lock.run(() => this.inTransaction(this.begin, fn));
  }

  async read<T>(fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    return this.lock.run(() => this.inTransaction(this.beginRead, fn));
  }

  async close(): Promise<void> {
    await this.lock.run(async () => {
      if (this.db.open) this.db.close();
    });
  }

  private async inTransaction<T>(begin: Statement, fn: (ops: StoreOps) => Promise<T>): Promise<T> {
    begin.run();
    try {
      const result = await fn(this.ops);
      this.commit.run();
      return result;
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      throw err;
    }
  }

  /** Prepared statements are cached by their SQL text: preparing is the costly part. */
  private stmt(sql: string): Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  private makeOps(): StoreOps {
    const q = (sql: string) => this.stmt(sql);
    return {
      getWorkflow: async (id) => {
        const row = q('SELECT * FROM workflows WHERE id = ?').get(id) as Row | undefined;
        return row ? toWorkflow(row) : null;
      },
      insertWorkflow: async (rec) => {
        q(
          `INSERT INTO workflows (id, name, trigger, definition, source, hash, created_at_ms, updated_at_ms, latest_run)
           VALUES (@id, @name, @trigger, @definition, @source, @hash, @created_at_ms, @updated_at_ms, @latest_run)`,
        ).run({ ...rec, definition: JSON.stringify(rec.definition) });
      },
      updateWorkflowDefinition: async (id, def: WorkflowDefinition, hash, source, nowMs) => {
        q(
          `UPDATE workflows SET name = ?, trigger = ?, definition = ?, hash = ?, source = ?, updated_at_ms = ?
           WHERE id = ?`,
        ).run(def.name, def.trigger, JSON.stringify(def), hash, source, nowMs, id);
      },
      setLatestRun: async (id, runNumber) => {
        q('UPDATE workflows SET latest_run = ? WHERE id = ?').run(runNumber, id);
      },
      listWorkflows: async ({ limit, offset, jobStatus }: ListWorkflowsQuery) => {
        const rows = jobStatus
          ? (q(
              `SELECT w.* FROM workflows w
               WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND j.run_number = w.latest_run AND j.status = @status)
                  OR (@status = 'pending' AND w.latest_run = 0)
               ORDER BY w.id LIMIT @limit OFFSET @offset`,
            ).all({ status: jobStatus, limit, offset }) as Row[])
          : (q('SELECT * FROM workflows ORDER BY id LIMIT ? OFFSET ?').all(limit, offset) as Row[]);
        return rows.map(toWorkflow);
      },

      insertRun: async (run) => {
        q(
          `INSERT INTO runs (workflow_id, run_number, status, created_at_ms, finished_at_ms)
           VALUES (@workflow_id, @run_number, @status, @created_at_ms, @finished_at_ms)`,
        ).run(run);
      },
      getRun: async (workflowId, runNumber) => {
        const row = q('SELECT * FROM runs WHERE workflow_id = ? AND run_number = ?').get(workflowId, runNumber) as
          | Row
          | undefined;
        return row ? toRun(row) : null;
      },
      updateRun: async (workflowId, runNumber, status: RunState, finishedAtMs) => {
        q('UPDATE runs SET status = ?, finished_at_ms = ? WHERE workflow_id = ? AND run_number = ?').run(
          status,
          finishedAtMs,
          workflowId,
          runNumber,
        );
      },
      getRuns: async (keys) => {
        if (keys.length === 0) return [];
        return (
          q(
            `SELECT r.* FROM json_each(?) k
             JOIN runs r ON r.workflow_id = json_extract(k.value, '$[0]') AND r.run_number = json_extract(k.value, '$[1]')`,
          ).all(JSON.stringify(keys.map((k) => [k.workflow_id, k.run_number]))) as Row[]
        ).map(toRun);
      },

      insertJobs: async (jobs: NewJob[]) => {
        const insert = q(
          `INSERT INTO jobs (workflow_id, run_number, job_id, name, command, env, labels, label_key, needs, dependents,
             max_retries, backoff, timeout_secs, status, attempt, enqueued_at_ms, delayed_until_ms, ready_at_ms,
             started_at_ms, finished_at_ms, deadline_ms, error, outputs, upstream_outputs, worker_id, lease_id)
           VALUES (@workflow_id, @run_number, @job_id, @name, @command, @env, @labels, @label_key, @needs, @dependents,
             @max_retries, @backoff, @timeout_secs, @status, @attempt, @enqueued_at_ms, @delayed_until_ms, @ready_at_ms,
             @started_at_ms, @finished_at_ms, @deadline_ms, @error, @outputs, @upstream_outputs, @worker_id, @lease_id)`,
        );
        for (const j of jobs) {
          insert.run(jobRow(j));
        }
      },
      getRunJobs: async (workflowId, runNumber) =>
        (q('SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? ORDER BY row_id').all(workflowId, runNumber) as Row[]).map(
          toJob,
        ),
      getJobsOfRuns: async (keys) => {
        if (keys.length === 0) return [];
        return (
          q(
            `SELECT j.* FROM json_each(?) k
             JOIN jobs j ON j.workflow_id = json_extract(k.value, '$[0]') AND j.run_number = json_extract(k.value, '$[1]')
             ORDER BY j.row_id`,
          ).all(JSON.stringify(keys.map((k) => [k.workflow_id, k.run_number]))) as Row[]
        ).map(toJob);
      },
      getJob: async (workflowId, runNumber, jobId) => {
        const row = q('SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND job_id = ?').get(
          workflowId,
          runNumber,
          jobId,
        ) as Row | undefined;
        return row ? toJob(row) : null;
      },
      getJobs: async (workflowId, runNumber, jobIds) => {
        if (jobIds.length === 0) return [];
        return (
          q(
            `SELECT * FROM jobs WHERE workflow_id = ? AND run_number = ? AND job_id IN (SELECT value FROM json_each(?))
             ORDER BY row_id`,
          ).all(workflowId, runNumber, JSON.stringify(jobIds)) as Row[]
        ).map(toJob);
      },
      presentStates: async (workflowId, runNumber) => {
        const row = q(
          `SELECT ${JOB_STATES.map(
            (s) => `EXISTS (SELECT 1 FROM jobs WHERE workflow_id = @wf AND run_number = @run AND status = '${s}') AS "${s}"`,
          ).join(', ')}`,
        ).get({ wf: workflowId, run: runNumber }) as Record<JobState, number>;
        return new Set(JOB_STATES.filter((s) => row[s] === 1));
      },
      getJobByRowId: async (rowId) => {
        const row = q('SELECT * FROM jobs WHERE row_id = ?').get(rowId) as Row | undefined;
        return row ? toJob(row) : null;
      },
      updateJob: async (rowId, patch: JobPatch) => {
        const keys = patchKeys(patch, JOB_PATCH_COLUMNS, 'jobs');
        if (keys.length === 0) return;
        const sql = `UPDATE jobs SET ${keys.map((k) => `${k} = @${k}`).join(', ')} WHERE row_id = @row_id`;
        q(sql).run({ ...jobPatchValues(patch, keys), row_id: rowId });
      },
      nextClaimable: async (labelKeys, nowMs) => {
        // One index seek per label set; the transaction holds SQLite's write lock, so the row cannot
        // be claimed by anyone else before this transaction commits.
        const pick = q(
          `SELECT * FROM jobs WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ?
           ORDER BY ready_at_ms, row_id LIMIT 1`,
        );
        let best: Row | undefined;
        for (const key of labelKeys) {
          const row = pick.get(key, nowMs) as Row | undefined;
          if (!row) continue;
          if (
            !best ||
            (row.ready_at_ms as number) < (best.ready_at_ms as number) ||
            (row.ready_at_ms === best.ready_at_ms && (row.row_id as number) < (best.row_id as number))
          ) {
            best = row;
          }
        }
        return best ? toJob(best) : null;
      },
      timedOutJobs: async (nowMs, limit) =>
        (
          q(
            `SELECT * FROM jobs WHERE status = 'running' AND deadline_ms IS NOT NULL AND deadline_ms < ?
             ORDER BY deadline_ms LIMIT ?`,
          ).all(nowMs, limit) as Row[]
        ).map(toJob),

      ensureLabelSet: async (set: LabelSet) => {
        q('INSERT OR IGNORE INTO label_sets (key, labels) VALUES (?, ?)').run(set.key, JSON.stringify(set.labels));
      },
      listLabelSets: async () =>
        (q('SELECT key, labels FROM label_sets').all() as Row[]).map((r) => ({
          key: r.key as string,
          labels: JSON.parse(r.labels as string) as string[],
        })),

      insertLease: async (lease: LeaseRecord) => {
        q(
          `INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs,
             granted_at_ms, renewed_at_ms, expires_at_ms, state)
           VALUES (@lease_id, @job_row_id, @workflow_id, @run_number, @job_id, @attempt, @worker_id, @ttl_secs,
             @granted_at_ms, @renewed_at_ms, @expires_at_ms, @state)`,
        ).run(lease);
      },
      getLease: async (leaseId) => {
        const row = q('SELECT * FROM leases WHERE lease_id = ?').get(leaseId) as Row | undefined;
        return row ? toLease(row) : null;
      },
      updateLease: async (leaseId, patch: LeasePatch) => {
        const keys = patchKeys(patch, LEASE_PATCH_COLUMNS, 'leases');
        if (keys.length === 0) return;
        q(`UPDATE leases SET ${keys.map((k) => `${k} = @${k}`).join(', ')} WHERE lease_id = @lease_id`).run({
          ...patch,
          lease_id: leaseId,
        });
      },
      expiredLeases: async (nowMs, limit) =>
        (q(
          `SELECT * FROM leases WHERE state = 'active' AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`,
        ).all(nowMs, limit) as Row[]).map(toLease),
      activeLeases: async () => (q(`SELECT * FROM leases WHERE state = 'active'`).all() as Row[]).map(toLease),

      insertLogChunks: async (chunks) => {
        const insert = q(
          `INSERT OR IGNORE INTO log_chunks (workflow_id, run_number, job_id, attempt, sequence, stream, data, timestamp_ms)
           VALUES (@workflow_id, @run_number, @job_id, @attempt, @sequence, @stream, @data, @timestamp_ms)`,
        );
        for (const c of chunks) insert.run(c);
      },
      getLogChunks: async ({ workflow_id, run_number, job_id, attempt, afterSequence, limit }: LogQuery) =>
        (q(
          `SELECT * FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ? AND attempt = ? AND sequence > ?
           ORDER BY sequence LIMIT ?`,
        ).all(workflow_id, run_number, job_id, attempt, afterSequence ?? -1, limit ?? -1) as Row[]).map(toLogChunk),
      latestLogAttempt: async (workflowId, runNumber, jobId) => {
        const row = q(
          'SELECT max(attempt) AS a FROM log_chunks WHERE workflow_id = ? AND run_number = ? AND job_id = ?',
        ).get(workflowId, runNumber, jobId) as { a: number | null };
        return row.a;
      },

      upsertWorker: async (rec: WorkerRecord) => {
        q(
          `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
           ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`,
        ).run(rec.worker_id, JSON.stringify(rec.labels), rec.registered_at_ms, rec.last_seen_ms);
      },
      touchWorker: async (workerId, nowMs, labels) => {
        if (labels) {
          q(
            `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)
             ON CONFLICT (worker_id) DO UPDATE SET labels = excluded.labels, last_seen_ms = excluded.last_seen_ms`,
          ).run(workerId, JSON.stringify(labels), nowMs, nowMs);
        } else {
          q(
            `INSERT INTO workers (worker_id, labels, registered_at_ms, last_seen_ms) VALUES (?, '[]', ?, ?)
             ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`,
          ).run(workerId, nowMs, nowMs);
        }
      },
      listWorkers: async () =>
        (q('SELECT * FROM workers ORDER BY worker_id').all() as Row[]).map(toWorker),
    };
  }
}

function migrate(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)`);
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
  );
  for (const m of SQLITE_MIGRATIONS) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE so two processes starting on a fresh file do not both apply the same migration.
    db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
    }).immediate();
  }
}
