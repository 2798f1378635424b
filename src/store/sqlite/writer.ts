import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { SqliteStoreOptions } from './connection.js';
import type { BatchAnswer } from './group-commit.js';
import type { WriteArgs, WriteCall, WriteName, WriteResult } from './writes.js';

// The thread runs the same module format as this file: .js when built, .ts from source (tests, tsx).
const EXT = path.extname(fileURLToPath(import.meta.url));
const THREAD_FILE = new URL(`./writer-thread${EXT}`, import.meta.url);

/** A loader registered with `--import` in the main thread does not reach worker threads: register it there. */
function startThread(workerData: unknown): Worker {
  if (EXT !== '.ts') return new Worker(THREAD_FILE, { workerData });
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(THREAD_FILE.href)}); })`;
  return new Worker(boot, { eval: true, workerData });
}

/** The main thread's side of the writer thread: each call is answered once its batch has committed. */
export class ThreadWriter {
  private readonly thread: Worker;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private nextId = 1;
  private failure: Error | null = null;
  private readonly exited: Promise<void>;
  /** Hears each batch's commit time (Store.onCommit). */
  onCommit: ((seconds: number) => void) | null = null;
  /** Calls made in this turn of the event loop, sent together at its end (see call). */
  private outbox: WriteCall[] = [];
  private readonly send = () => {
    const calls = this.outbox;
    this.outbox = [];
    if (calls.length > 0 && !this.failure) this.thread.postMessage(calls);
  };

  constructor(file: string, opts: SqliteStoreOptions) {
    this.thread = startThread({ file, opts });
    this.thread.on('message', ({ results, seconds }: BatchAnswer) => {
      this.onCommit?.(seconds);
      for (const r of results) {
        const p = this.pending.get(r.id);
        if (!p) continue;
        this.pending.delete(r.id);
        if (r.ok) p.resolve(r.value);
        else p.reject(Object.assign(new Error(r.message), { stack: r.stack ?? r.message }));
      }
    });
    this.thread.on('error', (err) => this.fail(new Error(`SQLite writer thread failed: ${err.message}`, { cause: err })));
    this.exited = new Promise((resolve) =>
      this.thread.once('exit', (code) => {
        this.fail(new Error(`SQLite writer thread exited (code ${code})`));
        resolve();
      }),
    );
  }

  /**
   * Write `op`; answers what WRITES[op] returned on the thread (a structured clone of it). The calls
   * of one turn of the event loop go to the thread in one message at its end, so that what one
   * request writes in steps (a report's complete, then the claim it carries, a few promise hops
   * later) lands in one batch and one commit: sent one by one, an idle thread often committed the
   * first before the second arrived (docs/performance.md "Third round").
   */
  call<K extends WriteName>(op: K, args: WriteArgs<K>): Promise<WriteResult<K>> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<WriteResult<K>>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      if (this.outbox.length === 0) setImmediate(this.send);
      this.outbox.push({ id, op, args });
    });
  }

  /** Finishes what was sent, closes the write connection and ends the thread. */
  async close(): Promise<void> {
    this.send();
    if (!this.failure) this.thread.postMessage({ close: true });
    await this.exited;
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
  }
}
