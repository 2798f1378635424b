/**
 * Serves calls that arrive together with one statement (docs/performance.md "PostgreSQL"): claims
 * with the same label keys, and completes. Each statement is its own transaction with its own commit,
 * so under load the database spends most of a job on per-statement work (a round trip, an executor
 * start, a WAL flush at commit) rather than on the rows; one statement for n callers pays that once.
 *
 * The gathering is natural batching, as graphile-worker and pg-boss do it: a call waits only while
 * `maxInFlight` statements of its kind are already out, or until the end of the current turn of the
 * event loop (setImmediate), whichever is later. A lone call therefore goes out at once (a turn later),
 * and the busier the database, the more each statement serves. Every caller gets its own answer; a
 * statement that fails fails each of the calls it carried.
 */
export interface CoalesceOptions<Req> {
  /** Statements of one kind (one key) out at the same time. */
  maxInFlight: number;
  /** How much one statement may carry, by the weight of its calls (say, jobs asked for). */
  maxWeight: number;
  weight: (req: Req) => number;
}

interface Waiting<Req, Res> {
  req: Req;
  resolve: (res: Res) => void;
  reject: (err: unknown) => void;
}

interface Lane<Req, Res> {
  queue: Array<Waiting<Req, Res>>;
  inFlight: number;
  scheduled: boolean;
  /** Settles as each statement out now answers. */
  out: Set<Promise<unknown>>;
}

export class Coalescer<Req, Res> {
  private readonly lanes = new Map<string, Lane<Req, Res>>();

  /**
   * `serve` answers a batch in order, one answer per call; it is given calls of one key only. An
   * answer that is an Error rejects that call alone.
   */
  constructor(
    private readonly serve: (batch: Req[]) => Promise<Array<Res | Error>>,
    private readonly opts: CoalesceOptions<Req>,
  ) {}

  /** Whether calls of `key` wait for a statement to take them (the next one of the key will). */
  queued(key: string): boolean {
    return (this.lanes.get(key)?.queue.length ?? 0) > 0;
  }

  /** Resolves once every statement of `key` out now has answered, however it did; at once if none is. */
  async drained(key: string): Promise<void> {
    const out = this.lanes.get(key)?.out;
    if (out && out.size > 0) await Promise.allSettled([...out]);
  }

  submit(key: string, req: Req): Promise<Res> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { queue: [], inFlight: 0, scheduled: false, out: new Set() };
      this.lanes.set(key, lane);
    }
    const promise = new Promise<Res>((resolve, reject) => lane.queue.push({ req, resolve, reject }));
    this.schedule(key, lane);
    return promise;
  }

  private schedule(key: string, lane: Lane<Req, Res>): void {
    if (lane.scheduled || lane.inFlight >= this.opts.maxInFlight || lane.queue.length === 0) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      this.flush(key, lane);
    });
  }

  private flush(key: string, lane: Lane<Req, Res>): void {
    if (lane.inFlight >= this.opts.maxInFlight || lane.queue.length === 0) return;
    const batch: Array<Waiting<Req, Res>> = [];
    let weight = 0;
    while (lane.queue.length > 0) {
      const w = this.opts.weight(lane.queue[0]!.req);
      // The first call always goes, however heavy: a single call must never wait for room.
      if (batch.length > 0 && weight + w > this.opts.maxWeight) break;
      batch.push(lane.queue.shift()!);
      weight += w;
    }
    lane.inFlight++;
    const settle = (answers: Array<Res | Error> | null, err?: unknown) => {
      lane.inFlight--;
      batch.forEach((w, i) => {
        const a = answers?.[i];
        if (answers === null) w.reject(err);
        else if (a instanceof Error) w.reject(a);
        else if (a === undefined) w.reject(new Error('coalesced statement gave no answer for a call'));
        else w.resolve(a);
      });
      if (lane.queue.length === 0 && lane.inFlight === 0) this.lanes.delete(key);
      else this.schedule(key, lane);
    };
    let run: Promise<Array<Res | Error>>;
    try {
      run = this.serve(batch.map((w) => w.req));
    } catch (err) {
      run = Promise.reject(err);
    }
    const answered = run.then(
      (answers) => settle(answers),
      (err: unknown) => settle(null, err),
    );
    lane.out.add(answered);
    void answered.finally(() => lane.out.delete(answered));
  }
}
