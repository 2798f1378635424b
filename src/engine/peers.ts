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
 *
 * Job and log changes are sent only while another server wants them: one with claims waiting, live
 * streams open, or concurrency groups or calls to follow says so when that starts and every
 * ANNOUNCE_MS while it lasts. Without it, a busy server would send a NOTIFY transaction every
 * FLUSH_MS, each waking every listening server, for nobody. A change held back is not forgotten:
 * when a server hears a peer start wanting changes after it held some back, it sends "something
 * changed", so a claim that began waiting just before the change looks again at once rather than at
 * its next sweep.
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
  /** Whether this server has anything that other servers' job and log changes feed (see wanted()). */
  interested(): boolean;
}

interface Message {
  /** The sender, so that a server ignores its own messages. */
  i: string;
  j?: Array<[string, number, string]>;
  l?: Array<[string, number, string]>;
  t?: number[];
  /** Label sets may have been added. */
  s?: 1;
  /** Too much to list, or changes were held back: treat everything as changed. */
  all?: 1;
  /** The sender wants job and log changes for the next INTEREST_TTL_MS (or what it was given). */
  w?: 1;
}

/** PostgreSQL's NOTIFY payload limit is 8000 bytes; stay clear of it. */
const MAX_PAYLOAD = 7800;
const FLUSH_MS = 5;
/** How often a server that wants other servers' changes says so again. */
const ANNOUNCE_MS = 1000;
/**
 * How long a peer's "I want changes" holds without being repeated. Several announcements long, so a
 * late one (a busy machine) does not let the interest lapse; a lapse costs only a look again anyway.
 */
const INTEREST_TTL_MS = 5 * ANNOUNCE_MS;

export interface PeersOptions {
  /** ANNOUNCE_MS by default. */
  announceMs?: number;
  /** INTEREST_TTL_MS by default. */
  interestTtlMs?: number;
}

export class Peers {
  readonly id = randomUUID();
  private jobs = new Map<string, JobChange>();
  private logs = new Map<string, JobChange>();
  private times = new Set<number>();
  private newLabelSets = false;
  /** Peers that want job and log changes, each until when (performance.now()). */
  private readonly wanting = new Map<string, number>();
  /** A job or log change was not sent since the last "something changed": no peer wanted it. */
  private withheld = false;
  /** The next message says "something changed" (a peer started wanting changes after some were held back). */
  private lookAgain = false;
  /** The next message says this server wants changes. */
  private announce = false;
  /** Runs while this server wants changes: it says so again when it fires. */
  private announceTimer: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Something is gathered and not yet sent. */
  private due = false;
  /** The message on its way, if any: the next waits for it. */
  private sending: Promise<void> | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly handlers: PeerHandlers,
    private readonly log: Logger,
    private readonly opts: PeersOptions = {},
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
    if (this.announceTimer) clearTimeout(this.announceTimer);
    this.announceTimer = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sending;
    if (this.due) await this.flush();
    await this.unlisten?.();
    this.unlisten = null;
  }

  sendJobs(changes: readonly JobChange[]): void {
    if (!this.enabled || changes.length === 0 || this.holdBack()) return;
    for (const c of changes) this.jobs.set(`${c.run_number}/${c.workflow_id}/${c.job_id}`, c);
    this.schedule();
  }

  sendLogs(change: JobChange): void {
    if (!this.enabled || this.holdBack()) return;
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

  /**
   * Something on this server started to depend on other servers' job and log changes (a claim began
   * waiting, a live stream opened, a workflow with groups or calls became known): tell them, unless
   * this server already did within ANNOUNCE_MS. While `interested()` holds, it is said again every
   * ANNOUNCE_MS.
   */
  wanted(): void {
    if (!this.enabled || this.closed || this.announceTimer) return;
    this.sayWanted();
  }

  private sayWanted(): void {
    this.announce = true;
    this.schedule();
    this.announceTimer = setTimeout(() => {
      this.announceTimer = null;
      if (!this.closed && this.handlers.interested()) this.sayWanted();
    }, this.opts.announceMs ?? ANNOUNCE_MS);
    this.announceTimer.unref();
  }

  /** True when no peer wants job and log changes now: the change is not sent, and that is noted. */
  private holdBack(): boolean {
    const now = performance.now();
    for (const [id, until] of this.wanting) {
      if (until > now) return false;
      this.wanting.delete(id);
    }
    this.withheld = true;
    return true;
  }

  private peerWants(id: string): void {
    const now = performance.now();
    const known = (this.wanting.get(id) ?? 0) > now;
    this.wanting.set(id, now + (this.opts.interestTtlMs ?? INTEREST_TTL_MS));
    // It may have begun waiting before a change this server held back: it must look again.
    if (!known && this.withheld) {
      this.withheld = false;
      this.lookAgain = true;
      this.schedule();
    }
  }

  /**
   * Something is to be sent: it goes FLUSH_MS from now, with whatever else comes meanwhile, or, while
   * a message is still on its way (a busy database), FLUSH_MS after that one is out. So a server
   * sends fewer, fuller messages the slower the database takes them.
   */
  private schedule(): void {
    this.due = true;
    if (this.timer || this.sending || this.closed) return;
    this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
  }

  private flush(): Promise<void> {
    this.timer = null;
    this.due = false;
    const triple = (c: JobChange): [string, number, string] => [c.workflow_id, c.run_number, c.job_id];
    const msg: Message = { i: this.id };
    if (this.announce) msg.w = 1;
    this.announce = false;
    if (this.jobs.size) msg.j = [...this.jobs.values()].map(triple);
    if (this.logs.size) msg.l = [...this.logs.values()].map(triple);
    if (this.times.size) msg.t = [...this.times];
    if (this.newLabelSets) msg.s = 1;
    this.newLabelSets = false;
    this.jobs.clear();
    this.logs.clear();
    this.times.clear();
    let payload = JSON.stringify(msg);
    const everything: Message = { i: this.id, all: 1, ...(msg.w ? { w: 1 as const } : {}) };
    if (this.lookAgain) {
      // Retry times are not covered by looking again: they still go along when they fit.
      const again = JSON.stringify(msg.t ? { ...everything, t: msg.t } : everything);
      payload = Buffer.byteLength(again) > MAX_PAYLOAD ? JSON.stringify(everything) : again;
    } else if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
      payload = JSON.stringify(everything);
    }
    this.lookAgain = false;
    const sending = this.store
      .publish!(payload)
      .catch((err: unknown) => {
        // Other servers then learn of it by their periodic looks (claim sweep, log poll) instead.
        this.log.warn({ err: (err as Error).message }, 'could not tell other servers about a change');
      })
      .finally(() => {
        this.sending = null;
        if (this.due && !this.closed) this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      });
    this.sending = sending;
    return sending;
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
    if (msg.w) this.peerWants(msg.i);
    for (const t of msg.t ?? []) this.handlers.wakeAt(t);
    if (msg.all) return this.handlers.resync();
    // Before the jobs: the claims they wake must know the label sets those jobs carry.
    if (msg.s) this.handlers.labelSets();
    const change = ([workflow_id, run_number, job_id]: [string, number, string]): JobChange => ({ workflow_id, run_number, job_id });
    if (msg.j?.length) this.handlers.jobs(msg.j.map(change));
    for (const l of msg.l ?? []) this.handlers.logs(change(l));
  }
}
