import { beginWait, type ApprovalDecision, type JobApproval } from '../domain/approval.js';
import type { JobCondition } from '../domain/conditions.js';
import { DEFAULT_PRIORITY } from '../domain/priority.js';
import type { JobCall } from '../domain/calls.js';
import type { JobState, RunState, RunTrigger, WorkflowDefinition } from '../domain/model.js';
import type { JobRecord, JobViewRecord, LeaseRecord, LeaseState, LogChunkRecord, NewJob, RunRecord, SecretInfo, SecretRecord, WorkerRecord, WorkflowRecord } from './store.js';

/**
 * Row encoding shared by the SQL stores: both keep JSON in text columns and the same column names,
 * so records map to and from rows the same way on SQLite and PostgreSQL.
 */
export type Row = Record<string, unknown>;

/** Column values of a new job of run `runNumber`, JSON columns encoded. */
export function jobRow(j: NewJob, runNumber: number): Row {
  const { call, child_run: childRun, ...rest } = j;
  return {
    ...rest,
    run_number: runNumber,
    env: JSON.stringify(j.env),
    labels: JSON.stringify(j.labels),
    needs: JSON.stringify(j.needs),
    dependents: JSON.stringify(j.dependents),
    backoff: JSON.stringify(j.backoff),
    outputs: j.outputs === null ? null : JSON.stringify(j.outputs),
    upstream_outputs: JSON.stringify(j.upstream_outputs),
    needs_results: JSON.stringify(j.needs_results),
    failed_upstream: j.failed_upstream ? 1 : 0,
    run_cancelled: j.run_cancelled ? 1 : 0,
    conditional_dependents: j.conditional_dependents ? 1 : 0,
    group_id: j.group_id ?? null,
    matrix: j.matrix == null ? null : JSON.stringify(j.matrix),
    max_parallel: j.max_parallel ?? null,
    fail_fast: j.fail_fast ? 1 : 0,
    for_each: j.for_each == null ? null : JSON.stringify(j.for_each),
    item: j.item === null || j.item === undefined ? null : JSON.stringify(j.item),
    item_index: j.item_index ?? null,
    artifact_spec: j.artifact_spec ? JSON.stringify(j.artifact_spec) : null,
    // A queued run's plan stored before priorities has none.
    priority: j.priority ?? DEFAULT_PRIORITY,
    // A queued run's plan stored before job concurrency groups has none.
    concurrency_group: j.concurrency_group ?? null,
    cancel_in_progress: j.cancel_in_progress ? 1 : 0,
    ...approvalColumns(j.approval ?? null),
    // README "Workflows calling workflows" (schema version 23).
    call_spec: call ? JSON.stringify(call) : null,
    child_run: childRun ?? null,
  };
}

/** The approval columns of a job (schema version 16): the gate as JSON, the wait and decision apart. */
export function approvalColumns(a: JobApproval | null): Row {
  return {
    approval: a === null ? null : JSON.stringify({ message: a.message, timeout_secs: a.timeout_secs }),
    approval_requested_at_ms: a?.requested_at_ms ?? null,
    approval_deadline_ms: a?.deadline_ms ?? null,
    approval_decision: a?.decision ?? null,
    approval_decided_by: a?.decided_by ?? null,
    approval_decided_at_ms: a?.decided_at_ms ?? null,
    approval_comment: a?.comment ?? null,
  };
}

function toApproval(r: Row): JobApproval | null {
  if (typeof r.approval !== 'string') return null;
  const spec = JSON.parse(r.approval) as { message: string | null; timeout_secs: number | null };
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    message: spec.message ?? null,
    timeout_secs: spec.timeout_secs ?? null,
    requested_at_ms: num(r.approval_requested_at_ms),
    deadline_ms: num(r.approval_deadline_ms),
    decision: (r.approval_decision as ApprovalDecision | null | undefined) ?? null,
    decided_by: (r.approval_decided_by as string | null | undefined) ?? null,
    decided_at_ms: num(r.approval_decided_at_ms),
    comment: (r.approval_comment as string | null | undefined) ?? null,
  };
}

export function toWorker(r: Row): WorkerRecord {
  return {
    worker_id: r.worker_id as string,
    labels: JSON.parse(r.labels as string) as string[],
    registered_at_ms: r.registered_at_ms as number,
    last_seen_ms: r.last_seen_ms as number,
  };
}

/**
 * Parsed definitions of the last few workflows read, by their text: a definition of thousands of jobs
 * is megabytes of JSON, and live events and lists read the same workflows again and again (each read
 * still fetches the text, which is compared whole). The records built from it share the object, which
 * nothing changes: WorkflowRecord is read-only to everything above the store.
 */
const parsedDefinitions = new Map<string, { text: string; definition: WorkflowDefinition }>();
const PARSED_DEFINITIONS = 16;
/** Definitions smaller than this are parsed again each time: cheaper than keeping them. */
const CACHE_FROM_CHARS = 64 * 1024;

function parseDefinition(id: string, text: string): WorkflowDefinition {
  if (text.length < CACHE_FROM_CHARS) return JSON.parse(text) as WorkflowDefinition;
  const hit = parsedDefinitions.get(id);
  if (hit && hit.text === text) {
    // Most recently used last, so the oldest is the first the map iterates.
    parsedDefinitions.delete(id);
    parsedDefinitions.set(id, hit);
    return hit.definition;
  }
  const definition = JSON.parse(text) as WorkflowDefinition;
  parsedDefinitions.delete(id);
  parsedDefinitions.set(id, { text, definition });
  if (parsedDefinitions.size > PARSED_DEFINITIONS) parsedDefinitions.delete(parsedDefinitions.keys().next().value!);
  return definition;
}

export function toWorkflow(r: Row): WorkflowRecord {
  return {
    id: r.id as string,
    name: r.name as string,
    trigger: (r.trigger as string | null) ?? null,
    definition: parseDefinition(r.id as string, r.definition as string),
    source: r.source as 'file' | 'api',
    hash: r.hash as string,
    created_at_ms: r.created_at_ms as number,
    updated_at_ms: r.updated_at_ms as number,
    latest_run: r.latest_run as number,
    next_fire_at_ms: (r.next_fire_at_ms as number | null | undefined) ?? null,
  };
}

/** The `schedules` column: the definition's schedules as JSON, NULL when it has none; a save compares it to tell a schedule change. */
export function schedulesColumn(def: WorkflowDefinition): string | null {
  return def.schedules && def.schedules.length > 0 ? JSON.stringify(def.schedules) : null;
}

export function toRun(r: Row): RunRecord {
  return {
    workflow_id: r.workflow_id as string,
    run_number: r.run_number as number,
    status: r.status as RunState,
    created_at_ms: r.created_at_ms as number,
    finished_at_ms: (r.finished_at_ms as number | null) ?? null,
    inputs: r.inputs === null || r.inputs === undefined ? {} : (JSON.parse(r.inputs as string) as Record<string, string>),
    rerun_of: (r.rerun_of as number | null | undefined) ?? null,
    concurrency_group: (r.concurrency_group as string | null | undefined) ?? null,
    trigger: (r.trigger as RunTrigger | null | undefined) ?? null,
    definition_hash: (r.definition_hash as string | null | undefined) ?? null,
    event_name: (r.event_name as string | null | undefined) ?? null,
    ...(r.status === 'queued' && typeof r.plan === 'string' ? { plan: JSON.parse(r.plan) as NewJob[] } : {}),
    // Only on a run a job's call started (README "Workflows calling workflows").
    ...(typeof r.parent_workflow_id === 'string'
      ? { parent: { workflow_id: r.parent_workflow_id, run_number: Number(r.parent_run_number), job_id: r.parent_job_id as string } }
      : {}),
  };
}

/** The runs.inputs column: NULL for a run without inputs, so runs that have none cost nothing. */
export function inputsColumn(inputs: Readonly<Record<string, string>>): string | null {
  return Object.keys(inputs).length === 0 ? null : JSON.stringify(inputs);
}

/**
 * The columns a condition decision writes back to a job (docs/architecture.md "Conditions"), encoded
 * as both stores keep them.
 */
export function decisionColumns(j: JobRecord): Row {
  return {
    row_id: j.row_id,
    status: j.status,
    pending_needs: j.pending_needs,
    needs_results: JSON.stringify(j.needs_results),
    failed_upstream: j.failed_upstream ? 1 : 0,
    run_cancelled: j.run_cancelled ? 1 : 0,
    error: j.error,
    // A job the decision makes wait for approval has its wait begun (approval.ts beginWaits).
    approval_requested_at_ms: j.approval?.requested_at_ms ?? null,
    approval_deadline_ms: j.approval?.deadline_ms ?? null,
  };
}

/** The job columns a JobViewRecord is read from (both stores name them alike). */
export const JOB_VIEW_COLUMNS = [
  'row_id', 'workflow_id', 'run_number', 'job_id', 'name', 'command', 'labels', 'needs', 'condition', 'needs_results',
  'max_retries', 'backoff', 'timeout_secs', 'status', 'attempt', 'enqueued_at_ms', 'delayed_until_ms', 'priority',
  'started_at_ms', 'finished_at_ms', 'error', 'outputs', 'worker_id', 'group_id', 'matrix', 'for_each', 'item',
  'item_index', 'concurrency_group', 'approval', 'approval_requested_at_ms', 'approval_deadline_ms', 'approval_decision',
  'approval_decided_by', 'approval_decided_at_ms', 'approval_comment', 'call_spec', 'child_run',
].join(', ');

/** A job row of JOB_VIEW_COLUMNS (or more) as a status document shows it. */
export function toJobView(r: Row): JobViewRecord {
  return {
    row_id: r.row_id as number,
    workflow_id: r.workflow_id as string,
    run_number: r.run_number as number,
    job_id: r.job_id as string,
    name: r.name as string,
    command: r.command as string,
    labels: JSON.parse(r.labels as string),
    needs: JSON.parse(r.needs as string),
    condition: (r.condition as JobCondition | undefined) ?? 'success',
    needs_results: r.needs_results === undefined || r.needs_results === null ? {} : JSON.parse(r.needs_results as string),
    max_retries: r.max_retries as number,
    backoff: JSON.parse(r.backoff as string),
    timeout_secs: (r.timeout_secs as number | null) ?? null,
    status: r.status as JobState,
    attempt: r.attempt as number,
    enqueued_at_ms: r.enqueued_at_ms as number,
    delayed_until_ms: r.delayed_until_ms as number,
    priority: (r.priority as number | undefined) ?? DEFAULT_PRIORITY,
    started_at_ms: (r.started_at_ms as number | null) ?? null,
    finished_at_ms: (r.finished_at_ms as number | null) ?? null,
    error: (r.error as string | null) ?? null,
    outputs: r.outputs === null || r.outputs === undefined ? null : JSON.parse(r.outputs as string),
    worker_id: (r.worker_id as string | null) ?? null,
    group_id: (r.group_id as string | null | undefined) ?? null,
    matrix: typeof r.matrix === 'string' ? (JSON.parse(r.matrix) as Record<string, unknown>) : null,
    for_each: typeof r.for_each === 'string' ? (JSON.parse(r.for_each) as { job: string; key: string }) : null,
    item: typeof r.item === 'string' ? (JSON.parse(r.item) as unknown) : null,
    item_index: (r.item_index as number | null | undefined) ?? null,
    concurrency_group: (r.concurrency_group as string | null | undefined) ?? null,
    // Only on gated jobs: a job without `approval:` reads as it always did.
    ...(typeof r.approval === 'string' ? { approval: toApproval(r) } : {}),
    // Only on a job that calls a workflow, likewise (README "Workflows calling workflows").
    ...(typeof r.call_spec === 'string'
      ? { call: JSON.parse(r.call_spec) as JobCall, child_run: r.child_run === null || r.child_run === undefined ? null : Number(r.child_run) }
      : {}),
  };
}

/** A whole job row: what a status document shows (toJobView) and the rest. */
export function toJob(r: Row): JobRecord {
  // Added onto the view's object, not spread into a new one: a spread of it cost 25 times as much.
  return Object.assign(toJobView(r), {
    env: JSON.parse(r.env as string),
    label_key: r.label_key as string,
    dependents: JSON.parse(r.dependents as string),
    pending_needs: r.pending_needs as number,
    failed_upstream: Boolean(r.failed_upstream),
    run_cancelled: Boolean(r.run_cancelled),
    conditional_dependents: Boolean(r.conditional_dependents),
    ready_at_ms: r.ready_at_ms as number,
    deadline_ms: (r.deadline_ms as number | null) ?? null,
    upstream_outputs: JSON.parse(r.upstream_outputs as string),
    // Only on jobs that have one: a job without `artifacts:`/`download:` reads as it always did.
    ...(typeof r.artifact_spec === 'string' ? { artifact_spec: JSON.parse(r.artifact_spec) } : {}),
    lease_id: (r.lease_id as string | null) ?? null,
    max_parallel: (r.max_parallel as number | null | undefined) ?? null,
    fail_fast: Boolean(r.fail_fast),
    cancel_in_progress: Boolean(r.cancel_in_progress),
  });
}

export function toLease(r: Row): LeaseRecord {
  return {
    lease_id: r.lease_id as string,
    job_row_id: r.job_row_id as number,
    workflow_id: r.workflow_id as string,
    run_number: r.run_number as number,
    job_id: r.job_id as string,
    attempt: r.attempt as number,
    worker_id: r.worker_id as string,
    ttl_secs: r.ttl_secs as number,
    granted_at_ms: r.granted_at_ms as number,
    renewed_at_ms: r.renewed_at_ms as number,
    expires_at_ms: r.expires_at_ms as number,
    state: r.state as LeaseState,
    token_name: (r.token_name as string | null | undefined) ?? null,
  };
}

export function toLogChunk(r: Row): LogChunkRecord {
  return {
    workflow_id: r.workflow_id as string,
    run_number: r.run_number as number,
    job_id: r.job_id as string,
    attempt: r.attempt as number,
    sequence: r.sequence as number,
    stream: r.stream as LogChunkRecord['stream'],
    data: r.data as string,
    timestamp_ms: r.timestamp_ms as number,
  };
}

/** The lease a claim grants on `job` (the job row already updated to running under `leaseId`). */
export function newLease(
  job: JobRecord,
  leaseId: string,
  workerId: string,
  ttlSecs: number,
  nowMs: number,
  expiresAtMs: number,
  tokenName: string | null,
): LeaseRecord {
  return {
    lease_id: leaseId,
    job_row_id: job.row_id,
    workflow_id: job.workflow_id,
    run_number: job.run_number,
    job_id: job.job_id,
    attempt: job.attempt,
    worker_id: workerId,
    ttl_secs: ttlSecs,
    granted_at_ms: nowMs,
    renewed_at_ms: nowMs,
    expires_at_ms: expiresAtMs,
    state: 'active',
    token_name: tokenName,
  };
}

/**
 * A queued run's planned jobs as they go in when it starts: the roots become claimable now, not when
 * the run was asked for, so they take their place in the claim order behind jobs already claimable.
 */
export function plannedJobsAt(plan: readonly NewJob[], nowMs: number): NewJob[] {
  return plan.map((j) => {
    if (j.status === 'queued') return { ...j, enqueued_at_ms: nowMs, ready_at_ms: Math.max(nowMs, j.delayed_until_ms) };
    // A root waiting for approval waits from now, and its timeout counts from now (README "Approvals").
    if (j.status === 'awaiting_approval' && j.approval) return { ...j, approval: beginWait(j.approval, nowMs) };
    return { ...j };
  });
}

/** A `secrets` row without its sealed value (README "Secrets"). */
export function toSecretInfo(r: Row): SecretInfo {
  return {
    scope: r.scope as string,
    name: r.name as string,
    key_id: r.key_id as string,
    updated_at_ms: Number(r.updated_at_ms),
    updated_by: (r.updated_by as string | null) ?? null,
  };
}

export function toSecret(r: Row): SecretRecord {
  return { ...toSecretInfo(r), sealed: r.sealed as string };
}
