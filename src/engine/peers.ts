import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { JobChange, Store } from '../store/store.js';

/**
 * Events between processes sharing one database (docs/architecture.md "Events between servers"):
 * what one server changed wakes the long-poll claims and live log streams of the others. Changes are
 * gathered for a few milliseconds and sent as one small message, so a busy server sends a couple of
 * hundred messages a second at most, not one per request. A message that would not fit says only
 * "something changed", and a listener that was cut off resyncs: both make every waiting claim and log
 * stream look again.
 */

/** What a server does when another one changed something. */
export interface PeerHandlers {
  jobs(changes: readonly JobChange[]): void;
  logs(change: JobChange): void;
  /** A retry becomes claimable at this time. */
  wakeAt(atMs: number): void;
  /** A run started elsewhere may have brought label sets this server has not seen. */
  labelSets(): void;
  /** Anything may have changed: every waiting claim and log stream looks again. */
  resync(): void;
}

interface Message {
  /** The sender, so that a server ignores its own messages. */
  i: string;
  j?: Array<[string, number, string]>;
  l?: Array<[string, number, string]>;
  t?: number[];
  /** Label sets may have been added. */
  s?: 1;
  /** Too much to list: treat everything as changed. */
  all?: 1;
}

/** PostgreSQL's NOTIFY payload limit is 8000 bytes; stay clear of it. */
const MAX_PAYLOAD = 7800;
const FLUSH_MS = 5;

export class Peers {
  readonly id = randomUUID();
  private jobs = new Map<string, JobChange>();
  private logs = new Map<string, JobChange>();
  private times = new Set<number>();
  private newLabelSets = false;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly handlers: PeerHandlers,
    private readonly log: Logger,
  ) {}

  /** Whether the store carries events between processes at all (PostgreSQL does, SQLite does not). */
  get enabled(): boolean {
    return typeof this.store.publish === 'function';
  }

  /** Starts listening; resolves once the first LISTEN is in place. */
  async start(): Promise<void> {
    if (!this.store.listen || this.closed) return;
    this.unlisten = await this.store.listen(
      (payload) => this.receive(payload),
      () => {
        this.log.info('listening for other servers again; looking at everything that may have changed meanwhile');
        this.handlers.resync();
      },
      (err) => this.log.warn({ err: err.message }, 'lost the connection that hears other servers; trying again'),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer);
      await this.flush();
    }
    await this.unlisten?.();
    this.unlisten = null;
  }

  sendJobs(changes: readonly JobChange[]): void {
    if (!this.enabled) return;
    for (const c of changes) this.jobs.set(`${c.run_number}/${c.workflow_id}/${c.job_id}`, c);
    this.schedule();
  }

  sendLogs(change: JobChange): void {
    if (!this.enabled) return;
    this.logs.set(`${change.run_number}/${change.workflow_id}/${change.job_id}`, change);
    this.schedule();
  }

  sendLabelSets(): void {
    if (!this.enabled) return;
    this.newLabelSets = true;
    this.schedule();
  }

  sendWakeAt(atMs: number): void {
    if (!this.enabled) return;
    this.times.add(atMs);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
  }

  private flush(): Promise<void> {
    this.timer = null;
    const triple = (c: JobChange): [string, number, string] => [c.workflow_id, c.run_number, c.job_id];
    const msg: Message = { i: this.id };
    if (this.jobs.size) msg.j = [...this.jobs.values()].map(triple);
    if (this.logs.size) msg.l = [...this.logs.values()].map(triple);
    if (this.times.size) msg.t = [...this.times];
    if (this.newLabelSets) msg.s = 1;
    this.newLabelSets = false;
    this.jobs.clear();
    this.logs.clear();
    this.times.clear();
    let payload = JSON.stringify(msg);
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) payload = JSON.stringify({ i: this.id, all: 1 } satisfies Message);
    return this.store.publish!(payload).catch((err: unknown) => {
      // Other servers then learn of it by their periodic looks (claim sweep, log poll) instead.
      this.log.warn({ err: (err as Error).message }, 'could not tell other servers about a change');
    });
  }

  private receive(payload: string): void {
    let msg: Message;
    try {
      msg = JSON.parse(payload) as Message;
    } catch {
      this.log.warn({ payload: payload.slice(0, 200) }, 'ignored a malformed message from another server');
      return;
    }
    if (msg.i === this.id) return;
    if (msg.all) return this.handlers.resync();
    // Before the jobs: the claims they wake must know the label sets those jobs carry.
    if (msg.s) this.handlers.labelSets();
    const change = ([workflow_id, run_number, job_id]: [string, number, string]): JobChange => ({ workflow_id, run_number, job_id });
    if (msg.j?.length) this.handlers.jobs(msg.j.map(change));
    for (const l of msg.l ?? []) this.handlers.logs(change(l));
    for (const t of msg.t ?? []) this.handlers.wakeAt(t);
  }
}
