import { settledLeaseCode, WeftError } from '../protocol/errors.js';
import type { LeaseRefusal } from '../store/store.js';

/**
 * The answer to a refused lease call (docs/api.md "Lease calls"): a 409, or 403 `lease_not_yours` for
 * a call with another token than the claim's. `caller` names the call's token.
 */
export function leaseRefusalError(leaseId: string, r: LeaseRefusal, caller: string | null = null): WeftError {
  switch (r.kind) {
    case 'not_yours':
      // The holder's name is not told: a token learns nothing about the others from its refusals.
      return new WeftError(
        'lease_not_yours',
        `lease ${leaseId} was claimed with another token; token '${caller ?? '?'}' cannot use it (only the token that claimed a lease may heartbeat, log, complete or fail it)`,
      );
    case 'not_found':
      return new WeftError('lease_not_found', `lease ${leaseId} does not exist (it may never have been granted)`);
    case 'settled':
      return new WeftError(settledLeaseCode(r.state), `lease ${leaseId} is no longer valid: it was already ${r.state.replace('_', ' ')}`);
    case 'expired':
      return new WeftError(
        'lease_expired',
        `lease ${leaseId} expired at ${new Date(r.lease.expires_at_ms).toISOString()}; the job was re-queued or failed`,
      );
    case 'timed_out':
      return new WeftError(
        'lease_timed_out',
        `job "${r.job.job_id}" exceeded its timeout of ${r.job.timeout_secs}s; lease ${leaseId} is void`,
      );
  }
}

/** Refusals that changed a job on the way (the call itself found the lease out of time). */
export function refusalChanges(r: LeaseRefusal) {
  return r.kind === 'expired' || r.kind === 'timed_out' ? r.changes : [];
}
