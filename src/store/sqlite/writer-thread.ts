/**
 * The SQLite store's writer thread: owns the write connection and runs every write operation there,
 * batching whatever arrived while the previous commit was being made durable (group-commit.ts; the writes are writes.ts). The
 * main thread's event loop therefore never waits on an fsync.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Conn, openConnection, type SqliteStoreOptions } from './connection.js';
import { timedBatch } from './group-commit.js';
import type { WriteCall } from './writes.js';

/** Bounds one transaction, so that a flood of calls still gets answers in steady steps. */
const MAX_BATCH = 1000;

const { file, opts } = workerData as { file: string; opts: SqliteStoreOptions };
const db = openConnection(file, opts);
const conn = new Conn(db);
let queue: WriteCall[] = [];
let scheduled = false;
let closing = false;

function flush(): void {
  scheduled = false;
  while (queue.length > 0) {
    const batch = queue.length > MAX_BATCH ? queue.splice(0, MAX_BATCH) : queue.splice(0);
    parentPort!.postMessage(timedBatch(db, conn, batch));
    // Calls that arrived during this commit are still in the port; let them in before the next batch.
    if (queue.length > 0 && !closing) return schedule();
  }
  if (closing) {
    db.close();
    parentPort!.close();
  }
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
}

// The main thread sends the calls of one turn of its event loop together (writer.ts ThreadWriter.call).
parentPort!.on('message', (m: WriteCall[] | { close: true }) => {
  if (Array.isArray(m)) queue.push(...m);
  else closing = true;
  schedule();
});
