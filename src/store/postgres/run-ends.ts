import type { RunEnd, RunEndConsumer } from '../run-end-types.js';
import { QUERIES } from './queries.js';
import { statement, writeStatement, type Row, type Sql } from './tx.js';

/**
 * The run-end outbox (docs/architecture.md "Run ends"), named as in the SQLite store's run-ends.ts.
 * The entries are written by the trigger on `runs` in the statement that ends a run.
 */
export async function pendingRunEnds(sql: Sql, consumer: RunEndConsumer, limit: number): Promise<RunEnd[]> {
  return (await statement(sql, QUERIES.pendingRunEnds, [consumer, limit])).map(toRunEnd);
}

export async function finishRunEnds(sql: Sql, consumer: RunEndConsumer, seqs: readonly number[]): Promise<void> {
  if (seqs.length > 0) await writeStatement(sql, QUERIES.finishRunEnds, [consumer, seqs]);
}

function toRunEnd(r: Row): RunEnd {
  return {
    seq: Number(r.seq),
    workflow_id: r.workflow_id as string,
    run_number: Number(r.run_number),
    state: r.state as RunEnd['state'],
    ended_at_ms: Number(r.ended_at_ms),
  };
}
