import { createHash } from 'node:crypto';
import { formatTraceparent, type SpanAttribute, type SpanRecord } from '../domain/trace-context.js';
import type { JobRecord, RunRecord } from '../store/store.js';

/**
 * The spans of runs and job attempts (README "Traces (OpenTelemetry)"), built from the store's records
 * alone. Several servers share one database: a run may start on one, a job be claimed on another and
 * end on a third. So no id comes from a process's memory: each is derived from what every server reads
 * the same way. The trace id and the run span id hash the workflow id, the run number and the run's
 * created_at_ms (a workflow deleted and created again numbers its runs from 1 again; the creation time
 * tells those runs apart), and an attempt's span id hashes the same plus the job id and the attempt.
 * The server that claims a job names the attempt's span in the job's TRACEPARENT; whichever server
 * sees the attempt end exports that span, with the same ids, and with the times the store recorded.
 */

/** What names a run's trace. */
export interface RunIdentity {
  workflow_id: string;
  run_number: number;
  created_at_ms: number;
}

/** How an attempt ended, as its span's `weft.job.result` says. */
export type AttemptResult = 'success' | 'failure' | 'expired' | 'timed_out' | 'cancelled';

/** An attempt that ended, as its span shows it. */
export interface EndedAttempt {
  /** The job as the attempt ran, just before its end: its ready time, claim, worker, labels. */
  ran: JobRecord;
  endedAtMs: number;
  result: AttemptResult;
  /** Another attempt follows (the failure was retried). */
  retried: boolean;
  error: string | null;
}

function digest(parts: readonly (string | number)[], bytes: number): string {
  // JSON keeps the parts apart whatever characters an id holds.
  const hex = createHash('sha256').update(JSON.stringify(parts)).digest().subarray(0, bytes).toString('hex');
  // An all-zero id is invalid (W3C Trace Context); a hash that gives one is as good as never seen.
  return /^0+$/.test(hex) ? hex.slice(0, -1) + '1' : hex;
}

function runParts(run: RunIdentity): Array<string | number> {
  return [run.workflow_id, run.run_number, run.created_at_ms];
}

export function runTraceId(run: RunIdentity): string {
  return digest(['weft.trace', ...runParts(run)], 16);
}

export function runSpanId(run: RunIdentity): string {
  return digest(['weft.run', ...runParts(run)], 8);
}

export function attemptSpanId(run: RunIdentity, jobId: string, attempt: number): string {
  return digest(['weft.attempt', ...runParts(run), jobId, attempt], 8);
}

function partSpanId(run: RunIdentity, jobId: string, attempt: number, part: 'queue' | 'execute'): string {
  return digest(['weft.attempt.' + part, ...runParts(run), jobId, attempt], 8);
}

/** The TRACEPARENT a claimed job gets: its attempt's span, in its run's trace (sampled). */
export function attemptTraceparent(run: RunIdentity, jobId: string, attempt: number): string {
  return formatTraceparent(runTraceId(run), attemptSpanId(run, jobId, attempt));
}

/** A run's span: from its creation (queued runs included) to its end. Null while it has not ended. */
export function runSpan(run: RunRecord): SpanRecord | null {
  if (run.finished_at_ms === null) return null;
  const attributes: Record<string, SpanAttribute> = {
    'weft.workflow.id': run.workflow_id,
    'weft.run.number': run.run_number,
    'weft.run.status': run.status,
  };
  if (run.trigger !== null) attributes['weft.run.trigger'] = run.trigger;
  if (run.rerun_of !== null) attributes['weft.run.rerun_of'] = run.rerun_of;
  if (run.concurrency_group !== null) attributes['weft.run.concurrency_group'] = run.concurrency_group;
  return {
    traceId: runTraceId(run),
    spanId: runSpanId(run),
    name: `run ${run.workflow_id}`,
    kind: 'internal',
    startMs: run.created_at_ms,
    endMs: Math.max(run.created_at_ms, run.finished_at_ms),
    attributes,
    ...(run.status === 'failed' ? { error: `run ${run.run_number} of ${run.workflow_id} failed` } : {}),
  };
}

/**
 * An attempt's span, a child of its run's, from the moment the attempt became claimable to its end,
 * with two children: `queue` (claimable until claimed) and `execute` (claimed until the end). The
 * worker's own span of the command is a child of the attempt's too (its TRACEPARENT names it). Empty
 * for an attempt that was never claimed.
 */
export function attemptSpans(run: RunIdentity, a: EndedAttempt): SpanRecord[] {
  const job = a.ran;
  if (job.started_at_ms === null) return [];
  const claimed = job.started_at_ms;
  const ready = Math.min(job.ready_at_ms > 0 ? job.ready_at_ms : claimed, claimed);
  const end = Math.max(a.endedAtMs, claimed);
  const traceId = runTraceId(run);
  const spanId = attemptSpanId(run, job.job_id, job.attempt);
  const attributes: Record<string, SpanAttribute> = {
    'weft.workflow.id': job.workflow_id,
    'weft.run.number': job.run_number,
    'weft.job.id': job.job_id,
    'weft.job.name': job.name,
    'weft.job.attempt': job.attempt,
    'weft.job.labels': job.labels,
    'weft.job.result': a.result,
    'weft.job.retried': a.retried,
    'weft.job.queue_wait_ms': claimed - ready,
  };
  if (job.worker_id !== null) attributes['weft.worker.id'] = job.worker_id;
  if (job.group_id !== null) attributes['weft.job.group'] = job.group_id;
  const failed = a.result === 'failure' || a.result === 'expired' || a.result === 'timed_out';
  const error = failed ? (a.error ?? a.result) : undefined;
  const part = (name: 'queue' | 'execute', startMs: number, endMs: number): SpanRecord => ({
    traceId,
    spanId: partSpanId(run, job.job_id, job.attempt, name),
    parentSpanId: spanId,
    name,
    kind: 'internal',
    startMs,
    endMs,
    attributes: { 'weft.job.id': job.job_id, 'weft.job.attempt': job.attempt },
  });
  return [
    {
      traceId,
      spanId,
      parentSpanId: runSpanId(run),
      name: `job ${job.job_id}`,
      kind: 'internal',
      startMs: ready,
      endMs: end,
      attributes,
      ...(error !== undefined ? { error } : {}),
    },
    part('queue', ready, claimed),
    { ...part('execute', claimed, end), ...(error !== undefined ? { error } : {}) },
  ];
}
