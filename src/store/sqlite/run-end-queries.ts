/**
 * The run-end outbox (run-ends.ts; docs/architecture.md "Run ends"). Its rows are written by the
 * triggers of schema version 20, never by a statement here. Part of QUERIES (queries.ts).
 */
export const RUN_END_QUERIES = {
  /** Through run_ends_pending. ? consumer, ? limit */
  pendingRunEnds: `SELECT seq, workflow_id, run_number, state, ended_at_ms FROM run_ends
    WHERE consumer = ? ORDER BY seq LIMIT +?`,
  /** ? consumer, ? seqs (JSON array) */
  finishRunEnds: `DELETE FROM run_ends WHERE consumer = ? AND seq IN (SELECT value FROM json_each(?))`,
} as const;
