/**
 * Workflows (docs/api.md "Workflows"): the status document and its parts, the list, and the bodies of
 * the calls that start and cancel runs. `id, name, trigger, jobs` of the status document and the
 * first block of a job are workflow-graph's, exactly as its viewer deserializes them (docs/protocol.md).
 *
 * These answers are written without a compiled serializer (a large list is streamed a document at a
 * time); their schemas document them (GET /api/openapi.json, checked against live answers) and type them.
 */
import { Type, type Static } from 'typebox';
import { JOB_STATES, type WireBackoff } from '../domain/model.js';
import { APPROVAL_DECISIONS, type ApprovalDecision } from '../domain/approval.js';
import { COMPAT_JOB_STATUSES, type StatusFilter, STATUS_FILTER_VALUES } from './states.js';
import { Id, InputsInput, nullable, Priority, RunTriggerSchema, StateCounts, StringMap, stringEnum, WorkflowStateSchema } from './schema-parts.js';
import { NotifyTargetInput } from './notifications-wire.js';

const int = Type.Integer();
const intOrNull = nullable(Type.Integer());
const strOrNull = nullable(Type.String());

/** Backoff as the status document shows it: serde's external tagging. */
const WireBackoffSchema = Type.Unsafe<WireBackoff>({
  description: '"None", {"Fixed": {"delay_secs"}} or {"Exponential": {"base_secs", "max_secs"}}',
  anyOf: [
    { type: 'string', enum: ['None'] },
    { type: 'object', required: ['Fixed'], properties: { Fixed: { type: 'object', properties: { delay_secs: { type: 'integer' } } } } },
    {
      type: 'object',
      required: ['Exponential'],
      properties: { Exponential: { type: 'object', properties: { base_secs: { type: 'integer' }, max_secs: { type: 'integer' } } } },
    },
  ],
});

/** A gated job's approval (README "Approvals"): the gate, the wait and the decision. */
export const ApprovalView = Type.Object({
  message: nullable(Type.String(), { description: 'shown to whoever decides' }),
  timeout_secs: nullable(Type.Integer(), { description: 'the wait fails the job after this many seconds; null: no timeout' }),
  requested_at_ms: nullable(Type.Integer(), { description: 'when the job started waiting (epoch ms); null until its needs are met' }),
  deadline_ms: nullable(Type.Integer(), { description: 'when the wait times out (epoch ms); null without timeout_secs' }),
  decision: Type.Unsafe<ApprovalDecision | null>({ type: ['string', 'null'], enum: [...APPROVAL_DECISIONS, null], description: 'approved, rejected or timed_out; null until decided' }),
  decided_by: nullable(Type.String(), { description: 'the name of the token that decided; null with tokens off and for a timeout' }),
  decided_at_ms: nullable(Type.Integer(), { description: 'when it was decided (epoch ms)' }),
  comment: nullable(Type.String(), { description: "the decision's comment" }),
});
export type ApprovalView = Static<typeof ApprovalView>;

/** README "Workflows calling workflows": the job whose call started a run (`run.parent`). */
export const RunParentView = Type.Object(
  { workflow_id: Type.String(), run_number: Type.Integer({ minimum: 1 }), job_id: Type.String() },
  { description: 'only on a run a job of another run started (uses:): that job' },
);
export type RunParentView = Static<typeof RunParentView>;

/** README "Workflows calling workflows": the run a job's call started (a job's `child_run`). */
export const ChildRunView = Type.Object(
  { workflow_id: Type.String(), run_number: Type.Integer({ minimum: 1 }) },
  { description: 'the run of the called workflow its latest attempt started; null until one started' },
);
export type ChildRunView = Static<typeof ChildRunView>;

/**
 * One job of the status document. The first block is workflow-graph's Job, exactly as its viewer
 * deserializes it; the rest is weft's.
 */
export const JobView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  /** The compatible vocabulary; weft's own state is `state`. */
  status: stringEnum(COMPAT_JOB_STATUSES, { description: "workflow-graph's vocabulary; weft's own state is `state`" }),
  command: Type.String(),
  /** Whole seconds of the finished attempt (truncated); null until it finishes. */
  duration_secs: nullable(Type.Integer(), { description: 'whole seconds the finished attempt took' }),
  /** Epoch ms the current attempt started; null when not started. */
  started_at: nullable(Type.Integer(), { description: 'epoch ms the current attempt started' }),
  depends_on: Type.Array(Type.String()),
  /** The last error text, if any. */
  output: nullable(Type.String(), { description: 'the last error text' }),
  required_labels: Type.Array(Type.String()),
  max_retries: int,
  attempt: int,
  /** Free JSON for custom renderers, as given in the array form; {} otherwise. */
  metadata: Type.Unsafe<Record<string, unknown>>({ type: 'object' }),
  ports: Type.Unsafe<unknown[]>({ type: 'array' }),
  children: Type.Unsafe<unknown[] | null>({ type: ['array', 'null'] }),
  collapsed: Type.Boolean(),

  state: stringEnum(JOB_STATES),
  started_at_ms: intOrNull,
  finished_at_ms: intOrNull,
  duration_ms: intOrNull,
  backoff: WireBackoffSchema,
  timeout_secs: intOrNull,
  /** When the job last became queued; null while it never was. */
  enqueued_at_ms: intOrNull,
  delayed_until_ms: int,
  outputs: StringMap,
  error: strOrNull,
  worker_id: strOrNull,
  /** `if:` as written: `success()` (the default), `failure()`, `always()` or `cancelled()`. */
  condition: stringEnum(['success()', 'failure()', 'always()', 'cancelled()'], { description: "the job's `if:`" }),
  /** Needs that ended other than `success`, with how (`failure`, `skipped`, `cancelled`), once they ended. */
  needs_results: Type.Unsafe<Record<string, string>>({ ...StringMap, description: 'needs that ended other than success: failure, skipped or cancelled' }),
  /** README "Priorities": a claim takes higher ones first. */
  priority: Type.Integer({ description: 'the priority the job is queued with (-100..100): a claim takes higher ones first' }),
  // Matrix and fan-out jobs only (README "Matrix, fan-out and artifacts"); absent on a plain job.
  /** The definition job an instance (id `<job>~<index>`) belongs to; on a group not yet expanded, its own id. */
  group: Type.Optional(Type.String({ description: 'matrix and fan-out jobs only: the definition job this instance (id `<job>~<index>`) belongs to; on a group not yet expanded, its own id' })),
  /** An instance's matrix values. */
  matrix: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object', description: "a matrix instance's values" })),
  /** A fan-out instance's item (a string or an object) and its index in the list. */
  item: Type.Optional(Type.Unknown({ description: "a fan-out instance's item: a string or an object" })),
  item_index: Type.Optional(Type.Integer({ minimum: 0, description: "a fan-out instance's index in its list" })),
  /** On a group not yet expanded: null; on a fan-out that had no items: 0. */
  instances: Type.Optional(nullable(Type.Integer(), { description: 'on a group not yet expanded: null; on a fan-out with no items: 0' })),
  /** Gated jobs only (README "Approvals"); absent on a job without `approval:`. */
  approval: Type.Optional(ApprovalView),
  /** README "Concurrency groups": only on a job in one; a `queued` job of it waits while another job of the group runs. */
  concurrency_group: Type.Optional(Type.String({ description: "the job's concurrency group (only on a job in one); a queued job waits while another job of the group runs" })),
  /** README "Workflows calling workflows": only on a job that calls a workflow; its id. */
  uses: Type.Optional(Type.String({ description: 'only on a job that calls a workflow (uses:): its id; no worker runs such a job' })),
  /** With `uses`: the run of it the latest attempt started, null until one did. */
  child_run: Type.Optional(nullable(ChildRunView)),
  /** Only on a queued job of a group while another job of the group runs: that job. */
  concurrency_holder: Type.Optional(
    Type.Object(
      { workflow_id: Type.String(), run_number: int, job_id: Type.String() },
      { description: 'only on a queued job of a concurrency group while another job of the group runs: the job it waits for' },
    ),
  ),
});
export type JobView = Static<typeof JobView>;


const runViewProperties = {
  number: int,
  status: WorkflowStateSchema,
  created_at: Type.String(),
  finished_at: strOrNull,
  created_at_ms: int,
  finished_at_ms: intOrNull,
  /** The run's input values (README "Run inputs"); {} when it has none. */
  inputs: Type.Unsafe<Record<string, string>>({ ...StringMap, description: "the run's input values; {} when it has none" }),
  /** The run this one re-runs (README "Re-running a run"); null for a run started afresh. */
  rerun_of: nullable(Type.Integer(), { description: 'the run this one re-runs; null for a run started afresh' }),
  /** README "Concurrency groups": only on a run in one; a `queued` run may be waiting on it. */
  concurrency_group: Type.Optional(Type.String({ description: "the run's concurrency group (only on a run in one); a queued run waits while another run of it runs" })),
  /** README "Dashboard": what started the run. */
  trigger: RunTriggerSchema,
  /** The hash of the definition the run used (GET …/runs/{n}/definition); null for a run from before weft kept it. */
  definition_hash: nullable(Type.String(), { description: 'the hash of the definition the run used (GET …/runs/{n}/definition answers it); null for a run from before weft kept it' }),
  /** README "Triggers and notifications": the event the run was started with. */
  event_name: nullable(Type.String(), { description: 'the name of the event the run was started with (GET …/runs/{n}/event answers its payload); null: none' }),
  /** README "Workflows calling workflows": only on a run a job's call started. */
  parent: Type.Optional(RunParentView),
};
export const RunView = Type.Object(runViewProperties);
export type RunView = Static<typeof RunView>;

const statusProperties = {
  id: Type.String(),
  name: Type.String(),
  /** "" when the definition has none. */
  trigger: Type.String({ description: '"" when the definition has none' }),
  jobs: Type.Array(JobView),

  /** Derived from the latest run; `idle` when never run. */
  status: WorkflowStateSchema,
  run_number: intOrNull,
  run: Type.Union([RunView, Type.Null()]),
  source: stringEnum(['file', 'api'] as const),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** When its schedules next start a run (epoch ms); null when it has none (docs/api.md "Schedules"). */
  next_fire_at_ms: nullable(Type.Integer(), { description: 'When its on.schedule next starts a run (epoch ms); null without schedules' }),
};

/**
 * `GET /api/workflows/{id}/status`, the 201 of POST, and every item of `GET /api/workflows`.
 * `id, name, trigger, jobs` are workflow-graph's Workflow.
 */
export const StatusDocument = Type.Object(statusProperties);
export type StatusDocument = Static<typeof StatusDocument>;

const { inputs: _runInputs, ...runSummaryProperties } = runViewProperties;
const { jobs: _jobs, run: _run, ...summaryProperties } = statusProperties;

/**
 * A workflow without its jobs: the items of `GET /api/workflows?jobs=false` and the data of the list
 * stream's `workflow` events (docs/api.md). Its size does not grow with the number of jobs, so a
 * dashboard list of large workflows stays cheap to send and to keep.
 */
export const WorkflowSummary = Type.Object({
  ...summaryProperties,
  /** The latest run as in the status document, without its inputs (which may be large). */
  run: Type.Union([Type.Object(runSummaryProperties), Type.Null()], { description: 'The latest run, without its inputs (null: never run)' }),
  /** Jobs of the latest run in each state (of the definition, all `pending`, when it never ran); states no job is in are left out. */
  job_counts: Type.Unsafe<Static<typeof StateCounts>>({ ...StateCounts, description: 'Jobs of the latest run by state; states no job is in are left out' }),
});
export type WorkflowSummary = Static<typeof WorkflowSummary>;

/** `GET /api/workflows`: status documents, or with `jobs=false` summaries. */
export const WorkflowList = Type.Array(Type.Union([StatusDocument, WorkflowSummary]), {
  description: 'Status documents with their jobs; with `jobs=false`, summaries (job counts instead of jobs)',
});

export const CancelResponse = Type.Object({
  ...statusProperties,
  cancelled_jobs: Type.Array(Type.String()),
  /** Numbers of the runs the cancel ended or is ending, oldest first. */
  cancelled_runs: Type.Array(int),
});
export type CancelResponse = Static<typeof CancelResponse>;

/**
 * `PUT /api/workflows/{id}`: the status document and what the PUT did. `unchanged` (answered 200,
 * as `updated` is) means the definition was the one already stored. Older servers leave `outcome` out.
 */
export const PutWorkflowResponse = Type.Object({ ...statusProperties, outcome: Type.Optional(stringEnum(['created', 'updated', 'unchanged'] as const)) });
export type PutWorkflowResponse = Static<typeof PutWorkflowResponse>;

/** `DELETE /api/workflows/{id}`. */
export const DeleteWorkflowResponse = Type.Object({ deleted: Type.String() }, { additionalProperties: false });

/** Most workflows one page of the list holds; a larger `limit` is capped to it. */
export const MAX_WORKFLOW_PAGE = 1000;

export const ListWorkflowsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 0, default: 100 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
    status: Type.Optional(stringEnum(STATUS_FILTER_VALUES as readonly StatusFilter[])),
    /** Only workflows whose id or name contains this text (ASCII case ignored): the dashboard's search box. */
    q: Type.Optional(Type.String({ maxLength: 256, pattern: '^[^\\u0000]*$' })),
    /** false: summaries with job counts instead of each workflow's jobs (docs/api.md). */
    jobs: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);
export type ListWorkflowsQuery = Static<typeof ListWorkflowsQuery>;

export const WorkflowParams = Type.Object({ id: Id });

/**
 * `POST /api/workflows/{id}/run` (docs/api.md). Optional: old clients send no body, or an empty one.
 * Whether each input is declared is the engine's check; a NUL is refused there too, with the input named.
 */
export const RunRequest = Type.Object(
  {
    /** Values of the workflow's declared inputs, by name. */
    inputs: Type.Optional(InputsInput),
    /** Every job of this run is queued with this priority (README "Priorities"). */
    priority: Type.Optional(Priority),
  },
  { additionalProperties: false },
);
export type RunRequest = Static<typeof RunRequest>;

/** Which run a cancel means; absent: every active run (docs/api.md). */
export const CancelQuery = Type.Object({ run: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: false });

// ------------------------------------------------------------------ workflow definitions (README "Workflow definitions")
// The definitions module validates a definition itself (naming job and field); this schema documents it.

const nonNegative = Type.Integer({ minimum: 0 });
const strings = Type.Array(Type.String());
const backoffInput = Type.Unsafe({
  description: 'none, {fixed: {delay_secs}} or {exponential: {base_secs, max_secs}}; the PascalCase spellings are accepted too',
  anyOf: [
    { type: 'string', enum: ['none', 'None'] },
    { type: 'object', minProperties: 1, maxProperties: 1 },
  ],
});
const needsInput = Type.Union([Type.String(), strings]);
const jobId = Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' });
const ignored = Type.Unsafe({ description: 'accepted and ignored' });

const contractJob = Type.Object(
  {
    name: Type.Optional(Type.String()),
    needs: Type.Optional(needsInput),
    if: Type.Optional(Type.String({ description: 'success() (default), failure(), always() or cancelled(); ${{ }} around it is accepted' })),
    run: Type.Optional(Type.String({ description: 'the command, run with sh -c' })),
    steps: Type.Optional(Type.Array(Type.Object({ name: Type.Optional(Type.String()), run: Type.String() }))),
    labels: Type.Optional(strings),
    retries: Type.Optional(nonNegative),
    backoff: Type.Optional(backoffInput),
    env: Type.Optional(StringMap),
    timeout_secs: Type.Optional(nonNegative),
    priority: Type.Optional(Priority),
  },
  { additionalProperties: false, description: 'exactly one of `run` and `steps`' },
);

const arrayJob = Type.Object(
  {
    id: jobId,
    name: Type.Optional(Type.String()),
    command: Type.String({ description: 'the command, run with sh -c' }),
    depends_on: Type.Optional(needsInput),
    required_labels: Type.Optional(strings),
    max_retries: Type.Optional(nonNegative),
    backoff: Type.Optional(backoffInput),
    env: Type.Optional(StringMap),
    timeout_secs: Type.Optional(nonNegative),
    priority: Type.Optional(Priority),
    // workflow-graph's clients send jobs in the full shape of their status document (docs/api.md).
    status: Type.Optional(ignored),
    duration_secs: Type.Optional(ignored),
    started_at: Type.Optional(ignored),
    output: Type.Optional(ignored),
    attempt: Type.Optional(ignored),
    metadata: Type.Optional(Type.Unsafe({ type: 'object', description: 'kept and shown again in the status document' })),
    ports: Type.Optional(Type.Unsafe({ type: 'array' })),
    children: Type.Optional(Type.Unsafe({ type: ['array', 'null'] })),
    collapsed: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** POST /api/workflows and PUT /api/workflows/{id}: the contract form or the array form. */
export const WorkflowDefinitionBody = Type.Union(
  [
    Type.Object(
      {
        id: Type.Optional(jobId),
        name: Type.Optional(Type.String()),
        on: Type.Optional(Type.Unsafe({ description: 'free text shown as the trigger' })),
        env: Type.Optional(StringMap),
        priority: Type.Optional(Priority),
        jobs: Type.Unsafe({ type: 'object', minProperties: 1, additionalProperties: contractJob }),
        notify: Type.Optional(Type.Array(NotifyTargetInput, { maxItems: 10, description: 'webhooks told when a run ends (README "Notifications")' })),
      },
      { title: 'contract form', additionalProperties: false },
    ),
    Type.Object(
      {
        id: Type.Optional(jobId),
        name: Type.Optional(Type.String()),
        trigger: Type.Optional(Type.String()),
        env: Type.Optional(StringMap),
        priority: Type.Optional(Priority),
        jobs: Type.Array(arrayJob, { minItems: 1 }),
        notify: Type.Optional(Type.Array(NotifyTargetInput, { maxItems: 10 })),
      },
      { title: 'array form', additionalProperties: false },
    ),
  ],
  {
    description:
      'A workflow definition in the contract form (jobs keyed by id) or the array form existing clients send (docs/api.md). ' +
      'Unknown keys, cycles and unknown `needs` are refused with 400 invalid_workflow listing every problem.',
  },
);

/** `GET /api/workflows/{id}/definition`: the definition in the contract form of a workflow file. */
export const DefinitionDocument = Type.Object({
  id: Type.String(),
  name: Type.String(),
  on: Type.Optional(Type.Unsafe({ description: 'the trigger, as the workflow file gave it' })),
  env: Type.Optional(StringMap),
  jobs: Type.Unsafe<Record<string, object>>({ type: 'object', additionalProperties: { type: 'object' }, description: 'job id → job, in the contract form' }),
  notify: Type.Optional(Type.Array(NotifyTargetInput, { description: 'webhooks told when a run ends (README "Notifications")' })),
});
