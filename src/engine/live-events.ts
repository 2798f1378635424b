import type { Logger } from 'pino';
import { WeftError } from '../protocol/errors.js';
import type { WorkflowState } from '../domain/model.js';
import type { JobView, StatusDocument, WorkflowSummary } from '../protocol/wire.js';
import type { Engine } from './engine.js';
import { summaryOfDocument } from './views.js';

/**
 * Live events for dashboards (docs/api.md "Live events"): what changed in a workflow, as job and run
 * events, and every changed workflow as a list item. The engine already announces each durable job
 * change (from this server and, through peers.ts, from the others); this turns those announcements
 * into documents. Changes are gathered for FLUSH_MS (LIST_FLUSH_MS when only the list follows the
 * workflow), then each changed workflow is read once and
 * compared with the last document sent, so a burst of a thousand completions costs one read per
 * workflow, and nothing is read while nobody listens.
 *
 * Events carry ids `<boot>.<seq>` and the last REPLAY_MS of them are kept, up to `replayBytes` of
 * them: a client that reconnects with Last-Event-ID gets what it missed, or a `resync` (refetch
 * everything) when that is no longer possible: the id is from another server process, too old, or
 * from before this server watched that workflow.
 *
 * Memory stays bounded whatever the workflows' size and however slowly clients read: a list event
 * carries the workflow's summary (its job counts, not its jobs), each event is serialized once and
 * shared by every listener and the replay buffer, and a listener whose unsent events pass
 * `maxBacklogBytes` (a client that stopped reading) is cut off rather than buffered without limit
 * (README "Limits").
 */

export type LiveEvent =
  | { seq: number; workflow_id: string; type: 'job'; data: JobView & { run_number: number } }
  | { seq: number; workflow_id: string; type: 'run'; data: { run_number: number; status: WorkflowState } }
  | { seq: number; workflow_id: string; type: 'workflow'; data: WorkflowSummary }
  | { seq: number; workflow_id: string; type: 'deleted'; data: { id: string } };

/** An event as sent: its data serialized once, whoever it is sent to. */
export type SentEvent = LiveEvent & { json: string; bytes: number };

export type LiveFrame = { type: 'resync' } | SentEvent;

const FLUSH_MS = 25;
/**
 * Changes of workflows only the list stream follows are gathered longer: a list row refreshed four
 * times a second is live enough, and a busy workflow then costs the list a few reads a second.
 */
const LIST_FLUSH_MS = 250;
const REPLAY_MS = 5 * 60_000;
const MAX_KEPT = 20_000;
/** EVENTS_REPLAY_BYTES default: what the replay buffer may hold, serialized. */
export const DEFAULT_REPLAY_BYTES = 8 * 1024 * 1024;
/** STREAM_BACKLOG_BYTES default: unsent events a listener may have before it is cut off. */
export const DEFAULT_BACKLOG_BYTES = 4 * 1024 * 1024;
/** How long a workflow stays watched after its last listener left, so a reconnect can resume. */
const LINGER_MS = 60_000;

interface Listener {
  workflowId: string | null;
  push(frame: SentEvent | { type: 'resync' }): void;
}

export interface LiveEventsOptions {
  /** Also look at watched workflows this often, for changes made by processes that cannot announce them. */
  pollMs?: number;
  now?: () => number;
  /** EVENTS_REPLAY_BYTES: the most the replay buffer holds (its events' serialized data). */
  replayBytes?: number;
  /** STREAM_BACKLOG_BYTES: a listener with more unsent than this is cut off. */
  maxBacklogBytes?: number;
}

interface Watch {
  listeners: number;
  /** Events of this workflow are complete from this seq on. */
  since: number;
  /** The document last compared against; null once the workflow is gone. */
  doc: StatusDocument | null;
  lingerUntil: number;
}

export class LiveEvents {
  /** Distinguishes this process's ids from another's (a restart, another server behind the balancer). */
  readonly boot = Date.now().toString(36);
  private seq = 0;
  private readonly kept: Array<SentEvent & { at: number }> = [];
  private keptBytes = 0;
  private readonly listeners = new Set<Listener>();
  private readonly watches = new Map<string, Watch>();
  private globalListeners = 0;
  private globalSince = Infinity;
  private globalLingerUntil = 0;
  private readonly dirty = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private timerDue = 0;
  private flushing: Promise<void> | null = null;
  private readonly poller: NodeJS.Timeout | null;
  private closed = false;
  private readonly onJob = (c: { workflow_id: string }) => this.touch(c.workflow_id);
  private readonly onWorkflow = (id: string) => this.touch(id);
  private readonly onResync = () => this.resync();
  /** Streams that ended, still following other servers' changes while their watch lingers. */
  private readonly lingering = new Map<NodeJS.Timeout, () => void>();

  private readonly now: () => number;
  private readonly replayBytes: number;
  readonly maxBacklogBytes: number;

  constructor(
    private readonly engine: Engine,
    private readonly log: Logger,
    opts: LiveEventsOptions = {},
  ) {
    const pollMs = opts.pollMs ?? 1000;
    this.now = opts.now ?? Date.now;
    this.replayBytes = opts.replayBytes ?? DEFAULT_REPLAY_BYTES;
    this.maxBacklogBytes = opts.maxBacklogBytes ?? DEFAULT_BACKLOG_BYTES;
    engine.events.on('job', this.onJob);
    engine.events.on('workflow', this.onWorkflow);
    engine.events.on('resync', this.onResync);
    this.poller = setInterval(() => {
      for (const id of this.watches.keys()) this.touch(id);
    }, pollMs);
    this.poller.unref();
  }

  close(): void {
    this.closed = true;
    for (const [timer, unfollow] of this.lingering) {
      clearTimeout(timer);
      unfollow();
    }
    this.lingering.clear();
    this.engine.events.off('job', this.onJob);
    this.engine.events.off('workflow', this.onWorkflow);
    this.engine.events.off('resync', this.onResync);
    if (this.poller) clearInterval(this.poller);
    if (this.timer) clearTimeout(this.timer);
  }

  /** The id a client sends back as Last-Event-ID. */
  eventId(seq: number): string {
    return `${this.boot}.${seq}`;
  }

  /**
   * Events of one workflow (`workflowId`) or of every workflow (null), after `lastEventId` when a
   * client resumes. Rejects with 404 before anything is streamed when the workflow does not exist.
   * The frames are pulled as the connection takes them; when more than maxBacklogBytes wait
   * (the client stopped reading), they are dropped, the listener leaves and `onOverflow` is called,
   * which is to end the connection.
   */
  async subscribe(
    workflowId: string | null,
    lastEventId: string | undefined,
    signal: AbortSignal,
    onOverflow: (backlogBytes: number) => void = () => {},
  ): Promise<AsyncGenerator<LiveFrame>> {
    const queue: LiveFrame[] = [];
    let queuedBytes = 0;
    let wake: (() => void) | null = null;
    let overflowed = false;
    // What arrives while the stream is being set up is one flush's worth at most: counted from then on.
    let ready = false;
    let left = false;
    // Other servers send their job changes only while something here wants them; a watch lingers
    // after its last listener (for clients that reconnect), and so does this.
    const unfollow = this.engine.followChanges();
    const done = () => {
      if (left) return;
      left = true;
      this.listeners.delete(listener);
      if (workflowId === null) this.unwatchAll();
      else this.unwatch(workflowId);
      this.lingerFollow(unfollow);
      wake?.();
    };
    const listener: Listener = {
      workflowId,
      push: (frame) => {
        if (overflowed) return;
        const bytes = frame.type === 'resync' ? 0 : frame.bytes;
        // One event larger than the limit still goes to a client that has taken everything before it.
        if (ready && queue.length > 0 && queuedBytes + bytes > this.maxBacklogBytes) {
          overflowed = true;
          const backlog = queuedBytes + bytes;
          queue.length = 0;
          queuedBytes = 0;
          done();
          onOverflow(backlog);
          return;
        }
        queue.push(frame);
        queuedBytes += bytes;
        wake?.();
      },
    };
    // Listening first: nothing that happens while the first document is read is lost.
    this.listeners.add(listener);
    try {
      if (workflowId === null) this.watchAll();
      else await this.watch(workflowId);
    } catch (err) {
      this.listeners.delete(listener);
      unfollow();
      throw err;
    }
    let replayed: LiveFrame[];
    try {
      replayed = this.replay(workflowId, lastEventId);
    } catch (err) {
      done();
      throw err;
    }
    queue.unshift(...replayed);
    queuedBytes = 0;
    for (const f of queue) queuedBytes += f.type === 'resync' ? 0 : f.bytes;
    ready = true;
    signal.addEventListener('abort', done, { once: true });
    async function* frames(): AsyncGenerator<LiveFrame> {
      try {
        while (!signal.aborted && !overflowed) {
          const next = queue.shift();
          if (next) {
            if (next.type !== 'resync') queuedBytes -= next.bytes;
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      } finally {
        done();
      }
    }
    return frames();
  }

  // ------------------------------------------------------------------------------ watching

  private lingerFollow(unfollow: () => void): void {
    if (this.closed) return unfollow();
    const timer = setTimeout(() => {
      this.lingering.delete(timer);
      unfollow();
    }, LINGER_MS);
    timer.unref();
    this.lingering.set(timer, unfollow);
  }

  private async watch(id: string): Promise<void> {
    const w = this.watches.get(id);
    if (w) {
      w.listeners++;
      return;
    }
    const doc = await this.engine.status(id); // 404 for an unknown workflow
    const again = this.watches.get(id);
    if (again) {
      again.listeners++;
      return;
    }
    this.watches.set(id, { listeners: 1, since: this.seq, doc, lingerUntil: 0 });
  }

  private unwatch(id: string): void {
    const w = this.watches.get(id);
    if (!w) return;
    w.listeners--;
    if (w.listeners === 0) w.lingerUntil = this.now() + LINGER_MS;
  }

  private watchAll(): void {
    if (this.globalListeners === 0 && this.globalLingerUntil < this.now()) this.globalSince = this.seq;
    this.globalListeners++;
  }

  private unwatchAll(): void {
    this.globalListeners--;
    if (this.globalListeners === 0) this.globalLingerUntil = this.now() + LINGER_MS;
  }

  private get watchingAll(): boolean {
    return this.globalListeners > 0 || this.globalLingerUntil >= this.now();
  }

  // ------------------------------------------------------------------------------ changes

  private touch(id: string): void {
    if (this.closed) return;
    if (!this.watches.has(id) && !this.watchingAll) return;
    this.dirty.add(id);
    this.schedule(this.watches.has(id) ? FLUSH_MS : LIST_FLUSH_MS);
  }

  /** Starts a look at the dirty workflows within `delayMs`, unless one is already due sooner or running. */
  private schedule(delayMs: number): void {
    if (this.flushing || this.closed) return;
    const due = performance.now() + delayMs;
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => this.startFlush(), delayMs);
  }

  private resync(): void {
    // Per-workflow listeners are brought up to date by comparing documents; the list cannot know
    // which workflows changed, so its listeners refetch.
    for (const id of this.watches.keys()) this.touch(id);
    for (const l of this.listeners) if (l.workflowId === null) l.push({ type: 'resync' });
  }

  private startFlush(): void {
    this.timer = null;
    const started = performance.now();
    this.flushing = this.flush()
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'live events: a look at changed workflows failed'))
      .finally(() => {
        this.flushing = null;
        // A look that took long (large watched workflows) is followed by a pause as long, so that
        // live events never take more than about half of the event loop however busy the workflows.
        const took = performance.now() - started;
        if (this.dirty.size > 0) {
          const watched = [...this.dirty].some((id) => this.watches.has(id));
          this.schedule(Math.max(watched ? FLUSH_MS : LIST_FLUSH_MS, took));
        }
      });
  }

  private async flush(): Promise<void> {
    const now = this.now();
    for (const [id, w] of this.watches) if (w.listeners === 0 && w.lingerUntil < now) this.watches.delete(id);
    const ids = [...this.dirty];
    this.dirty.clear();
    for (const id of ids) {
      const watch = this.watches.get(id);
      if (!watch && !this.watchingAll) continue;
      // The whole document only for a workflow someone watches; the list needs its summary alone.
      let doc: StatusDocument | null = null;
      let summary: WorkflowSummary | null;
      try {
        if (watch) {
          doc = await this.engine.status(id);
          summary = this.watchingAll ? summaryOfDocument(doc) : null;
        } else {
          summary = await this.engine.summary(id);
        }
      } catch (err) {
        if (!(err instanceof WeftError && err.code === 'workflow_not_found')) {
          // Looked at again on the next change or poll.
          this.dirty.add(id);
          throw err;
        }
        doc = null;
        summary = null;
      }
      if (watch) this.compare(id, watch, doc);
      if (this.watchingAll) {
        this.append(summary ? { seq: 0, workflow_id: id, type: 'workflow', data: summary } : { seq: 0, workflow_id: id, type: 'deleted', data: { id } });
      }
    }
    this.trim(now);
  }

  /** Appends an event for every job whose entry changed and for a run that started or ended. */
  private compare(id: string, watch: Watch, doc: StatusDocument | null): void {
    const prev = watch.doc;
    watch.doc = doc;
    if (!doc || doc.run_number === null) return;
    const run = doc.run_number;
    const newRun = prev?.run_number !== run;
    // A queued run (README "How a run works") is announced as queued, and again once it starts.
    if (newRun) this.append({ seq: 0, workflow_id: id, type: 'run', data: { run_number: run, status: doc.status === 'queued' ? 'queued' : 'running' } });
    else if (prev?.status === 'queued' && doc.status !== 'queued') this.append({ seq: 0, workflow_id: id, type: 'run', data: { run_number: run, status: 'running' } });
    const before = new Map(newRun || !prev ? [] : prev.jobs.map((j) => [j.id, JSON.stringify(j)]));
    for (const job of doc.jobs) {
      if (before.get(job.id) !== JSON.stringify(job)) {
        this.append({ seq: 0, workflow_id: id, type: 'job', data: { ...job, run_number: run } });
      }
    }
    const wasOver = !newRun && prev !== null && !isActive(prev.status);
    if (!isActive(doc.status) && !wasOver) this.append({ seq: 0, workflow_id: id, type: 'run', data: { run_number: run, status: doc.status } });
  }

  private append(ev: LiveEvent): void {
    ev.seq = ++this.seq;
    const json = JSON.stringify(ev.data);
    // UTF-16 length: a close enough measure of the bytes sent, and free.
    const sent = { ...ev, json, bytes: json.length, at: this.now() } as SentEvent & { at: number };
    this.kept.push(sent);
    this.keptBytes += sent.bytes;
    for (const l of this.listeners) if (wanted(l.workflowId, sent)) l.push(sent);
    if (this.keptBytes > this.replayBytes) this.trim(this.now());
  }

  private trim(now: number): void {
    let drop = 0;
    let bytes = this.keptBytes;
    while (
      drop < this.kept.length &&
      (this.kept.length - drop > MAX_KEPT || bytes > this.replayBytes || this.kept[drop]!.at < now - REPLAY_MS)
    ) {
      bytes -= this.kept[drop]!.bytes;
      drop++;
    }
    if (drop > 0) {
      this.kept.splice(0, drop);
      this.keptBytes = bytes;
    }
  }

  /** What a resuming client missed, or a resync when that cannot be told. */
  private replay(workflowId: string | null, lastEventId: string | undefined): LiveFrame[] {
    if (lastEventId === undefined || lastEventId === '') return [];
    const m = /^([0-9a-z]+)\.(\d+)$/.exec(lastEventId);
    if (!m) throw new WeftError('invalid_last_event_id', `Last-Event-ID must be an event id such as "${this.boot}.12", got "${lastEventId.slice(0, 64)}"`);
    const after = Number(m[2]);
    const since = workflowId === null ? this.globalSince : (this.watches.get(workflowId)?.since ?? Infinity);
    const oldest = this.kept.length > 0 ? this.kept[0]!.seq : this.seq + 1;
    if (m[1] !== this.boot || after > this.seq || after < since || after < oldest - 1) return [{ type: 'resync' }];
    const missed = this.kept.filter((e) => e.seq > after && wanted(workflowId, e));
    // More than a listener may have waiting: refetching is cheaper than replaying it all.
    let bytes = 0;
    for (const e of missed) bytes += e.bytes;
    return bytes > this.maxBacklogBytes ? [{ type: 'resync' }] : missed;
  }
}

/** The list stream has workflow and deleted events; a workflow's stream its own job and run events. */
function wanted(workflowId: string | null, ev: LiveEvent): boolean {
  const listEvent = ev.type === 'workflow' || ev.type === 'deleted';
  return workflowId === null ? listEvent : !listEvent && ev.workflow_id === workflowId;
}

const isActive = (status: string) => status === 'running' || status === 'queued';
