import { READ_QUERIES } from './read-queries.js';
import { RUN_QUERIES } from './run-queries.js';
import { CLAIM_QUERIES } from './claim-queries.js';
import { LEASE_QUERIES } from './lease-queries.js';
import { CONDITION_QUERIES } from './condition-queries.js';
import { GROUP_QUERIES } from './group-queries.js';
import { ARTIFACT_QUERIES } from './artifact-queries.js';
import { RETENTION_QUERIES } from './retention-queries.js';
import { SECRET_QUERIES } from './secret-queries.js';
import { APPROVAL_QUERIES } from './approval-queries.js';
import { JOB_CONCURRENCY_QUERIES } from './job-concurrency-queries.js';
import { TRIGGER_QUERIES } from './trigger-queries.js';
import { NOTIFICATION_QUERIES } from './notification-queries.js';
import { RUN_END_QUERIES } from './run-end-queries.js';
import { CALL_QUERIES } from './call-queries.js';

/**
 * Every SQL statement of the PostgreSQL store, by name, gathered from the *-queries.ts files beside
 * this one, one per part of the store (docs/architecture.md "The two stores side by side"). The store
 * runs exactly these strings (the index-plan tests EXPLAIN the same ones; `claim` runs
 * `claimCandidates` inside it, verbatim), always with bind parameters, listed above each statement. Times are epoch milliseconds; JSON columns are
 * TEXT holding JSON.stringify output (see migrations.ts). A parameter cast to json takes a JavaScript
 * value, which the driver encodes.
 *
 * Concurrency (READ COMMITTED, no global lock): every write is guarded by the state it expects, and
 * rows are locked in one order: leases, then jobs by ascending row_id, then runs; the workers row last,
 * or in a statement of its own (a cancel's fence is the one reasoned exception, see cancelRun). An
 * UPDATE re-evaluates its WHERE and SET against the newest committed version of a row it had to wait
 * for, so counters decremented with `UPDATE … RETURNING` serialize on their row and exactly one caller
 * sees them reach zero. A plain read in the same statement does not: it keeps the statement's snapshot,
 * which is why some steps are statements of their own (latestRunOf), and why completeJob carries
 * upstream outputs on the rows it locks.
 */
export const QUERIES = {
  ...READ_QUERIES,
  ...RUN_QUERIES,
  ...CLAIM_QUERIES,
  ...LEASE_QUERIES,
  ...CONDITION_QUERIES,
  ...GROUP_QUERIES,
  ...ARTIFACT_QUERIES,
  ...RETENTION_QUERIES,
  ...SECRET_QUERIES,
  ...APPROVAL_QUERIES,
  ...JOB_CONCURRENCY_QUERIES,
  ...TRIGGER_QUERIES,
  ...NOTIFICATION_QUERIES,
  ...RUN_END_QUERIES,
  ...CALL_QUERIES,
} as const;

export type QueryName = keyof typeof QUERIES;
