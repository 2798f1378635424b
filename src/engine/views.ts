import { newApproval } from '../domain/approval.js';
import { jobPriority } from '../domain/priority.js';
import { backoffToWire } from '../domain/backoff.js';
import { needsResultEnvName } from '../domain/conditions.js';
import { needResultOf, needsByGroup, resolveEnv } from './needs-values.js';
import { keyed, own } from '../domain/keyed.js';
import type { JobPresentation, JobSpec, JobState } from '../domain/model.js';
import { compatJobStatus } from '../protocol/states.js';
import type { ClaimedJob, ClaimResult, CurrentLease, JobView, LeaseView, LogChunkView, RunSummary, RunView, StatusDocument, WorkerView, WorkflowSummary } from '../protocol/wire.js';
import type { Claimed, JobGroupHolder, JobRecord, JobViewRecord, LeaseRecord, LogChunkRecord, RunJobCount, RunRecord, WorkerRecord, WorkflowRecord } from '../store/store.js';
import type { LeaseVisibility } from './engine-options.js';

/**
 * The documents the API returns, built from store records in the shapes of src/protocol/wire.ts:
 * workflow-graph's fields exactly as its clients read them (docs/protocol.md), weft's richer
 * data beside them.
 */

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const NO_PRESENTATION: JobPresentation = { metadata: {}, ports: [], children: null, collapsed: false };

/**
 * `holders`: the running job of each concurrency group a queued job of `jobs` is in (groupsWaitedOn,
 * StoreReads.jobGroupHolders); absent: not read, and no job says what it waits for.
 */
export function statusDocument(wf: WorkflowRecord, run: RunRecord | null, jobs: readonly JobViewRecord[] | null, holders: readonly JobGroupHolder[] = []): StatusDocument {
  const presentation = presentationOf(wf);
  if (run?.plan && jobs && jobs.length === 0) jobs = plannedJobs(run);
  const jobViews: JobView[] = run && jobs ? jobs.map((j) => jobView(j, presentation.get(j.job_id))) : idleJobs(wf);
  showHolders(jobViews, holders);
  const f = documentFields(wf, run);
  return {
    id: f.id,
    name: f.name,
    trigger: f.trigger,
    jobs: jobViews,
    status: f.status,
    run_number: f.run_number,
    run: run ? runView(run) : null,
    source: f.source,
    created_at: f.created_at,
    updated_at: f.updated_at,
    next_fire_at_ms: f.next_fire_at_ms,
  };
}

/** The concurrency groups queued jobs of `jobs` wait in: the groups whose holders a status document shows. */
export function groupsWaitedOn(jobs: readonly JobViewRecord[] | null): string[] {
  const groups = new Set<string>();
  for (const j of jobs ?? []) if (j.status === 'queued' && j.concurrency_group !== null) groups.add(j.concurrency_group);
  return [...groups];
}

/** Each queued job of `views` in a group of `holders` names the running job it waits for. */
function showHolders(views: JobView[], holders: readonly JobGroupHolder[]): void {
  if (holders.length === 0) return;
  const byGroup = new Map(holders.map((h) => [h.concurrency_group, h]));
  for (const j of views) {
    const h = j.state === 'queued' && j.concurrency_group !== undefined ? byGroup.get(j.concurrency_group) : undefined;
    if (h) j.concurrency_holder = { workflow_id: h.workflow_id, run_number: h.run_number, job_id: h.job_id };
  }
}

/**
 * Job entries of the status document for some of a run's job rows (a large run read a page at a
 * time), with the holders of the groups the page's queued jobs wait in, as statusDocument shows them.
 */
export function jobViews(wf: WorkflowRecord, jobs: readonly JobViewRecord[], holders: readonly JobGroupHolder[] = []): JobView[] {
  const presentation = presentationOf(wf);
  const views = jobs.map((j) => jobView(j, presentation.get(j.job_id)));
  showHolders(views, holders);
  return views;
}

/** The status document's fields other than `jobs` and `run`. */
function documentFields(wf: WorkflowRecord, run: RunRecord | null): Omit<StatusDocument, 'jobs' | 'run'> {
  return {
    id: wf.id,
    name: wf.name,
    trigger: wf.trigger ?? '',
    status: run ? run.status : 'idle',
    run_number: run ? run.run_number : null,
    source: wf.source,
    created_at: iso(wf.created_at_ms)!,
    updated_at: iso(wf.updated_at_ms)!,
    next_fire_at_ms: wf.next_fire_at_ms ?? null,
  };
}

function runView(run: RunRecord): RunView {
  return {
    number: run.run_number,
    status: run.status,
    created_at: iso(run.created_at_ms)!,
    finished_at: iso(run.finished_at_ms),
    created_at_ms: run.created_at_ms,
    finished_at_ms: run.finished_at_ms,
    inputs: run.inputs,
    rerun_of: run.rerun_of,
    ...(run.concurrency_group !== null ? { concurrency_group: run.concurrency_group } : {}),
    trigger: run.trigger,
    definition_hash: run.definition_hash,
    event_name: run.event_name,
    ...(run.parent ? { parent: { ...run.parent } } : {}),
  };
}

/** The run as a summary shows it: its inputs may be large, and a list has no use for them. */
function runBrief(run: RunView): Omit<RunView, 'inputs'> {
  const { inputs: _inputs, ...brief } = run;
  return brief;
}

type JobCounts = Partial<Record<JobState, number>>;

/**
 * The summary of a workflow (docs/api.md "GET /api/workflows", `jobs=false`): the status document's
 * fields without `jobs` (nor the run's inputs), with the jobs counted by state instead. `counts` are
 * the latest run's, from one grouped query; a queued run counts its planned jobs, and a workflow that
 * never ran its definition's, all pending, as the status document shows them.
 */
export function workflowSummary(wf: WorkflowRecord, run: RunRecord | null, counts: readonly RunJobCount[]): WorkflowSummary {
  let jobCounts: JobCounts = {};
  if (!run) jobCounts = wf.definition.jobs.length > 0 ? { pending: wf.definition.jobs.length } : {};
  else if (counts.length === 0 && run.plan) jobCounts = run.plan.length > 0 ? { pending: run.plan.length } : {};
  else for (const c of counts) jobCounts[c.status] = c.count;
  return { ...documentFields(wf, run), run: run && runBrief(runView(run)), job_counts: jobCounts };
}

/** The summary of a status document already read (live events of a workflow also watched whole). */
export function summaryOfDocument(doc: StatusDocument): WorkflowSummary {
  const counts: JobCounts = {};
  for (const j of doc.jobs) counts[j.state] = (counts[j.state] ?? 0) + 1;
  const { jobs: _jobs, run, ...rest } = doc;
  return { ...rest, run: run && runBrief(run), job_counts: counts };
}

/** A queued run's jobs as it will start them, every one `pending` until it does (README "How a run works"). */
export function plannedJobs(run: RunRecord): JobRecord[] {
  return (run.plan ?? []).map((j, i) => ({
    ...j,
    row_id: -(i + 1),
    run_number: run.run_number,
    status: 'pending',
    enqueued_at_ms: 0,
    ready_at_ms: 0,
    started_at_ms: null,
    finished_at_ms: null,
    error: null,
    // Not waiting yet: the wait begins when the run starts (rows.ts plannedJobsAt).
    approval: j.approval ? newApproval(j.approval) : null,
  }));
}

/** Run history items: each run with its jobs counted by state (counts from one grouped query). */
export function runSummaries(runs: readonly RunRecord[], counts: readonly RunJobCount[]): RunSummary[] {
  const byRun = new Map<number, Partial<Record<JobState, number>>>();
  for (const c of counts) {
    const tally = byRun.get(c.run_number) ?? {};
    tally[c.status] = c.count;
    byRun.set(c.run_number, tally);
  }
  return runs.map((run) => ({
    run_number: run.run_number,
    status: run.status,
    created_at_ms: run.created_at_ms,
    finished_at_ms: run.finished_at_ms,
    job_counts: byRun.get(run.run_number) ?? (run.plan ? { pending: run.plan.length } : {}),
    inputs: run.inputs,
    rerun_of: run.rerun_of,
    ...(run.concurrency_group !== null ? { concurrency_group: run.concurrency_group } : {}),
    trigger: run.trigger,
    event_name: run.event_name,
    ...(run.parent ? { parent: { ...run.parent } } : {}),
  }));
}

/** Only array-form definitions carry presentation; most workflows skip the map entirely. */
/** Built once per record read: a large run's document asks for it once per page of jobs. */
const presentations = new WeakMap<WorkflowRecord, Map<string, JobPresentation>>();

function presentationOf(wf: WorkflowRecord): Map<string, JobPresentation> {
  let map = presentations.get(wf);
  if (map) return map;
  map = new Map<string, JobPresentation>();
  for (const spec of wf.definition.jobs) if (spec.presentation) map.set(spec.id, spec.presentation);
  presentations.set(wf, map);
  return map;
}

function jobView(j: JobViewRecord, p: JobPresentation = NO_PRESENTATION): JobView {
  const durationMs = j.started_at_ms !== null && j.finished_at_ms !== null ? Math.max(0, j.finished_at_ms - j.started_at_ms) : null;
  return {
    id: j.job_id,
    name: j.name,
    status: compatJobStatus(j.status),
    command: j.command,
    // workflow-graph's viewer reads an unsigned integer: whole seconds, truncated as it does itself.
    duration_secs: durationMs === null ? null : Math.floor(durationMs / 1000),
    started_at: j.started_at_ms,
    depends_on: j.needs,
    output: j.error,
    required_labels: j.labels,
    max_retries: j.max_retries,
    attempt: j.attempt,
    metadata: p.metadata,
    ports: p.ports,
    children: p.children,
    collapsed: p.collapsed,
    state: j.status,
    started_at_ms: j.started_at_ms,
    finished_at_ms: j.finished_at_ms,
    duration_ms: durationMs,
    backoff: backoffToWire(j.backoff),
    timeout_secs: j.timeout_secs,
    enqueued_at_ms: j.enqueued_at_ms === 0 ? null : j.enqueued_at_ms,
    delayed_until_ms: j.delayed_until_ms,
    outputs: j.outputs ?? {},
    error: j.error,
    worker_id: j.worker_id,
    condition: `${j.condition}()`,
    needs_results: j.needs_results,
    priority: j.priority,
    ...groupFields(j),
    // README "Approvals": only on a gated job, so other entries keep their shape.
    ...(j.approval ? { approval: { ...j.approval } } : {}),
    // README "Concurrency groups": likewise only on a job in one.
    ...(j.concurrency_group !== null ? { concurrency_group: j.concurrency_group } : {}),
    // README "Workflows calling workflows": likewise only on a job that calls a workflow.
    ...(j.call ? { uses: j.call.uses, child_run: j.child_run != null ? { workflow_id: j.call.uses, run_number: j.child_run } : null } : {}),
  };
}

/**
 * README "Matrix, fan-out and artifacts": a matrix instance has `group` and `matrix`, a fan-out
 * instance `group`, `item` and `item_index`; a fan-out not yet expanded `group` (its own id) and
 * `instances: null`, one that had no items `instances: 0`. A plain job has none of them.
 */
function groupFields(j: JobViewRecord): Pick<JobView, 'group' | 'matrix' | 'item' | 'item_index' | 'instances'> {
  if (j.group_id === null) return {};
  if (j.for_each !== null) return { group: j.group_id, instances: j.status === 'success' ? 0 : null };
  if (j.item_index !== null) return { group: j.group_id, item: j.item, item_index: j.item_index };
  return { group: j.group_id, matrix: j.matrix ?? {} };
}

/** A workflow that never ran shows its definition's jobs, all pending. */
function idleJobs(wf: WorkflowRecord): JobView[] {
  return wf.definition.jobs.map((spec: JobSpec) => {
    const p = spec.presentation ?? NO_PRESENTATION;
    return {
      id: spec.id,
      name: spec.name,
      status: compatJobStatus('pending'),
      command: spec.command,
      duration_secs: null,
      started_at: null,
      depends_on: spec.needs,
      output: null,
      required_labels: spec.labels,
      max_retries: spec.max_retries,
      attempt: 0,
      metadata: p.metadata,
      ports: p.ports,
      children: p.children,
      collapsed: p.collapsed,
      state: 'pending',
      started_at_ms: null,
      finished_at_ms: null,
      duration_ms: null,
      backoff: backoffToWire(spec.backoff),
      timeout_secs: spec.timeout_secs,
      enqueued_at_ms: null,
      delayed_until_ms: 0,
      outputs: {},
      error: null,
      worker_id: null,
      condition: `${spec.condition ?? 'success'}()`,
      needs_results: {},
      priority: jobPriority(undefined, spec.priority, wf.definition.priority),
      ...(spec.strategy || spec.for_each ? { group: spec.id, instances: null } : {}),
      ...(spec.approval ? { approval: newApproval(spec.approval) } : {}),
      ...(spec.uses !== undefined ? { uses: spec.uses, child_run: null } : {}),
    };
  });
}

/**
 * Workers with what they hold. A lease id is a capability until its token check (README "Access
 * tokens"), so `current_lease` and `current_leases` list only the leases `sees` allows (absent: all);
 * `current_job` and `current_jobs` name every job held, without lease ids, for every reader.
 */
export function workerViews(
  workers: WorkerRecord[],
  leases: LeaseRecord[],
  nowMs: number,
  offlineAfterMs: number,
  sees: LeaseVisibility = () => true,
): WorkerView[] {
  const held = new Map<string, Array<{ lease: CurrentLease; visible: boolean }>>();
  for (const l of leases) {
    if (nowMs > l.expires_at_ms) continue;
    const cl = { workflow_id: l.workflow_id, job_id: l.job_id, run_number: l.run_number, attempt: l.attempt, lease_id: l.lease_id };
    const entry = { lease: cl, visible: sees(l.token_name) };
    const list = held.get(l.worker_id);
    if (list) list.push(entry);
    else held.set(l.worker_id, [entry]);
  }
  return workers.map((w) => {
    const all = held.get(w.worker_id) ?? [];
    const leasesHeld = all.filter((e) => e.visible).map((e) => e.lease);
    const status = all.length > 0 ? 'busy' : nowMs - w.last_seen_ms > offlineAfterMs ? 'offline' : 'idle';
    const first = all[0]?.lease ?? null;
    return {
      worker_id: w.worker_id,
      labels: w.labels,
      registered_at_ms: w.registered_at_ms,
      // Any call of a worker counts as a sign of life (docs/api.md "GET /api/workers"), not only heartbeats.
      last_heartbeat_ms: w.last_seen_ms,
      current_job: first ? first.job_id : null,
      status,
      last_seen_ms: w.last_seen_ms,
      current_lease: leasesHeld[0] ?? null,
      current_leases: leasesHeld,
      current_jobs: all.map(({ lease: { lease_id: _hidden, ...job } }) => job),
    };
  });
}

export function logChunkView(c: LogChunkRecord): LogChunkView {
  return {
    workflow_id: c.workflow_id,
    job_id: c.job_id,
    run_number: c.run_number,
    attempt: c.attempt,
    sequence: c.sequence,
    stream: c.stream,
    data: c.data,
    timestamp_ms: c.timestamp_ms,
  };
}

/** A claim as the worker protocol answers it (docs/api.md "POST /api/jobs/claim"). */
/**
 * The claim answer. `secrets`: the job's secrets opened for it (README "Secrets"); their values go into
 * its env and, as `mask`, tell the worker what to hide in what it sends back.
 */
export function claimResult(c: Claimed, secrets?: { values: ReadonlyMap<string, string> }, traceparent?: string | null): ClaimResult {
  const job = claimedJob(c.job, secrets?.values);
  // The attempt's span (README "Traces (OpenTelemetry)"), after the job's own env: weft names the span.
  if (traceparent) job.env = { ...job.env, TRACEPARENT: traceparent };
  if (secrets && secrets.values.size > 0) job.mask = [...new Set(secrets.values.values())];
  return { job, lease: leaseView(c.lease) };
}

function claimedJob(job: JobRecord, secrets?: ReadonlyMap<string, string>): ClaimedJob {
  return {
    job_id: job.job_id,
    workflow_id: job.workflow_id,
    command: job.command,
    required_labels: job.labels,
    retry_policy: { max_retries: job.max_retries, backoff: backoffToWire(job.backoff) },
    attempt: job.attempt,
    upstream_outputs: job.upstream_outputs,
    enqueued_at_ms: job.enqueued_at_ms,
    delayed_until_ms: job.delayed_until_ms,
    run_number: job.run_number,
    name: job.name,
    env: job.needs.length === 0 ? resolveEnv(job, secrets) : { ...resolveEnv(job, secrets), ...needsResultsEnv(job) },
    timeout_secs: job.timeout_secs,
  };
}

/**
 * `WEFT_NEEDS_<JOB>_RESULT` of each need, carried in the claimed job's `env` so that every worker hands
 * it to the command without knowing of it (README "Workflow definitions", `if:`). A need the row does
 * not list in needs_results succeeded.
 */
function needsResultsEnv(job: JobRecord): Record<string, string> {
  const each = job.needs.map((need): [string, string] => [needsResultEnvName(need), own(job.needs_results, need) ?? 'success']);
  // A matrix need also has one result for the whole group, as GitHub's needs.<job>.result.
  const groups = [...needsByGroup(job.needs)].filter(([g, ids]) => ids.length > 1 || ids[0] !== g);
  const whole = groups.map(([g]): [string, string] => [needsResultEnvName(g), needResultOf(job, g)]);
  return keyed([...each, ...whole]);
}

export function leaseView(l: LeaseRecord): LeaseView {
  return {
    lease_id: l.lease_id,
    job_id: l.job_id,
    workflow_id: l.workflow_id,
    worker_id: l.worker_id,
    ttl_secs: l.ttl_secs,
    granted_at_ms: l.granted_at_ms,
    expires_at_ms: l.expires_at_ms,
  };
}
