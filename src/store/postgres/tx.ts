import { setTimeout } from 'node:timers/promises';
import type postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, unknown>>;
export type Row = Record<string, unknown>;
export type Params = readonly unknown[];

/** Runs one statement of a unit of work and resolves with its rows. */
export type Exec = (text: string, params?: Params) => Promise<Row[]>;

/** Thrown by a transaction body to roll back and run again from the start. */
export class StartOver extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'StartOver';
  }
}

/**
 * serialization_failure and deadlock_detected. Under READ COMMITTED with one lock order everywhere
 * (queries.ts) neither should happen, but a lock taken where nobody looked (a foreign-key check, the
 * narrow gap described at cancelRun, a future statement) would otherwise reach a worker or an API
 * client as an error. Every operation is one transaction that rereads all it decides on, so running it
 * again is safe and turns such a rare collision into a little latency.
 */
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 5;

function retryable(err: unknown): boolean {
  return err instanceof StartOver || RETRYABLE.has((err as { code?: string } | null)?.code ?? '');
}

/**
 * Sends a statement now (so several go out back to back, in one round trip) and returns its rows.
 * Prepared once per connection: afterwards each run is a single round trip with no re-parse.
 */
function send(conn: Sql, text: string, params: Params = []): Promise<Row[]> {
  return conn.unsafe(text, params as never[], { prepare: true }).execute() as unknown as Promise<Row[]>;
}

async function withRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || !retryable(err)) throw err;
      // Whatever collided is usually one short transaction away from done.
      await setTimeout(2 ** attempt);
    }
  }
}

/** One statement in its own (implicit) transaction. */
export function statement(sql: Sql, text: string, params: Params = []): Promise<Row[]> {
  return withRetry(() => send(sql, text, params));
}

/**
 * Statements sent back to back on one connection, in one round trip, each its own transaction, each
 * committed before the next starts: a later one sees what an earlier one did.
 */
export function pipeline(sql: Sql, stmts: ReadonlyArray<readonly [text: string, params: Params]>): Promise<Row[][]> {
  return withRetry(async () => {
    const conn = (await sql.reserve()) as unknown as Sql & { release(): void };
    try {
      const sent = stmts.map(([text, params]) => send(conn, text, params));
      for (const p of sent) p.catch(() => {});
      return await Promise.all(sent);
    } finally {
      conn.release();
    }
  });
}

export interface TxOptions {
  /** What follows BEGIN, e.g. `ISOLATION LEVEL REPEATABLE READ READ ONLY`. Default: READ COMMITTED. */
  mode?: string;
  /** Run again on a retryable failure (see RETRYABLE). Default true; reads that call back say false. */
  retry?: boolean;
  /**
   * A statement sent together with COMMIT, so outside the transaction and in the same round trip: the
   * worker's last-seen time, which is informational and must not hold its row locked for the whole
   * transaction. Its failure is ignored once the transaction has committed.
   */
  after?: { text: string; params: Params };
}

/**
 * Runs `body` as one transaction on one connection and commits it; rolls back if it throws. BEGIN goes
 * out together with the body's first statement, so a transaction costs one round trip more than its
 * statements (the COMMIT), not two. Resolves once COMMIT has been acknowledged: the effect is durable.
 */
export function transaction<T>(
  sql: Sql,
  body: (q: Exec) => Promise<T>,
  opts: TxOptions = {},
): Promise<T> {
  return opts.retry === false ? once(sql, body, opts) : withRetry(() => once(sql, body, opts));
}

async function once<T>(sql: Sql, body: (q: Exec) => Promise<T>, opts: TxOptions): Promise<T> {
  const conn = (await sql.reserve()) as unknown as Sql & { release(): void };
  try {
    const begin = send(conn, opts.mode ? `BEGIN ${opts.mode}` : 'BEGIN');
    begin.catch(() => {});
    let result: T;
    try {
      result = await body((text, params) => send(conn, text, params));
      await begin;
    } catch (err) {
      await send(conn, 'ROLLBACK').catch(() => {});
      throw err;
    }
    const commit = send(conn, 'COMMIT');
    const after = opts.after ? send(conn, opts.after.text, opts.after.params) : undefined;
    after?.catch(() => {});
    await commit;
    if (after) await after.catch(() => undefined);
    return result;
  } finally {
    conn.release();
  }
}
