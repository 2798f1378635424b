/** Messages between bench/run.ts and its load-generator children (bench/loadgen.ts), over the fork IPC channel. */

/**
 * - `spec`: claim -> complete until claim answers null (or maxClaimsPerLoop is reached).
 * - `batch`: claim-batch once, then report-batch (completing what it holds and claiming more) until it
 *   holds nothing and the claim part found nothing.
 * - `dag`: idle workers that claim (long-polling when the server supports it) and complete whatever
 *   they get, streaming each claim and complete back as an event, until told to stop.
 */
export type LoopMode = 'spec' | 'batch' | 'dag';

export interface LoadgenConfig {
  origin: string;
  mode: LoopMode;
  /** Claim loops in this process; also the size of its keep-alive connection pool. */
  loops: number;
  /** Worker ids are `${workerPrefix}-${loop index}`; distinct per process. */
  workerPrefix: string;
  /** Labels of loop i are labels[i % labels.length]. */
  labels: string[][];
  leaseTtlSecs: number;
  /** Bounded runs (backlog): a loop stops after this many claims that returned a job. */
  maxClaimsPerLoop?: number;
  /** Unmeasured claim -> complete cycles per loop before `ready` (spec and batch modes). */
  warmupClaimsPerLoop?: number;
  /** Labels offered during the warm-up, when it must draw on jobs of its own (default: `labels`). */
  warmupLabels?: string[][];
  /** `batch`: max_jobs of each claim. */
  batchMaxJobs?: number;
  /** `dag`: send wait_secs with each claim (the server long-polls); otherwise poll with pollPauseMs between. */
  longPollSecs?: number | null;
  pollPauseMs?: number;
}

export interface DagEvent {
  kind: 'claim' | 'complete';
  workflow_id: string;
  job_id: string;
  sent_at: number;
  answered_at: number;
  /** complete: the jobs that this completion made claimable, as the server reports them. */
  enqueued?: string[];
}

export interface LoadgenResult {
  /** Jobs whose complete (or batched report) was accepted. */
  completed: number;
  /** Claims (or batched claim entries) that returned a job. */
  claimed: number;
  nullClaims: number;
  requests: number;
  errors: number;
  errorSamples: string[];
  /** Jobs completed and errors seen during the warm-up; neither is part of the figures above. */
  warmupCompleted?: number;
  warmupErrors?: number;
  /** The loops stopped at the deadline rather than on an empty queue (or their claim quota). */
  timedOut: boolean;
  /** Wall-clock times (util.now()) of the first claim sent and the last completion answered. */
  firstClaimAt: number | null;
  lastCompleteAt: number | null;
  /** Round trip of each claim that returned a job (spec, dag), or of each batched request (batch). */
  latencies: number[];
  /** batch: jobs handed out per request, to see how full the batches were. */
  claimsPerRequest?: number[];
}

/**
 * `go.deadlineAt`: wall-clock time (util.now()) after which a loop starts no new job, the time budget
 * of the measurement. Requests still unanswered 30 s later are aborted, so a stuck server cannot hang the bench.
 */
export type ToChild = { type: 'start'; config: LoadgenConfig } | { type: 'go'; deadlineAt: number } | { type: 'stop' };

export type FromChild =
  | { type: 'ready' }
  | { type: 'events'; events: DagEvent[] }
  | { type: 'result'; result: LoadgenResult }
  | { type: 'fatal'; message: string };
