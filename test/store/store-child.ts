/**
 * A racer in its own process (see actors.ts): holds its own store on the database the parent names
 * and performs what the parent asks, one JSON request per stdin line, one JSON answer per stdout
 * line. A request carrying `at` waits for that wall-clock instant first, so several children start
 * a race together.
 */
import { createInterface } from 'node:readline';
import type { Store } from '../../src/store/store.js';
import { perform } from './actors.js';
import type { ChildTarget } from './conformance.js';

let store: Store | null = null;

async function handle(msg: any): Promise<unknown> {
  if (msg.op === 'open') {
    await store?.close();
    const target = msg.target as ChildTarget;
    // Only the backend under test is loaded.
    if (target.kind === 'sqlite') {
      const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store.js');
      store = new SqliteStore(target.file, { synchronous: 'NORMAL' });
    } else {
      const { PostgresStore } = await import('../../src/store/postgres/postgres-store.js');
      store = await PostgresStore.open(target.url, { max: 4 });
    }
    return null;
  }
  if (msg.op === 'release') {
    await store?.close();
    store = null;
    return null;
  }
  if (!store) throw new Error('no store open');
  if (typeof msg.at === 'number') await new Promise((r) => setTimeout(r, Math.max(0, msg.at - Date.now())));
  switch (msg.op) {
    case 'claim':
      return perform.claim(store, msg.reqs);
    case 'complete':
      return perform.complete(store, msg.items, msg.now_ms);
    case 'reap':
      return perform.reap(store, msg.now_ms, msg.limit);
    default:
      throw new Error(`unknown op ${msg.op}`);
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const msg = JSON.parse(line) as { id: number };
  handle(msg).then(
    (result) => process.stdout.write(`${JSON.stringify({ id: msg.id, result: result ?? null })}\n`),
    (err: Error) => process.stdout.write(`${JSON.stringify({ id: msg.id, error: err.stack ?? err.message })}\n`),
  );
});
lines.on('close', () => {
  void (async () => {
    await store?.close();
    process.exit(0);
  })();
});
