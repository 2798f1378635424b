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
 * Every SQL statement of the SQLite store, by name, gathered from the *-queries.ts files beside this
 * one, one per part of the store, as in the PostgreSQL store (docs/architecture.md "The two stores
 * side by side"). Each is prepared once per connection (see connection.ts). The comment of each statement
 * lists its parameters: `?` ones in order, `@name` ones by name. The index-plan tests EXPLAIN
 * claimCandidates, expiredLeases, timedOutJobs, activeJobCounts and the retention statements as
 * QUERIES holds them.
 *
 * A parameter LIMIT is written `LIMIT +?` (or `LIMIT +@name`), never `LIMIT ?`: SQLite (3.47 on)
 * plans a statement with a bare parameter LIMIT for the value bound, so it compiles the statement
 * again at every run whose binding is new, which made a claim's candidate read three times dearer
 * (docs/performance.md "Fourth round"). The unary plus keeps the value and hides it from the planner;
 * the plans of every such statement are the same either way. test/store/sqlite.test.ts holds QUERIES
 * to it.
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
