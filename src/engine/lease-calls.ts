import type { Logger } from 'pino';
import { storableOutputs, storableText } from '../domain/text.js';
import type { Outputs } from '../domain/model.js';
import { WeftError } from '../protocol/errors.js';
import type { CompleteResponse, FailResponse, HeartbeatResponse, IncomingLogChunk } from '../protocol/wire.js';
import type { JobChange, LeaseRefusal, Store } from '../store/store.js';
import type { AttemptEvent } from './engine-options.js';
import { leaseRefusalError, refusalChanges } from './lease-errors.js';
import type { QueuedRuns } from './queued-runs.js';
import { leaseView } from './views.js';
import { maskChunks, maskOutputs } from './secret-masking.js';
import { maskText } from '../domain/masking.js';
import type { Secrets } from './secrets.js';

/** What the lease calls need of the engine: its store, clock and log, and where changes are told. */
export interface LeaseCallsContext {
  readonly store: Store;
  readonly now: () => number;
  readonly log: Logger;
  readonly queued: QueuedRuns;
  /** What to hide in what a lease's worker sends back (README "Secrets"). */
  readonly secrets: Pick<Secrets, 'masksOf' | 'knownMasks' | 'forget'>;
  /** MAX_LOG_BYTES_PER_ATTEMPT (README "Limits"). */
  readonly maxLogBytesPerAttempt: number;
  /** Durable changes, told to listeners, waiting claims and other servers. */
  announce(changes: readonly JobChange[]): void;
  /** An attempt ended here (the `attempt` event). */
  attempt(event: AttemptEvent): void;
  /** Log chunks of this job were stored (followers here and on other servers read on). */
  logsStored(job: { workflow_id: string; run_number: number; job_id: string }): void;
  /** A retry becomes claimable at this time (waiting claims here and on other servers wake then). */
  retryAt(atMs: number): void;
}

/**
 * The calls a worker makes on a lease it holds (docs/api.md "Worker protocol"): heartbeat, complete,
 * fail and logs. Each takes `holder`, the name of the token the call came with (null: tokens are
 * off): a lease claimed with another token answers 403 lease_not_yours and nothing changes.
 */
export class LeaseCalls {
  constructor(private readonly ctx: LeaseCallsContext) {}

  /** Renews the lease by its own ttl from now; 409 once it has expired, been settled or cancelled. */
  async heartbeat(leaseId: string, holder: string | null = null): Promise<HeartbeatResponse> {
    const outcome = await this.ctx.store.heartbeat(leaseId, this.ctx.now(), holder);
    switch (outcome.kind) {
      case 'renewed':
        return { ...leaseView(outcome.lease), cancelled: false };
      case 'cancelled':
        throw new WeftError('job_cancelled', `the job of lease ${leaseId} was cancelled; stop working on it`);
      default:
        throw this.refused(leaseId, outcome, holder);
    }
  }

  /** Marks the job a success, stores its outputs and enqueues what it unblocks, all in one step. */
  async complete(leaseId: string, outputs: Outputs, holder: string | null = null): Promise<Omit<CompleteResponse, 'ok'>> {
    // No await for a lease claimed here: a report pays nothing for secrets it has none of.
    const forms = this.ctx.secrets.knownMasks(leaseId) ?? (await this.ctx.secrets.masksOf(leaseId));
    const outcome = await this.ctx.store.complete(leaseId, storableOutputs(forms.length > 0 ? maskOutputs(outputs, forms) : outputs), this.ctx.now(), holder);
    if (outcome.kind !== 'not_yours') this.ctx.secrets.forget(leaseId);
    switch (outcome.kind) {
      case 'completed':
        this.ctx.announce(outcome.changes);
        this.ctx.attempt({ kind: 'completed', job: outcome.job });
        await this.ctx.queued.after(outcome.changes);
        return { status: 'success', enqueued: outcome.enqueued };
      case 'cancelled':
        // A cancel came first: the report is accepted and changes nothing (README "How a run works").
        return { status: outcome.job.status, enqueued: [] };
      default:
        throw this.refused(leaseId, outcome, holder);
    }
  }

  /** Records a failure: re-queued with backoff while the retry budget allows, otherwise failed. */
  async fail(leaseId: string, error: string, retryable: boolean, holder: string | null = null): Promise<Omit<FailResponse, 'ok'>> {
    const forms = this.ctx.secrets.knownMasks(leaseId) ?? (await this.ctx.secrets.masksOf(leaseId));
    const now = this.ctx.now();
    const outcome = await this.ctx.store.fail(leaseId, storableText(forms.length > 0 ? maskText(error, forms) : error), retryable, now, holder);
    if (outcome.kind !== 'not_yours') this.ctx.secrets.forget(leaseId);
    switch (outcome.kind) {
      case 'failed': {
        this.ctx.announce(outcome.changes);
        this.ctx.attempt({ kind: 'failed', job: outcome.job, started_at_ms: outcome.started_at_ms, at_ms: now, ran: outcome.ran });
        await this.ctx.queued.after(outcome.changes);
        const { job } = outcome;
        this.ctx.log.info(
          { workflow_id: job.workflow_id, job_id: job.job_id, attempt: job.attempt, status: job.status, error: job.error },
          job.status === 'queued' ? 'job re-queued' : 'job failed',
        );
        if (job.status === 'queued' && job.delayed_until_ms > 0) this.ctx.retryAt(job.delayed_until_ms);
        return { status: job.status, attempt: job.attempt, delayed_until_ms: job.status === 'queued' ? job.delayed_until_ms : 0 };
      }
      case 'cancelled':
        return { status: outcome.job.status, attempt: outcome.job.attempt, delayed_until_ms: 0 };
      default:
        throw this.refused(leaseId, outcome, holder);
    }
  }

  /**
   * Claimed jobs whose secrets are gone or do not open (README "Secrets"), by lease id with the
   * reason: each fails at once, for good, with the reason in its error, and is never handed out.
   */
  async failUnopened(failed: ReadonlyMap<string, string>, holder: string | null): Promise<void> {
    for (const [leaseId, reason] of failed) {
      await this.fail(leaseId, `weft could not give the job its secrets: ${reason}`, false, holder).catch((err: unknown) => {
        this.ctx.log.warn({ lease_id: leaseId, err }, 'a job whose secrets did not open could not be failed; its lease will run out');
      });
    }
  }

  /**
   * Stores log chunks of the lease's attempt; a re-sent sequence is kept once. Past the attempt's
   * MAX_LOG_BYTES_PER_ATTEMPT the answer says `truncated` (src/domain/log-budget.ts).
   */
  async pushLogs(leaseId: string, chunks: IncomingLogChunk[], holder: string | null = null): Promise<{ accepted: number; truncated?: true }> {
    const forms = this.ctx.secrets.knownMasks(leaseId) ?? (await this.ctx.secrets.masksOf(leaseId));
    const given = forms.length > 0 ? await maskChunks(this.ctx.store, leaseId, chunks, forms) : chunks;
    const clean = given.map((c) => (c.data.includes('\u0000') ? { ...c, data: storableText(c.data) } : c));
    const outcome = await this.ctx.store.pushLogs(leaseId, clean, this.ctx.now(), holder, this.ctx.maxLogBytesPerAttempt);
    switch (outcome.kind) {
      case 'stored':
        const change = { workflow_id: outcome.lease.workflow_id, run_number: outcome.lease.run_number, job_id: outcome.lease.job_id };
        this.ctx.logsStored(change);
        // Absent rather than false, so that the answer is what it always was until the cap is reached.
        return outcome.truncated ? { accepted: outcome.accepted, truncated: true } : { accepted: outcome.accepted };
      case 'mismatch': {
        const owner = outcome.field === 'workflow_id' ? `workflow "${outcome.lease.workflow_id}"` : `job "${outcome.lease.job_id}"`;
        throw new WeftError(
          'chunk_mismatch',
          `chunks[${outcome.index}].${outcome.field} is "${outcome.value}" but lease ${leaseId} belongs to ${owner}`,
        );
      }
      default:
        throw this.refused(leaseId, outcome, holder);
    }
  }

  /**
   * A lease call refused: what the call itself settled on the way (an expiry, a timeout) is announced
   * and heard as the end of that attempt; the answer is the 409 to throw.
   */
  refused(leaseId: string, outcome: LeaseRefusal, holder: string | null): WeftError {
    this.ctx.announce(refusalChanges(outcome));
    if (outcome.kind === 'expired' && outcome.job && outcome.ran) this.ctx.attempt({ kind: 'expired', job: outcome.job, ran: outcome.ran });
    if (outcome.kind === 'timed_out') this.ctx.attempt({ kind: 'timed_out', job: outcome.job, ran: outcome.ran });
    return leaseRefusalError(leaseId, outcome, holder);
  }
}
