/** A job attempt's log shipping: buffered, batched, in order, bounded while the server is away. */
import type { LogStream } from '../domain/model.js';
import type { IncomingLogChunk } from '../protocol/wire.js';
import { describe, isLeaseOver, isTransient } from './answers.js';
import type { LogSenderRun } from './seams.js';
import { backoffMs, now, Wakeup } from './timing.js';

/** A chunk never holds more than this; longer text is split. */
const MAX_CHUNK_CHARS = 32 * 1024;
const MAX_BATCH_CHUNKS = 1000;
const MAX_BATCH_CHARS = 128 * 1024;
/**
 * Buffer bounds while the server is not taking logs. Both are needed: characters bound the text, the
 * chunk count bounds the per-chunk overhead when the streams alternate line by line.
 */
const MAX_BUFFERED_LOG_CHARS = 8 * 1024 * 1024;
const MAX_BUFFERED_CHUNKS = 10_000;

/** Aborts a closed sender's request in flight: one shared reason (see JOB_FINISHED in ./job-run.ts). */
const SENDER_CLOSED = new Error('the log sender closed');

/**
 * Buffers a job attempt's log text and pushes it in order from a single sending loop, one request at
 * a time. Consecutive text of one stream is merged into the open chunk until it is sent (or full);
 * a chunk that has been sent once never changes, so a re-send after a lost answer is deduplicated by
 * its sequence on the server.
 */
export class LogSender {
  /** Sealed chunks; those from `head` on are not delivered yet. */
  private queue: IncomingLogChunk[] = [];
  private head = 0;
  /** The chunk still taking text: not numbered and not sent yet. */
  private open: { stream: LogStream; parts: string[]; chars: number; timestamp: number } | null = null;
  private sequence = 0;
  /** Characters buffered (sealed undelivered chunks and the open one). */
  private chars = 0;
  private dropped = 0;
  /** When the oldest undelivered text was pushed; it must go out by then + logFlushMs. */
  private oldestAt = 0;
  private failures = 0;
  /** After a failed push nothing is sent before this, however much output keeps coming. */
  private nextAttemptAt = 0;
  private flushDeadline: number | null = null;
  private closed = false;
  private looping = false;
  /** True while the loop waits for text to arrive (not for a due time): only then does a push wake it. */
  private idle = false;
  private readonly wakeup = new Wakeup();
  /** Poked after every push attempt and on close, for flush(). */
  private readonly progress = new Wakeup();
  private readonly closer = new AbortController();

  constructor(private readonly run: LogSenderRun) {}

  push(data: string, stream: LogStream): void {
    if (this.closed) return;
    if (!this.hasRoom()) {
      this.dropped++;
      return;
    }
    if (!this.pending) this.oldestAt = now();
    this.noteDropped();
    for (let i = 0; i < data.length || i === 0; i += MAX_CHUNK_CHARS) this.append(data.slice(i, i + MAX_CHUNK_CHARS), stream);
    this.start();
  }

  /** Chunks not delivered yet (counting the open one). */
  get undelivered(): number {
    return this.queue.length - this.head + (this.open ? 1 : 0);
  }

  private get pending(): boolean {
    return this.open !== null || this.head < this.queue.length;
  }

  private hasRoom(): boolean {
    return this.undelivered < MAX_BUFFERED_CHUNKS && this.chars < MAX_BUFFERED_LOG_CHARS;
  }

  /** Puts the count of pushes dropped for lack of room into the log, where they would have been. */
  private noteDropped(): void {
    if (this.dropped === 0 || !this.hasRoom()) return;
    const n = this.dropped;
    this.dropped = 0;
    this.append(`[weft worker: ${n} log chunk(s) dropped while the server was not taking them]\n`, 'stderr');
  }

  private append(text: string, stream: LogStream): void {
    const open = this.open;
    if (open && open.stream === stream && open.chars + text.length <= MAX_CHUNK_CHARS) {
      open.parts.push(text);
      open.chars += text.length;
    } else {
      this.seal();
      this.open = { stream, parts: [text], chars: text.length, timestamp: Date.now() };
    }
    this.chars += text.length;
  }

  private seal(): void {
    const open = this.open;
    if (!open) return;
    this.open = null;
    this.queue.push({ sequence: this.sequence++, data: open.parts.join(''), stream: open.stream, timestamp_ms: open.timestamp });
  }

  private start(): void {
    if (!this.looping) {
      this.looping = true;
      void this.loop();
    } else if (this.idle) {
      // Only when idle: a wake-up per line would cost more than the line.
      this.idle = false;
      this.wakeup.poke();
    }
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      if (!this.pending) {
        this.idle = true;
        await this.wakeup.wait();
        this.idle = false;
        continue;
      }
      const dueAt = Math.max(this.flushDeadline !== null ? 0 : this.oldestAt + this.run.worker.logFlushMs, this.nextAttemptAt);
      const wait = dueAt - now();
      if (wait > 0) {
        await this.wakeup.wait(wait);
        continue;
      }
      await this.sendBatch();
      this.progress.poke();
    }
    this.progress.poke();
  }

  private async sendBatch(): Promise<void> {
    this.seal();
    let n = 0;
    let chars = 0;
    while (this.head + n < this.queue.length && n < MAX_BATCH_CHUNKS) {
      const size = this.queue[this.head + n]!.data.length;
      if (n > 0 && chars + size > MAX_BATCH_CHARS) break;
      chars += size;
      n++;
    }
    const batch = this.queue.slice(this.head, this.head + n);
    const deadline = this.flushDeadline;
    try {
      const answer = await this.run.worker.client.pushLogs(this.run.lease.lease_id, batch, {
        signal: this.closer.signal,
        // A flush must not wait on one request longer than it has.
        timeoutMs: deadline === null ? undefined : Math.max(1, deadline - now()),
      });
      if (answer?.truncated === true) {
        // The attempt's log reached the server's MAX_LOG_BYTES_PER_ATTEMPT: it keeps a marker and
        // drops the rest, so sending more only costs both sides. The job itself runs on.
        this.run.log.warn({ chunks: this.undelivered }, 'the server truncated this attempt\'s log (MAX_LOG_BYTES_PER_ATTEMPT); no more output is sent');
        this.close();
        return;
      }
    } catch (err) {
      if (this.closed) return;
      if (isLeaseOver(err)) {
        this.run.lost(err);
        // Whatever the 409 says, this lease takes no more logs.
        this.close();
        return;
      }
      if (isTransient(err)) {
        this.failures++;
        this.nextAttemptAt = now() + backoffMs(this.failures - 1, this.run.worker.maxBackoffMs, 500);
        if (this.failures === 1) {
          this.run.log.warn({ err: describe(err), chunks: this.undelivered }, 'log push failed; retrying with backoff (logged again once it recovers)');
        }
        return;
      }
      // The server refused these chunks for good (400, 413): retrying cannot help.
      this.run.log.error({ err: describe(err), chunks: n }, 'log chunks rejected by the server; dropping them');
      this.failures = 0;
    }
    if (this.closed) return;
    if (this.failures > 0) this.run.log.info({ failed_attempts: this.failures }, 'log push got through again');
    this.failures = 0;
    this.nextAttemptAt = 0;
    this.consume(n, chars);
    // Whatever came in meanwhile has waited for this request already.
    this.oldestAt = 0;
    this.noteDropped();
  }

  private consume(n: number, chars: number): void {
    this.head += n;
    this.chars -= chars;
    // Compact now and then rather than shifting the array on every batch.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Sends everything buffered, waiting at most `timeoutMs` (it still never sends before a failure's
   * backoff has passed). Resolves with the number of chunks that did not go out.
   */
  async flush(timeoutMs: number): Promise<number> {
    if (this.closed) return 0;
    const deadline = now() + Math.max(0, timeoutMs);
    this.flushDeadline = deadline;
    this.noteDropped();
    // The loop may be waiting out the batching delay, which a flush does not.
    if (this.pending) this.start();
    if (this.looping) this.wakeup.poke();
    while (!this.closed && this.pending && now() < deadline) await this.progress.wait(deadline - now());
    return this.closed ? 0 : this.undelivered;
  }

  /** Stops sending and forgets what is buffered; a request in flight is aborted. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closer.abort(SENDER_CLOSED);
    this.queue = [];
    this.head = 0;
    this.open = null;
    this.chars = 0;
    this.wakeup.poke();
    this.progress.poke();
  }
}
