import { settledLeaseCode, WeftError } from '../protocol/errors.js';
import type { LeaseRefusal } from '../store/store.js';

/** The 409 a refused lease call answers with (docs/api.md "Lease calls"). */
export function leaseRefusalError(leaseId: string, r: LeaseRefusal): WeftError {
  switch (r.kind) {
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
