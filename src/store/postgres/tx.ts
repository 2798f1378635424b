import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { StoreUnavailableError } from '../unavailable.js';

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

/** postgres.js's own codes for a connection that closed under a statement, was torn down, or never opened. */
const DRIVER_CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT']);

/** The error means the connection it came from is gone: nothing more may be sent on it. */
function connectionGone(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) {
    // FATAL and PANIC end the session; the server closes the connection right after sending them.
    return err.severity === 'FATAL' || err.severity === 'PANIC' || err.code.startsWith('08');
  }
  if (!err || typeof err !== 'object') return false;
  const { code, syscall } = err as { code?: unknown; syscall?: unknown };
  if (typeof code === 'string' && (DRIVER_CONNECTION_CODES.has(code) || code.startsWith('ERR_STREAM_') || code.startsWith('ERR_SOCKET_'))) {
    return true;
  }
  // A socket error: ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, ENOTFOUND, …
  return typeof syscall === 'string';
}

/**
 * Answers that say "not now" rather than "wrong": admin or crash shutdown and "starting up" (57P0x),
 * a statement cancelled by statement_timeout (57014), a standby answering during a failover (25006),
 * and class 53, insufficient resources (too many connections, out of memory, disk full).
 */
const NOT_NOW = new Set(['57P01', '57P02', '57P03', '57014', '25006']);

function unavailable(err: unknown): boolean {
  if (connectionGone(err)) return true;
  return err instanceof postgres.PostgresError && (NOT_NOW.has(err.code) || err.code.startsWith('53'));
}

function reason(err: unknown): string {
  if (err instanceof postgres.PostgresError) return `${err.message} (SQLSTATE ${err.code})`;
  const code = (err as { code?: unknown } | null)?.code;
  // The driver's own messages carry the host and port, which an API client has no use for.
  return typeof code === 'string' ? `no connection (${code})` : String((err as Error | null)?.message ?? err);
}

/** Store failures that only mean "the database is not there right now" become StoreUnavailableError. */
function translated(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !unavailable(err)) return err;
  return new StoreUnavailableError(`database unavailable: ${reason(err)}`, { cause: err });
}

/**
 * The store's connections. Single statements go to a postgres.js pool, which pipelines them over its
 * connections, reconnects on its own, and fails a statement cleanly when its connection breaks. A unit
 * of work that needs one connection to itself (a transaction, a pipeline) takes a session client: a
 * postgres.js client with a pool of one connection, held by one unit of work at a time.
 *
 * postgres.js 3.4 is unsafe once a connection it handed out with `reserve()` breaks, so sessions keep
 * to what it does safely:
 * - A reserved handle writes to its connection whatever state that is in. Once the server side is
 *   gone (a restart, a terminated backend), a statement sent on it (a ROLLBACK, typically) makes the
 *   driver's deferred write dereference the closed socket inside a setImmediate callback: a TypeError
 *   no caller can catch, which ends the process. `release()` would put the closed connection into the
 *   open queue, where the next query meets the same fate. So a session sends nothing more once its
 *   connection failed or closed, and does not release it (the driver took it back when it closed).
 * - A reserve request that has to wait for a connection attempt is, when the attempt fails, rejected
 *   but left in the queue, and the next connection that opens is handed to it and lost; when a closed
 *   connection retries for it, it is dropped unanswered. So a client is reserved only while its
 *   connection is known to be open and idle, where `reserve()` answers at once; otherwise a plain
 *   statement (which the driver connects, retries and fails cleanly) opens it first.
 * Ending a client whose connection is between attempts can leave a connection open behind it, so a
 * client is kept for the life of the store, never replaced.
 */
interface Pool {
  sessions: SessionClients;
  /** The longest one operation may take in all (waiting for a connection, retries, statements); 0 for no limit. */
  operationLimitMs: number;
  /** Hears how long each write took once it committed (Store.onCommit). */
  onCommit?: (seconds: number) => void;
}

const pools = new WeakMap<Sql, Pool>();

export type PoolOptions = postgres.Options<Record<string, postgres.PostgresType>>;

/**
 * Opens the store's connections (none is made before the first statement): `max` in all, half of them
 * for single statements and half for sessions. Returns the handle every operation here takes.
 */
export function openPool(url: string, options: PoolOptions, max: number, operationLimitMs: number): Sql {
  const sessionClients = Math.max(1, Math.floor(max / 2));
  const sql = postgres(url, { ...options, max: Math.max(1, max - sessionClients) }) as unknown as Sql;
  const sessions = new SessionClients(sessionClients, (onClose) =>
    postgres(url, {
      ...options,
      max: 1,
      // A connection retired for its age would end a transaction between two of its statements.
      max_lifetime: 0,
      onclose: onClose,
    }) as unknown as Sql,
  );
  pools.set(sql, { sessions, operationLimitMs });
  return sql;
}

/** Closes every connection of the store, waiting up to `timeoutSecs` for statements in flight. */
export async function endPool(sql: Sql, timeoutSecs: number): Promise<void> {
  await Promise.all([sql.end({ timeout: timeoutSecs }), pools.get(sql)?.sessions.end(timeoutSecs)]);
}

/** Store.onCommit: every write transaction, pipeline and write statement reports its time from here on. */
export function observeCommits(sql: Sql, observer: (seconds: number) => void): void {
  poolOf(sql).onCommit = observer;
}

/** Reports a write that has committed, timed from its first statement sent (README "Metrics"). */
function committed(sql: Sql, startedMs: number): void {
  pools.get(sql)?.onCommit?.((performance.now() - startedMs) / 1000);
}

function poolOf(sql: Sql): Pool {
  const pool = pools.get(sql);
  if (!pool) throw new Error('this handle was not opened with openPool');
  return pool;
}

class Deadline {
  private readonly at: number;
  constructor(readonly ms: number) {
    this.at = ms > 0 ? Date.now() + ms : Infinity;
  }
  get passed(): boolean {
    return Date.now() >= this.at;
  }
  error(): StoreUnavailableError {
    return new StoreUnavailableError(`database unavailable: no answer within ${this.ms} ms`);
  }
}

/**
 * Runs one store operation: failures that mean the database is away are answered as
 * StoreUnavailableError, and so is an operation still unfinished at its deadline, so that a request
 * never waits on a database that cannot answer (a network partition leaves a socket open for minutes).
 * An operation left behind at its deadline finishes or fails on its own; it starts nothing new.
 */
function operation<T>(sql: Sql, work: (deadline: Deadline) => Promise<T>, bounded = true): Promise<T> {
  const deadline = new Deadline(bounded ? poolOf(sql).operationLimitMs : 0);
  const done = work(deadline).catch((err: unknown) => {
    throw translated(err);
  });
  if (deadline.ms <= 0) return done;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(deadline.error()), deadline.ms);
    done.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * Sends a statement now (so several go out back to back, in one round trip) and returns its rows.
 * Prepared once per connection: afterwards each run is a single round trip with no re-parse.
 */
function send(conn: Sql, text: string, params: Params = []): Promise<Row[]> {
  return conn.unsafe(text, params as never[], { prepare: true }).execute() as unknown as Promise<Row[]>;
}

async function withRetry<T>(deadline: Deadline, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || !retryable(err) || deadline.passed) throw err;
      // Whatever collided is usually one short transaction away from done.
      await sleep(2 ** attempt);
    }
  }
}

interface SessionClient {
  sql: Sql;
  /** How many times its connection has closed, counted by the driver's close hook. */
  closes: number;
  /** `closes` when its connection was last left open and idle; -1 when that is not known. */
  openAt: number;
}

type Reserved = Sql & { release(): void };

/** The session clients, made on first need, each held by one unit of work at a time. */
class SessionClients {
  private readonly all: SessionClient[] = [];
  private readonly idle: SessionClient[] = [];
  private readonly waiting: Array<{ resolve: (c: SessionClient) => void; reject: (err: Error) => void }> = [];
  private ended = false;

  constructor(
    private readonly size: number,
    private readonly open: (onClose: () => void) => Sql,
  ) {}

  acquire(): Promise<SessionClient> {
    if (this.ended) return Promise.reject(closing());
    const ready = this.idle.pop();
    if (ready) return Promise.resolve(ready);
    if (this.all.length < this.size) {
      const client: SessionClient = { sql: undefined as unknown as Sql, closes: 0, openAt: -1 };
      client.sql = this.open(() => client.closes++);
      this.all.push(client);
      return Promise.resolve(client);
    }
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Back from a unit of work; `open`: its connection is known to be open and idle. */
  release(client: SessionClient, open: boolean): void {
    client.openAt = open ? client.closes : -1;
    const next = this.waiting.shift();
    if (next) next.resolve(client);
    else this.idle.push(client);
  }

  async end(timeoutSecs: number): Promise<void> {
    this.ended = true;
    for (const w of this.waiting.splice(0)) w.reject(closing());
    await Promise.all(this.all.map((c) => c.sql.end({ timeout: timeoutSecs })));
  }
}

function closing(): StoreUnavailableError {
  return new StoreUnavailableError('database unavailable: the store is closing');
}

/** How long a session whose connection failed waits for the driver to report it closed. */
const CLOSE_GRACE_MS = 1000;

/** One unit of work on the one connection of a session client. */
class Session {
  private broken = false;
  private readonly closesAtStart: number;

  private constructor(
    private readonly client: SessionClient,
    private readonly conn: Reserved,
    private readonly clients: SessionClients,
  ) {
    this.closesAtStart = client.closes;
  }

  static async open(sql: Sql): Promise<Session> {
    const { sessions } = poolOf(sql);
    const client = await sessions.acquire();
    try {
      if (client.openAt !== client.closes) await openConnection(client);
      const conn = (await client.sql.reserve()) as unknown as Reserved;
      return new Session(client, conn, sessions);
    } catch (err) {
      sessions.release(client, false);
      throw err;
    }
  }

  /** Its connection has not failed or closed so far. */
  get usable(): boolean {
    return !this.broken && this.client.closes === this.closesAtStart;
  }

  send(text: string, params: Params = []): Promise<Row[]> {
    if (!this.usable) return Promise.reject(new StoreUnavailableError('database unavailable: the connection was lost'));
    const sent = send(this.conn, text, params);
    // Registered before the caller's own reaction, so the session knows before the caller decides.
    sent.catch((err: unknown) => {
      if (connectionGone(err)) this.broken = true;
    });
    return sent;
  }

  release(): void {
    if (this.usable) {
      this.conn.release();
      this.clients.release(this.client, true);
      return;
    }
    // The driver takes a closed connection back itself. One that failed is closing: the client is
    // kept aside until that is reported, and should it never be (the failure was not the
    // connection's after all), its connection is alive and handed back as usual.
    const started = Date.now();
    const check = () => {
      if (this.client.closes !== this.closesAtStart) return this.clients.release(this.client, false);
      if (Date.now() - started < CLOSE_GRACE_MS) return void setTimeout(check, 50).unref();
      this.conn.release();
      this.clients.release(this.client, false);
    };
    check();
  }
}

/**
 * Opens (or confirms) a client's connection with a plain statement. A connection that broke while a
 * server error was on its way answers the first statement after reconnecting with that stale error,
 * so a server error earns a second try; a connection that could not be made does not.
 */
async function openConnection(client: SessionClient): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await send(client.sql, 'SELECT 1');
      return;
    } catch (err) {
      if (attempt >= 2 || !(err instanceof postgres.PostgresError)) throw err;
    }
  }
}

/** One statement in its own (implicit) transaction. */
export function statement(sql: Sql, text: string, params: Params = []): Promise<Row[]> {
  return operation(sql, (deadline) => withRetry(deadline, () => send(sql, text, params)));
}

/** `statement` for one that writes: its time to commit is reported (Store.onCommit). */
export function writeStatement(sql: Sql, text: string, params: Params = []): Promise<Row[]> {
  return operation(sql, (deadline) =>
    withRetry(deadline, async () => {
      const started = performance.now();
      const rows = await send(sql, text, params);
      committed(sql, started);
      return rows;
    }),
  );
}

/**
 * Statements sent back to back on one connection, in one round trip, each its own transaction, each
 * committed before the next starts: a later one sees what an earlier one did.
 */
export function pipeline(sql: Sql, stmts: ReadonlyArray<readonly [text: string, params: Params]>, trailing: readonly Trailing[] = []): Promise<Row[][]> {
  let trailed = false;
  const done = operation(sql, (deadline) =>
    withRetry(deadline, async () => {
      const session = await Session.open(sql);
      try {
        // The caller has had its answer (unavailable): work started now would be a change nobody awaits.
        if (deadline.passed) throw deadline.error();
        const started = performance.now();
        const sent = stmts.map(([text, params]) => session.send(text, params));
        const behind: Array<Promise<void>> = [];
        if (!trailed) {
          trailed = true;
          for (const t of trailing) {
            behind.push(
              session.send(t.text, t.params).then(
                (rows) => t.settle(rows),
                (err: unknown) => t.settle(err instanceof Error ? err : new Error(String(err))),
              ),
            );
          }
        }
        // The session is held until the statements behind have answered too: its connection is
        // handed to the next unit of work only once nothing of this one is left on it.
        const [results] = await Promise.allSettled([Promise.all(sent), Promise.all(behind)]);
        if (results.status === 'rejected') throw results.reason;
        committed(sql, started);
        return results.value;
      } finally {
        session.release();
      }
    }),
  );
  // Never sent (no session could be had): each is told so.
  return done.finally(() => {
    if (trailed) return;
    trailed = true;
    for (const t of trailing) t.settle(new Error('not sent: the statements it was to follow failed first'));
  });
}

/**
 * A statement sent right behind a pipeline's own, in the same round trip: a transaction of its own
 * that sees what they committed. It is sent once, with the pipeline's first attempt, and settles on
 * its own (`settle` gets its rows or its error); the pipeline's result and retries ignore it.
 */
export interface Trailing {
  text: string;
  params: Params;
  settle(result: Row[] | Error): void;
}

export interface TxOptions {
  /** What follows BEGIN, e.g. `ISOLATION LEVEL REPEATABLE READ READ ONLY`. Default: READ COMMITTED. */
  mode?: string;
  /** Run again on a retryable failure (see RETRYABLE). Default true; reads that call back say false. */
  retry?: boolean;
  /**
   * Give up at the store's operation deadline (StoreUnavailableError). Default true; schema
   * migrations, which may rightly take long, say false.
   */
  bounded?: boolean;
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
  return operation(
    sql,
    (deadline) => (opts.retry === false ? once(sql, body, opts, deadline) : withRetry(deadline, () => once(sql, body, opts, deadline))),
    opts.bounded !== false,
  );
}

async function once<T>(sql: Sql, body: (q: Exec) => Promise<T>, opts: TxOptions, deadline: Deadline): Promise<T> {
  const session = await Session.open(sql);
  try {
    // The caller has had its answer (unavailable): work started now would be a change nobody awaits.
    if (deadline.passed) throw deadline.error();
    const started = performance.now();
    const begin = session.send(opts.mode ? `BEGIN ${opts.mode}` : 'BEGIN');
    begin.catch(() => {});
    let result: T;
    try {
      result = await body((text, params) => session.send(text, params));
      await begin;
      const commit = session.send('COMMIT');
      const after = opts.after ? session.send(opts.after.text, opts.after.params) : undefined;
      after?.catch(() => {});
      await commit;
      if (!opts.mode?.includes('READ ONLY')) committed(sql, started);
      if (after) await after.catch(() => undefined);
    } catch (err) {
      // On a connection that failed or closed, the server has rolled back already.
      if (session.usable) await session.send('ROLLBACK').catch(() => {});
      throw err;
    }
    return result;
  } finally {
    session.release();
  }
}
