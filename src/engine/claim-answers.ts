import type { ClaimResult } from '../protocol/wire.js';
import type { Claimed } from '../store/store.js';
import type { Artifacts } from './artifacts.js';
import type { LeaseCalls } from './lease-calls.js';
import type { Secrets } from './secrets.js';
import type { Tracing } from './tracing.js';
import type { Triggers } from './triggers.js';
import { claimResult } from './views.js';

export interface ClaimAnswersContext {
  secrets: Secrets;
  /** Null without tracing (the default): nothing is asked then. */
  tracing: () => Tracing | null;
  leases: LeaseCalls;
  artifacts: Artifacts;
  triggers: Triggers;
  /** Puts the jobs of answers nobody will get back in the queue. */
  release(results: readonly ClaimResult[]): Promise<void>;
}

/**
 * What a claim answers for the jobs the store granted (docs/api.md "Claiming"): each job with its
 * secrets opened into its env (README "Secrets"), its TRACEPARENT (README "Traces (OpenTelemetry)"),
 * its artifact downloads (README "Artifacts") and its run's event (README "Triggers and notifications").
 * A job whose secrets cannot be opened is failed instead of answered.
 */
export class ClaimAnswers {
  constructor(private readonly ctx: ClaimAnswersContext) {}

  async answer(claimed: readonly Claimed[], tokenName: string | null): Promise<ClaimResult[]> {
    const { secrets: seal, leases, artifacts, triggers } = this.ctx;
    // A claim of jobs that name no secret (the common case) takes no extra step (README "Secrets").
    const secrets = seal.noneNamed(claimed) ? null : await seal.forClaims(claimed.map((c) => ({ leaseId: c.lease.lease_id, job: c.job })));
    const tracing = this.ctx.tracing();
    const traces = tracing ? new Map(zip(claimed.map((c) => c.lease.lease_id), await tracing.traceparents(claimed.map((c) => c.job)))) : null;
    const results = secrets
      ? claimed.filter((c) => !secrets.failed.has(c.lease.lease_id)).map((c) => claimResult(c, secrets.opened.get(c.lease.lease_id), traces?.get(c.lease.lease_id)))
      : claimed.map((c) => claimResult(c, undefined, traces?.get(c.lease.lease_id)));
    if (secrets) await leases.failUnopened(secrets.failed, tokenName);
    try {
      await artifacts.addToClaims(results, claimed.map((c) => c.job.artifact_spec));
      await triggers.addToClaims(results);
    } catch (err) {
      // Nobody will run a claim that cannot be answered: hand the leases back rather than let them run out.
      await this.ctx.release(results).catch(() => {});
      throw err;
    }
    return results;
  }
}

function zip<A, B>(a: readonly A[], b: readonly B[]): Array<[A, B]> {
  return a.map((x, i) => [x, b[i]!]);
}
