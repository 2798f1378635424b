import { storableText } from '../../domain/text.js';
import { DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT, logTruncationMarker } from '../../domain/log-budget.js';
import type { Outputs } from '../../domain/model.js';
import type {
  Claimed,
  CompleteOutcome,
  FailOutcome,
  HeartbeatOutcome,
  IncomingChunk,
  JobChange,
  LeaseRecord,
  PushLogsOutcome,
  StoreClaim,
} from '../store.js';
import { toJob, toLease, type Row } from '../rows.js';
import { endedJob } from '../../domain/conditions.js';
import { change } from '../changes.js';
import { applyFailure, checkLease, currentJob, propagateEnd, settleRunIfOver, settleRunsOf, type LockedLease } from './settle.js';
import { QUERIES } from './queries.js';
import { pipeline, transaction, writeStatement, type Exec, type Sql, type Trailing } from './tx.js';
import { Coalescer } from './coalesce.js';
import { claim, claimStatement, takeTogether, type ClaimCall } from './claim.js';

/**
 * The worker protocol's lease calls. Each first tries the guarded statement that does
 * the common case in one go; only when its guard fails does it lock the lease and look closer
 * (checkLease), so a live lease costs no extra round trip.
 */

/** The worker is recorded as seen by a statement sent with COMMIT (see TxOptions.after). */
const touch = (leaseId: string, nowMs: number, holder: string | null) => ({ text: QUERIES.touchLeaseWorker, params: [leaseId, nowMs, holder] });

/*
 * `holder`: the name of the token the call came with (null: none); a lease claimed with another
 * token is refused `not_yours` by the guards and by checkLease, and nothing changes.
 */

export async function heartbeat(sql: Sql, leaseId: string, nowMs: number, holder: string | null): Promise<HeartbeatOutcome> {
  const [row] = await writeStatement(sql, QUERIES.renewLease, [leaseId, nowMs, holder]);
  if (row) return { kind: 'renewed', lease: toLease(row) };
  const outcome = await transaction(sql, async (q): Promise<HeartbeatOutcome> => {
    const v = await checkLease(q, leaseId, nowMs, holder);
    if (v.kind === 'refused') return v.outcome;
    if (v.kind === 'cancelled') return { kind: 'cancelled', lease: v.lease };
    // Live after all (the guard and the lock disagree only under racing calls): renew under the lock.
    const [again] = await q(QUERIES.renewLease, [leaseId, nowMs, holder]);
    return { kind: 'renewed', lease: toLease(required(again, 'renewLease', leaseId)) };
  });
  return settleRunsOf(sql, nowMs, outcome);
}

interface CompleteCall {
  leaseId: string;
  encoded: string;
  nowMs: number;
  holder: string | null;
}

/** What the one statement decided for a call: its row, or null when the guard failed. */
type Guarded = Row | null;

/**
 * Completes that arrive together share one completeJob statement (coalesce.ts): those of a
 * report-batch, and single completes from many workers at once.
 */
const completers = new WeakMap<Sql, Coalescer<CompleteCall, Guarded>>();

/** How many completes one statement carries at most. */
const COMPLETES_PER_STATEMENT = 256;

/** The completer's one lane. */
const COMPLETES = 'complete';

function completer(sql: Sql): Coalescer<CompleteCall, Guarded> {
  let c = completers.get(sql);
  if (!c) {
    c = new Coalescer((batch) => completeTogether(sql, batch, takeRiders(sql)), {
      maxInFlight: COMPLETES_IN_FLIGHT,
      maxWeight: COMPLETES_PER_STATEMENT,
      weight: () => 1,
    });
    completers.set(sql, c);
  }
  return c;
}

/**
 * completeJob statements out at once per store: one, so that every complete arriving while it is out
 * goes in the next (docs/performance.md "PostgreSQL"). Its locks are those of one complete times the
 * batch, held for one statement: a lease or a join row another server holds is released at that
 * server's next commit.
 */
const COMPLETES_IN_FLIGHT = 1;

/**
 * The common case, live leases, is one statement in a transaction of its own (QUERIES.completeJob),
 * with the check whether their runs are over right behind it in the same round trip; no lock is held
 * across a round trip. A run found over is settled once for all its completes here. A lease given
 * twice in one batch goes once; its repeats go after, alone, and so find it settled.
 */
async function completeTogether(sql: Sql, batch: readonly CompleteCall[], riders: readonly Rider[] = []): Promise<Guarded[]> {
  const first = new Map<string, number>();
  batch.forEach((c, i) => {
    if (!first.has(c.leaseId)) first.set(c.leaseId, i);
  });
  const unique = [...first.values()].map((i) => batch[i]!);
  const ids = unique.map((c) => c.leaseId);
  const [done, runs] = await pipeline(
    sql,
    [
      [QUERIES.completeJob, [ids, unique.map((c) => c.encoded), unique.map((c) => c.nowMs), unique.map((c) => c.holder)]],
      [QUERIES.runsOpenOfLeases, [JSON.stringify(ids)]],
    ],
    ridersBehind(sql, riders),
  );
  const rows = new Map<string, Row>();
  for (const r of done!) rows.set(unique[(r.call_n as number) - 1]!.leaseId, r);
  const open = new Map(runs!.map((r) => [`${r.run_number as number}/${r.workflow_id as string}`, r.open as boolean]));
  const over = new Map<string, Row>();
  for (const r of rows.values()) {
    const key = `${r.run_number as number}/${r.workflow_id as string}`;
    if (open.get(key) === false && !over.has(key)) over.set(key, r);
  }
  for (const r of over.values()) await settleRunIfOver(sql, r.workflow_id as string, r.run_number as number, r.finished_at_ms as number, false);
  const answers: Guarded[] = [];
  for (const [i, c] of batch.entries()) {
    if (first.get(c.leaseId) === i) answers.push(rows.get(c.leaseId) ?? null);
    else answers.push((await completeTogether(sql, [c]))[0]!);
  }
  return answers;
}

/** A claim going out right behind the next completeJob statement (claimAfterCompletes). */
interface Rider {
  call: ClaimCall;
  resolve: (rows: Row[]) => void;
  reject: (err: unknown) => void;
}

/** Claims waiting for the completes queued now to go out, by store handle. */
const riders = new WeakMap<Sql, Rider[]>();

function takeRiders(sql: Sql): Rider[] {
  const waiting = riders.get(sql);
  if (!waiting) return [];
  riders.delete(sql);
  return waiting;
}

/**
 * A claim that must see what the completes handed over before it enqueue: a report-batch's claim
 * (StoreClaim.after_completes, docs/api.md "Batches"). While those completes wait for their statement,
 * the claim goes in the same round trip, right behind them (a statement of its own, which sees their
 * commit); while their statement is out, it goes once that has answered; otherwise at once. Riders of
 * the same label keys share a statement, as claims arriving together do (claim.ts). Should more
 * completes be queued than one statement carries, a rider goes behind the first of them.
 */
export function claimAfterCompletes(sql: Sql, req: StoreClaim): Promise<Claimed[]> {
  return claim(sql, req, (call) => {
    const completes = completer(sql);
    if (!completes.queued(COMPLETES)) return completes.drained(COMPLETES).then(() => takeTogether(sql, call));
    return new Promise<Row[]>((resolve, reject) => {
      const waiting = riders.get(sql);
      const rider = { call, resolve, reject };
      if (waiting) waiting.push(rider);
      else riders.set(sql, [rider]);
    });
  });
}

/**
 * The riders' claim statements, one per set of label keys, as statements trailing a complete's
 * pipeline. A rider whose statement failed or was never sent claims on its own, after the completes.
 */
function ridersBehind(sql: Sql, waiting: readonly Rider[]): Trailing[] {
  const byKeys = new Map<string, Rider[]>();
  for (const r of waiting) {
    const key = JSON.stringify(r.call.keys);
    const group = byKeys.get(key);
    if (group) group.push(r);
    else byKeys.set(key, [r]);
  }
  return [...byKeys.values()].map((group) => {
    const s = claimStatement(group.map((r) => r.call));
    return {
      text: s.text,
      params: s.params,
      settle(result) {
        if (!(result instanceof Error)) {
          const answers = s.answers(result);
          return group.forEach((r, i) => r.resolve(answers[i]!));
        }
        for (const r of group) takeTogether(sql, r.call).then(r.resolve, r.reject);
      },
    };
  });
}

export async function complete(sql: Sql, leaseId: string, outputs: Outputs, nowMs: number, holder: string | null): Promise<CompleteOutcome> {
  const encoded = JSON.stringify(outputs);
  const row = await completer(sql).submit(COMPLETES, { leaseId, encoded, nowMs, holder });
  if (row) return completed(row);
  // The guard failed: a transaction locks the lease and looks closer.
  const outcome = await transaction(sql, async (q): Promise<CompleteOutcome> => {
    const v = await checkLease(q, leaseId, nowMs, holder);
    if (v.kind === 'refused') return v.outcome;
    if (v.kind === 'cancelled') return { kind: 'cancelled', job: await currentJob(q, v.lease.job_row_id) };
    return completeLocked(q, v.locked, encoded, nowMs);
  });
  return settleRunsOf(sql, nowMs, outcome);
}

/**
 * A completion whose end may skip jobs below it, or one whose guard failed under racing calls: under
 * the lease lock, the job's row, then the pending jobs below it in row order, each decided by
 * conditions.ts propagate (docs/architecture.md "Conditions").
 */
async function completeLocked(q: Exec, { lease, job }: LockedLease, encoded: string, nowMs: number): Promise<CompleteOutcome> {
  const [[row], below] = await Promise.all([
    q(QUERIES.succeedJob, [lease.lease_id, encoded, nowMs, job.row_id]),
    job.dependents.length === 0 ? Promise.resolve([]) : q(QUERIES.lockBelow, [job.workflow_id, job.run_number, job.dependents]),
  ]);
  const done = toJob(required(row, 'succeedJob', lease.lease_id));
  const changed = await propagateEnd(q, [endedJob(done)], below, nowMs);
  return {
    kind: 'completed',
    job: done,
    enqueued: changed.filter((j) => j.status === 'queued').map((j) => j.job_id),
    changes: [change(done), ...changed.map(change)],
  };
}

function completed(row: Row): CompleteOutcome {
  const job = toJob(row);
  const queuedIds = new Set((row.enqueued as Array<{ job_id: string }>).map((d) => d.job_id));
  const enqueued = job.dependents.filter((id) => queuedIds.has(id));
  const changes: JobChange[] = [
    change(job),
    ...enqueued.map((job_id) => ({ workflow_id: job.workflow_id, run_number: job.run_number, job_id })),
  ];
  return { kind: 'completed', job, enqueued, changes };
}

export async function fail(sql: Sql, leaseId: string, error: string, retryable: boolean, nowMs: number, holder: string | null): Promise<FailOutcome> {
  const outcome = await transaction(
    sql,
    async (q): Promise<FailOutcome> => {
      const v = await checkLease(q, leaseId, nowMs, holder);
      if (v.kind === 'refused') return v.outcome;
      if (v.kind === 'cancelled') return { kind: 'cancelled', job: await currentJob(q, v.lease.job_row_id) };
      const r = await applyFailure(q, v.locked, 'failed', storableText(error), retryable, nowMs);
      return { kind: 'failed', job: r.job, started_at_ms: v.locked.job.started_at_ms ?? nowMs, ran: v.locked.job, changes: r.changes };
    },
    { after: touch(leaseId, nowMs, holder) },
  );
  return settleRunsOf(sql, nowMs, outcome);
}

export async function pushLogs(
  sql: Sql,
  leaseId: string,
  chunks: readonly IncomingChunk[],
  nowMs: number,
  holder: string | null,
  maxBytes = DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT,
): Promise<PushLogsOutcome> {
  const encoded = chunks.map((c) => ({
    workflow_id: c.workflow_id ?? null,
    job_id: c.job_id ?? null,
    sequence: c.sequence,
    stream: c.stream ?? 'stdout',
    data: storableText(c.data),
    timestamp_ms: c.timestamp_ms ?? nowMs,
  }));
  const params = [leaseId, nowMs, encoded, maxBytes, logTruncationMarker(maxBytes), holder];
  const stored = (r: Row): PushLogsOutcome => ({ kind: 'stored', lease: toLease(r), accepted: r.kept as number, truncated: r.truncated as boolean });
  const [row] = await writeStatement(sql, QUERIES.pushLogs, params);
  if (row) return stored(row);
  const outcome = await transaction(sql, async (q): Promise<PushLogsOutcome> => {
    const v = await checkLease(q, leaseId, nowMs, holder);
    if (v.kind === 'refused') return v.outcome;
    const lease = v.kind === 'cancelled' ? v.lease : v.locked.lease;
    const mismatch = findMismatch(chunks, lease);
    if (mismatch) return { kind: 'mismatch', lease, ...mismatch };
    const [again] = await q(QUERIES.pushLogs, params);
    return stored(required(again, 'pushLogs', leaseId));
  });
  return settleRunsOf(sql, nowMs, outcome);
}

function findMismatch(chunks: readonly IncomingChunk[], lease: LeaseRecord) {
  for (const [index, c] of chunks.entries()) {
    if (c.workflow_id !== undefined && c.workflow_id !== lease.workflow_id) {
      return { index, field: 'workflow_id' as const, value: c.workflow_id };
    }
    if (c.job_id !== undefined && c.job_id !== lease.job_id) return { index, field: 'job_id' as const, value: c.job_id };
  }
  return null;
}

/** A guarded statement that must pass because we hold the lease and found it live. */
function required(row: Row | undefined, what: string, leaseId: string): Row {
  if (!row) throw new Error(`${what} found lease ${leaseId} live under its lock, yet its guard did not pass`);
  return row;
}
