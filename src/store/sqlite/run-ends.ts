import type { RunEnd, RunEndConsumer } from '../run-end-types.js';
import type { Conn } from './connection.js';

/**
 * The run-end outbox (docs/architecture.md "Run ends"), named as in the PostgreSQL store's
 * run-ends.ts. The entries are written by the triggers on `runs` in the transaction that ends a run.
 */
export function pendingRunEnds(c: Conn, consumer: RunEndConsumer, limit: number): RunEnd[] {
  return (c.q('pendingRunEnds').all(consumer, limit) as RunEnd[]).map(toRunEnd);
}

export function finishRunEnds(c: Conn, consumer: RunEndConsumer, seqs: readonly number[]): void {
  if (seqs.length > 0) c.q('finishRunEnds').run(consumer, JSON.stringify(seqs));
}

function toRunEnd(r: RunEnd): RunEnd {
  return { seq: Number(r.seq), workflow_id: r.workflow_id, run_number: Number(r.run_number), state: r.state, ended_at_ms: Number(r.ended_at_ms) };
}
