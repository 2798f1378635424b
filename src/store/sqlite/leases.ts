import { endedJob } from '../../domain/conditions.js';
import { leaseExpiresAt } from '../../domain/lease.js';
import { storableText } from '../../domain/text.js';
import { DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT, fitLogPush, logTruncationMarker } from '../../domain/log-budget.js';
import type { Outputs } from '../../domain/model.js';
import type {
  CompleteOutcome,
  FailOutcome,
  HeartbeatOutcome,
  IncomingChunk,
  JobChange,
  LogChunkRecord,
  PushLogsOutcome,
} from '../store.js';
import { toJob, toLease, type Row } from '../rows.js';
import { change } from '../changes.js';
import type { Conn } from './connection.js';
import { applyFailure, checkLease, finishJobs, propagateEnd, settleLease } from './settle.js';

/**
 * The worker protocol's lease calls as synchronous writes: each runs its statements with no await
 * between them, inside whatever transaction the caller opened (see writes.ts). Each goes through
 * checkLease (settle.ts) unless its common case passes a guarded statement first.
 */

export function heartbeat(c: Conn, leaseId: string, nowMs: number, holder: string | null = null): HeartbeatOutcome {
  const check = checkLease(c, leaseId, nowMs, holder);
  if (check.kind === 'cancelled') return { kind: 'cancelled', lease: check.lease };
  if (check.kind !== 'live') return check;
  const row = c.q('renewLease').get(nowMs, leaseExpiresAt(nowMs, check.lease.ttl_secs), leaseId) as Row;
  return { kind: 'renewed', lease: toLease(row) };
}

/**
 * The job succeeds; each direct dependent counts one need fewer, and those reaching zero are queued
 * with the outputs of their needs (README "How a run works": one transaction).
 */
export function complete(c: Conn, leaseId: string, outputs: Outputs, nowMs: number, holder: string | null = null): CompleteOutcome {
  const encoded = JSON.stringify(outputs);
  // The common case, a live lease, takes one guarded update of the job, whose row holds the lease and
  // settles it too (migrations.ts version 24); anything else (unknown, settled, cancelled, expired,
  // past its deadline, another token's) goes through the full check.
  let row = c.row('succeedLiveJob', { lease_id: leaseId, holder, now_ms: nowMs, outputs: encoded });
  if (row) {
    c.q('touchWorker').run(row.worker_id, nowMs, nowMs);
  } else {
    const check = checkLease(c, leaseId, nowMs, holder);
    if (check.kind === 'cancelled') return { kind: 'cancelled', job: check.job };
    if (check.kind !== 'live') return check;
    settleLease(c, leaseId, 'completed');
    row = c.q('succeedJob').get({ row_id: check.job.row_id, lease_id: leaseId, now_ms: nowMs, outputs: encoded }) as Row;
  }
  const job = toJob(row);
  const changes: JobChange[] = [change(job)];
  if (job.conditional_dependents || job.failed_upstream) {
    // Something below may be skipped instead of queued (docs/architecture.md "Conditions").
    const { enqueued, skipped } = propagateEnd(c, job, [endedJob(job)], nowMs, changes);
    finishJobs(c, job, { finished: 1 + skipped, failed: 0, cancelled: 0 }, nowMs);
    return { kind: 'completed', job, enqueued, changes };
  }
  const enqueued: string[] = [];
  for (const dependent of job.dependents) {
    const r = c.q('decrementPendingNeeds').get(job.workflow_id, job.run_number, dependent) as
      | { row_id: number; pending_needs: number }
      | undefined;
    if (!r || r.pending_needs > 0) continue;
    c.q('enqueueReady').run({ row_id: r.row_id, now_ms: nowMs });
    enqueued.push(dependent);
    changes.push({ workflow_id: job.workflow_id, run_number: job.run_number, job_id: dependent });
  }
  finishJobs(c, job, { finished: 1, failed: 0, cancelled: 0 }, nowMs);
  return { kind: 'completed', job, enqueued, changes };
}

export function fail(c: Conn, leaseId: string, error: string, retryable: boolean, nowMs: number, holder: string | null = null): FailOutcome {
  const check = checkLease(c, leaseId, nowMs, holder);
  if (check.kind === 'cancelled') return { kind: 'cancelled', job: check.job };
  if (check.kind !== 'live') return check;
  settleLease(c, leaseId, 'failed');
  const changes: JobChange[] = [];
  const job = applyFailure(c, check.job, storableText(error), retryable, nowMs, changes);
  return { kind: 'failed', job, started_at_ms: check.job.started_at_ms ?? nowMs, ran: check.job, changes };
}

/**
 * Chunks of the lease's attempt; also on a cancelled lease, so a cancelled job's last words are kept.
 * Within the attempt's budget of `maxBytes` (src/domain/log-budget.ts), counted on the job's row.
 */
export function pushLogs(c: Conn, leaseId: string, chunks: readonly IncomingChunk[], nowMs: number, holder: string | null = null, maxBytes = DEFAULT_MAX_LOG_BYTES_PER_ATTEMPT): PushLogsOutcome {
  const check = checkLease(c, leaseId, nowMs, holder);
  if (check.kind !== 'live' && check.kind !== 'cancelled') return check;
  const { lease } = check;
  for (const [index, chunk] of chunks.entries()) {
    if (chunk.workflow_id !== undefined && chunk.workflow_id !== lease.workflow_id) {
      return { kind: 'mismatch', lease, index, field: 'workflow_id', value: chunk.workflow_id };
    }
    if (chunk.job_id !== undefined && chunk.job_id !== lease.job_id) {
      return { kind: 'mismatch', lease, index, field: 'job_id', value: chunk.job_id };
    }
  }
  const insert = c.q('insertLogChunk');
  const record = (chunk: IncomingChunk, data: string, stream = chunk.stream ?? 'stdout'): LogChunkRecord => ({
    workflow_id: lease.workflow_id,
    run_number: lease.run_number,
    job_id: lease.job_id,
    attempt: lease.attempt,
    sequence: chunk.sequence,
    stream,
    data,
    timestamp_ms: chunk.timestamp_ms ?? nowMs,
  });
  const row = c.q('getLogBudget').get(lease.job_row_id) as { log_attempt: number | null; log_bytes: number; log_truncated: number };
  const data = chunks.map((chunk) => storableText(chunk.data));
  const stored = c.q('logChunkStored');
  const fit = fitLogPush(
    { attempt: row.log_attempt, bytes: row.log_bytes, truncated: row.log_truncated === 1 },
    lease.attempt,
    // A chunk already stored (a re-send after a lost answer) costs nothing and is never the one cut.
    chunks.map((chunk, i) => (stored.get(lease.workflow_id, lease.run_number, lease.job_id, lease.attempt, chunk.sequence) ? 0 : Buffer.byteLength(data[i]!))),
    maxBytes,
  );
  if (fit.closed) return { kind: 'stored', lease, accepted: 0, truncated: true };
  let used = fit.used;
  for (let i = 0; i < fit.kept; i++) {
    // A chunk already stored (a re-send) is not counted twice.
    if (insert.run(record(chunks[i]!, data[i]!)).changes > 0) used += Buffer.byteLength(data[i]!);
  }
  if (fit.cut) {
    const marker = logTruncationMarker(maxBytes);
    if (insert.run(record(chunks[fit.kept]!, marker, 'stderr')).changes > 0) used += Buffer.byteLength(marker);
  }
  c.q('setLogBudget').run(lease.attempt, used, fit.cut ? 1 : 0, lease.job_row_id);
  return { kind: 'stored', lease, accepted: fit.kept, truncated: fit.cut };
}

