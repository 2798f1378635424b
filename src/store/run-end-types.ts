/**
 * The run-end outbox (docs/architecture.md "Run ends"): when a run ends, the statement that ends it
 * also records the end once per consumer (a trigger on `runs`, so no path that ends a run can miss
 * it), and each consumer acts on its entries at least once, from any server, after a crash too.
 */

/**
 * Who acts on a run's end: notifications (README "Notifications"), runs that follow runs (`on:
 * workflow_run`), and a called workflow's run handing its end to its caller's job. A new consumer
 * needs a migration that adds it to the trigger.
 */
export const RUN_END_CONSUMERS = ['notify', 'follow', 'call'] as const;
export type RunEndConsumer = (typeof RUN_END_CONSUMERS)[number];

/** One ended run, as one consumer has yet to act on it. */
export interface RunEnd {
  /** Its place in the outbox: entries are answered oldest first, and finished by it. */
  seq: number;
  workflow_id: string;
  run_number: number;
  state: 'success' | 'failed' | 'cancelled';
  ended_at_ms: number;
}

export interface RunEndReads {
  /** Up to `limit` ends `consumer` has not finished, oldest first. */
  pendingRunEnds(consumer: RunEndConsumer, limit: number): Promise<RunEnd[]>;
}

export interface RunEndWrites {
  /** Marks `consumer` done with these entries (others' are kept); finishing one twice changes nothing. */
  finishRunEnds(consumer: RunEndConsumer, seqs: readonly number[]): Promise<void>;
}
