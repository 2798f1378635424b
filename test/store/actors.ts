/**
 * Racers for the concurrency cases. An actor is a store the race goes through: either another store
 * instance in this process (its own connection or pool) or a child process with a store of its own
 * (store-child.ts). Every batch is fired at once, and every actor of a race starts it at the same
 * wall-clock instant, so the operations of different actors really overlap on the database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Outputs } from '../../src/domain/model.js';
import type { Claimed, CompleteOutcome, JobChange, Store, StoreClaim } from '../../src/store/store.js';
import type { ChildTarget } from './conformance.js';

export interface Actor {
  readonly name: string;
  /** Fires every claim at once; one answer per request, in order. */
  claim(reqs: readonly StoreClaim[], at: number): Promise<Claimed[][]>;
  /** Fires every complete at once; one outcome per item, in order. */
  complete(items: ReadonlyArray<{ lease_id: string; outputs: Outputs }>, nowMs: number, at: number): Promise<CompleteOutcome[]>;
  /** expireLeases(now, limit) again and again until a sweep finds nothing; every change, in order. */
  reap(nowMs: number, limit: number, at: number): Promise<JobChange[]>;
  close(): Promise<void>;
}

/** A start instant shortly ahead, for every actor of one race. */
export const startSoon = (ms = 30) => Date.now() + ms;

const untilInstant = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/** The operations an actor performs, on the store it owns; shared by both kinds of actor. */
export const perform = {
  claim: (store: Store, reqs: readonly StoreClaim[]) => Promise.all(reqs.map((r) => store.claim(r))),
  complete: (store: Store, items: ReadonlyArray<{ lease_id: string; outputs: Outputs }>, nowMs: number) =>
    Promise.all(items.map((i) => store.complete(i.lease_id, i.outputs, nowMs))),
  async reap(store: Store, nowMs: number, limit: number) {
    const all: JobChange[] = [];
    for (;;) {
      const { changes } = await store.expireLeases(nowMs, limit);
      if (changes.length === 0) return all;
      all.push(...changes);
    }
  },
};

export function inProcessActor(name: string, store: Store): Actor {
  return {
    name,
    claim: async (reqs, at) => {
      await untilInstant(at);
      return perform.claim(store, reqs);
    },
    complete: async (items, nowMs, at) => {
      await untilInstant(at);
      return perform.complete(store, items, nowMs);
    },
    reap: async (nowMs, limit, at) => {
      await untilInstant(at);
      return perform.reap(store, nowMs, limit);
    },
    close: () => store.close(),
  };
}

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'store-child.ts');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A child process holding its own store. `open` (re)opens that store on a database; the child
 * answers each request with one JSON line.
 */
export class ChildActor implements Actor {
  private readonly proc: ChildProcess;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private stderr = '';
  private readonly exited: Promise<void>;

  constructor(readonly name: string) {
    this.proc = spawn(process.execPath, ['--import', 'tsx', CHILD], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { id: number; result?: unknown; error?: string };
      const w = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (msg.error !== undefined) w?.reject(new Error(`${this.name}: ${msg.error}`));
      else w?.resolve(msg.result);
    });
    this.exited = new Promise((resolve) =>
      this.proc.on('exit', (code) => {
        for (const w of this.waiting.values()) w.reject(new Error(`${this.name} exited (${code}): ${this.stderr}`));
        this.waiting.clear();
        resolve();
      }),
    );
  }

  private send<T>(msg: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.proc.stdin!.write(`${JSON.stringify({ ...msg, id })}\n`);
    });
  }

  open(target: ChildTarget): Promise<void> {
    return this.send({ op: 'open', target });
  }

  claim(reqs: readonly StoreClaim[], at: number): Promise<Claimed[][]> {
    return this.send({ op: 'claim', reqs, at });
  }

  complete(items: ReadonlyArray<{ lease_id: string; outputs: Outputs }>, nowMs: number, at: number): Promise<CompleteOutcome[]> {
    return this.send({ op: 'complete', items, now_ms: nowMs, at });
  }

  reap(nowMs: number, limit: number, at: number): Promise<JobChange[]> {
    return this.send({ op: 'reap', now_ms: nowMs, limit, at });
  }

  /** Closes the child's store, keeping the process for the next database. */
  release(): Promise<void> {
    return this.send({ op: 'release' });
  }

  async close(): Promise<void> {
    this.proc.stdin!.end();
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}
