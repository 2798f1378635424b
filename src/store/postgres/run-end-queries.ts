/**
 * The run-end outbox (run-ends.ts; docs/architecture.md "Run ends"). Its rows are written by the
 * trigger of schema version 20, never by a statement here. Part of QUERIES (queries.ts).
 */
export const RUN_END_QUERIES = {
  /** Through run_ends_pending. $1 consumer, $2 limit */
  pendingRunEnds: `SELECT seq, workflow_id, run_number, state, ended_at_ms FROM run_ends
    WHERE consumer = $1 ORDER BY seq LIMIT $2::int`,
  /** $1 consumer, $2 seqs */
  finishRunEnds: `DELETE FROM run_ends WHERE consumer = $1 AND seq = ANY($2::bigint[])`,
} as const;
