
/** A job's `if:` (README "Workflow definitions"); the rules are in conditions.ts. */
export const JOB_CONDITIONS = ['success', 'failure', 'always', 'cancelled'] as const;
export type JobCondition = (typeof JOB_CONDITIONS)[number];

/**
 * Pure domain types shared by every layer. No I/O lives here.
 */

/**
 * Every state a job of a run can be in (README "How a run works"). `awaiting_approval`: its needs are
 * met and it waits for a person's decision (README "Approvals"); never claimable.
 */
export const JOB_STATES = ['pending', 'awaiting_approval', 'queued', 'running', 'success', 'failed', 'skipped', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States after which a job never changes again within its run. */
export const TERMINAL_JOB_STATES: ReadonlySet<JobState> = new Set(['success', 'failed', 'skipped', 'cancelled']);

export function isTerminal(state: JobState): boolean {
  return TERMINAL_JOB_STATES.has(state);
}

/**
 * Derived state of a run and, through its latest run, of a workflow. `idle` means never run; `queued`
 * is a run waiting for a free slot of its workflow's `concurrency` (README "How a run works").
 */
export const RUN_STATES = ['queued', 'running', 'success', 'failed', 'cancelled'] as const;
export type RunState = (typeof RUN_STATES)[number];
export type WorkflowState = RunState | 'idle';

/** Backoff between retries, in the internal (lower-case) form. */
export type Backoff =
  | { kind: 'none' }
  | { kind: 'fixed'; delay_secs: number }
  | { kind: 'exponential'; base_secs: number; max_secs: number };

/** serde external tagging, as Rust workers deserialize `retry_policy.backoff`. */
export type WireBackoff =
  | 'None'
  | { Fixed: { delay_secs: number } }
  | { Exponential: { base_secs: number; max_secs: number } };

export interface WireRetryPolicy {
  max_retries: number;
  backoff: WireBackoff;
}

/** One job of a workflow definition, normalised. */
export interface JobSpec {
  /** Job id, unique within its workflow: [A-Za-z0-9_.-]{1,128}. */
  id: string;
  /** Display name; defaults to the id. */
  name: string;
  /** The shell command (run with `sh -c`). `steps:` are already joined into it. */
  command: string;
  /** Direct upstream job ids, in definition order, without duplicates. */
  needs: string[];
  /** Labels a worker must carry to claim this job (its `required_labels`), sorted, unique. */
  labels: string[];
  max_retries: number;
  backoff: Backoff;
  /** Job environment (already merged over nothing; the workflow env is kept separately). */
  env: Record<string, string>;
  /** A running attempt older than this is failed (retryable). null means no timeout. */
  timeout_secs: number | null;
  /** `if:` when it is not the default `success` (README "Workflow definitions"). */
  condition?: JobCondition;
  /** Display data existing clients send in the array form, kept and shown as given. */
  presentation?: JobPresentation;
  /** `strategy:` (README "Matrix, fan-out and artifacts"); absent for a plain job, so its hash is unchanged. */
  strategy?: JobStrategy;
  /** `for_each: ${{ needs.<job>.outputs.<key> }}`: one instance per item of that output's JSON array. */
  for_each?: { job: string; key: string };
  /** `artifacts:` paths or globs uploaded after success (README "Artifacts"); absent: none. */
  artifacts?: string[];
  /** `download:` needs whose artifacts are fetched before the command; absent: none. */
  download?: string[];
  /** `priority:` (README "Priorities"); absent: the workflow's. */
  priority?: number;
  /**
   * `approval:` (README "Approvals"): the job waits for a person's approve or reject once its needs
   * are met. Absent for a job without a gate, so its hash is unchanged.
   */
  approval?: ApprovalSpec;
  /**
   * `concurrency:` of a job (README "Concurrency groups"): at most one job of all the jobs, of any run
   * or workflow, whose group evaluates to the same name runs at once. Absent: none, so its hash is unchanged.
   */
  concurrency?: JobConcurrency;
  /**
   * `uses:` (README "Workflows calling workflows"): the job starts a run of this workflow and ends as
   * it ends; such a job has no command. Absent on every other job, so its hash is unchanged.
   */
  uses?: string;
  /** `with:` of a `uses:` job: the called workflow's input values, templates as written; absent: none. */
  with?: Record<string, string>;
}

/** A job's concurrency group, written with `${{ inputs.* }}` and `${{ matrix.* }}` as the author gave it. */
export interface JobConcurrency {
  group: string;
  /** A job arriving in the group cancels the group's running job instead of waiting for it to end. */
  cancel_in_progress: boolean;
}

/** A job's approval gate, as defined (src/domain/approval.ts has the rules). */
export interface ApprovalSpec {
  /** Shown to whoever decides; null: none. */
  message: string | null;
  /** The wait fails the job after this many seconds; null: it waits until decided or cancelled. */
  timeout_secs: number | null;
}

/** A job's matrix, already expanded into its combinations (domain/matrix.ts), and how its instances run. */
export interface JobStrategy {
  /** `strategy.matrix` as written (keys, include, exclude), for writing the definition back. */
  matrix: Record<string, unknown>;
  /** One per instance, in instance order (GitHub's combination order, then include-added ones); [] for a for_each job. */
  combos: Array<Record<string, unknown>>;
  /** An instance failing for good cancels its unfinished siblings. */
  fail_fast: boolean;
  /** At most this many instances leased at once; null: no cap. */
  max_parallel: number | null;
}

/**
 * What workflow-graph's viewer draws a node with (docs/protocol.md). weft never reads it;
 * it only keeps it and returns it in the status document.
 */
export interface JobPresentation {
  metadata: Record<string, unknown>;
  ports: unknown[];
  children: unknown[] | null;
  collapsed: boolean;
}

/** One declared input of a workflow (README "Workflow definitions"). */
export interface InputSpec {
  /** Used when a run is started without a value; null: none. */
  default: string | null;
  /** A run without a value is refused. */
  required: boolean;
  description: string | null;
}

/** A validated workflow definition. */
export interface WorkflowDefinition {
  id: string;
  name: string;
  /** Free text from `on:` (or `trigger` in the array form); null when absent. */
  trigger: string | null;
  /** Workflow-wide environment for every job. */
  env: Record<string, string>;
  /** Jobs in definition order. */
  jobs: JobSpec[];
  /**
   * `on: { schedule: [...] }` (README "Workflow definitions"); absent when the workflow has none, so
   * the hash of a definition without schedules is what it always was.
   */
  schedules?: Schedule[];
  /** Declared run inputs by name; absent when none are declared (so such a definition hashes as before). */
  inputs?: Record<string, InputSpec>;
  /** `concurrency:`; absent for the default (one active run, a second start refused). */
  concurrency?: Concurrency;
  /** `priority:` of every job that sets none (README "Priorities"); absent: 0. */
  priority?: number;
  /** `notify:` (README "Notifications"): the webhooks told when a run ends; absent: none. */
  notify?: NotifyTarget[];
  /**
   * `on: { webhook, event, workflow_run }` (README "Triggers and notifications"): what starts runs
   * from outside. Absent when the workflow has none of them, so such a definition hashes as before.
   */
  triggers?: WorkflowTriggers;
  /**
   * `outputs:` (README "Workflows calling workflows"): what a run of this workflow hands to the job
   * that called it, each a template of `${{ jobs.<job>.outputs.<key> }}`; absent: none.
   */
  outputs?: Record<string, WorkflowOutput>;
}

/** One declared output of a workflow: its value as a template, and what it is for. */
export interface WorkflowOutput {
  value: string;
  description: string | null;
}

/** The `on:` keys that start runs from outside (README "Webhooks", "Events", "Runs that follow runs"). */
export interface WorkflowTriggers {
  webhook?: WebhookTrigger;
  /** `on.event`: the names of events (POST /api/events/{name}) that start a run, sorted, unique. */
  events?: string[];
  workflow_run?: WorkflowRunTrigger;
}

/** `on.webhook`: POST /api/hooks/{id} signed with the secret NAME starts a run. */
export interface WebhookTrigger {
  /** The weft secret (README "Secrets") the deliveries are signed with: the workflow's own, else a global one. */
  secret: string;
  /**
   * A delivery starts a run only when, at each dot path, the payload holds one of the values (compared
   * as text); absent: every delivery.
   */
  filters?: Record<string, string[]>;
  /** The `X-GitHub-Event` names that start a run; absent: every one but `ping`. */
  events?: string[];
}

/** How a run of a followed workflow ended, as `on.workflow_run.types` names it; `completed` is any end. */
export const RUN_END_TYPES = ['success', 'failure', 'cancelled', 'completed'] as const;
export type RunEndType = (typeof RUN_END_TYPES)[number];

/** `on.workflow_run`: a run of one of `workflows` that ends as one of `types` starts a run. */
export interface WorkflowRunTrigger {
  /** Workflow ids, sorted, unique. */
  workflows: string[];
  /** Sorted, unique; `completed` alone when every end counts. */
  types: RunEndType[];
}

// README "Notifications": a workflow's `notify:` entries (rules in notify.ts).
/** The ends a target may ask for; `failure` is a run that ended `failed` (as GitHub says it). */
export const NOTIFY_ON = ['failure', 'success', 'cancelled'] as const;
export type NotifyOn = (typeof NOTIFY_ON)[number];

/** The body's shape: weft's JSON document, or a Slack incoming-webhook message (`{"text": …}`). */
export const NOTIFY_FORMATS = ['json', 'slack'] as const;
export type NotifyFormat = (typeof NOTIFY_FORMATS)[number];

/** One entry of a workflow's `notify:` list, normalised. */
export interface NotifyTarget {
  /** The run ends this target hears of, in NOTIFY_ON order, each once. */
  on: NotifyOn[];
  /** An http(s) URL, or exactly `${{ secrets.NAME }}` naming a secret that holds one. */
  webhook: string;
  /** A weft secret (README "Secrets") whose value signs the body (X-Weft-Signature-256). */
  secret?: string;
  /** The body's shape; absent: decided by the URL (Slack's host gets Slack's format). */
  format?: NotifyFormat;
}

/** How many runs of a workflow may be active at once, and what a start does when that many are. */
export interface Concurrency {
  max_runs: number;
  when_full: 'reject' | 'queue';
  /**
   * A concurrency group (README "Concurrency groups"): at most one run of all the runs, of any workflow,
   * whose group evaluates to the same name is running; written with `${{ inputs.* }}` as the author
   * gave it, evaluated when a run starts. Absent: no group.
   */
  group?: string;
  /** With `group`: a start cancels the group's running run instead of waiting for it. */
  cancel_in_progress?: boolean;
}

/**
 * What started a run (README "Dashboard"): `manual` a start through the API (the CLI, the dashboard),
 * `schedule` a cron schedule, `rerun` a re-run of an earlier run, `webhook` a signed delivery to
 * POST /api/hooks/{id}, `event` a named event (POST /api/events/{name}), `workflow_run` the end of a
 * run of another workflow (README "Triggers and notifications"), `call` a job of another workflow's
 * run (README "Workflows calling workflows").
 */
export const RUN_TRIGGERS = ['manual', 'schedule', 'rerun', 'webhook', 'event', 'workflow_run', 'call'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/** The default: one active run; another start is refused. */
export const DEFAULT_CONCURRENCY: Concurrency = { max_runs: 1, when_full: 'reject' };

/** One entry of `on.schedule`: a five-field cron expression read in `timezone` (null: UTC). */
export interface Schedule {
  cron: string;
  timezone: string | null;
  /** What a scheduler does with times that passed while none was running (docs/api.md "Schedules"). */
  catch_up: 'latest' | 'none';
}

/** Map from upstream job id to that job's outputs. */
export type UpstreamOutputs = Record<string, Record<string, string>>;
export type Outputs = Record<string, string>;

export type LogStream = 'stdout' | 'stderr';

/** A log chunk as a worker pushes it; the lease it comes with supplies whatever is left out. */
export interface IncomingLogChunk {
  workflow_id?: string;
  job_id?: string;
  sequence: number;
  data: string;
  timestamp_ms?: number;
  stream?: LogStream;
}
