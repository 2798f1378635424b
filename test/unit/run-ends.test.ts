/**
 * The engine's side of the run-end outbox (src/engine/run-ends.ts; docs/architecture.md "Run ends"),
 * on a real in-memory SQLite store: a pass hands each consumer its entries and finishes them; a
 * handler that throws leaves its entries for the next pass; consumers without a handler are finished.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { RunEnds } from '../../src/engine/run-ends.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { RunEnd } from '../../src/store/store.js';
import { claimOne, complete, start } from '../store/fixtures.js';

async function storeWithEnds(n: number): Promise<SqliteStore> {
  const store = new SqliteStore(':memory:');
  for (let i = 0; i < n; i++) {
    await start(store, `w${i}`, 1000 + i, { a: {} });
    const c = await claimOne(store, 2000 + i, 'a');
    await complete(store, c.lease.lease_id, {}, 3000 + i);
  }
  return store;
}

test('a pass hands every ended run to its consumer once, then finishes it; unhandled consumers are finished too', async () => {
  const store = await storeWithEnds(130);
  try {
    const seen: string[] = [];
    const ends = new RunEnds(store, pino({ level: 'silent' }));
    ends.handle('follow', async (batch: readonly RunEnd[]) => {
      for (const e of batch) seen.push(`${e.workflow_id}#${e.run_number} ${e.state}`);
    });
    await ends.pass();
    assert.equal(seen.length, 130, 'more than one read of 100');
    assert.equal(new Set(seen).size, 130);
    assert.equal(seen[0], 'w0#1 success');
    for (const consumer of ['notify', 'follow', 'call'] as const) assert.deepEqual(await store.pendingRunEnds(consumer, 10), [], consumer);
    await ends.pass();
    assert.equal(seen.length, 130, 'nothing handed over twice by one server');
  } finally {
    await store.close();
  }
});

test('a handler that throws leaves its entries for the next pass, and the other consumers go on', async () => {
  const store = await storeWithEnds(2);
  try {
    let fail = true;
    const calls: number[] = [];
    const ends = new RunEnds(store, pino({ level: 'silent' }));
    ends.handle('notify', async (batch) => {
      calls.push(batch.length);
      if (fail) throw new Error('receiver down');
    });
    await ends.pass();
    assert.equal((await store.pendingRunEnds('notify', 10)).length, 2, 'left pending');
    assert.equal((await store.pendingRunEnds('call', 10)).length, 0, 'others finished');
    fail = false;
    await ends.pass();
    assert.deepEqual(calls, [2, 2]);
    assert.equal((await store.pendingRunEnds('notify', 10)).length, 0);
  } finally {
    await store.close();
  }
});

test('changes make one look soon, however many come', async () => {
  const store = await storeWithEnds(1);
  try {
    let batches = 0;
    const ends = new RunEnds(store, pino({ level: 'silent' }), 20);
    const handled = new Promise<void>((resolve) =>
      ends.handle('call', async () => {
        batches++;
        resolve();
      }),
    );
    for (let i = 0; i < 1000; i++) ends.afterChanges();
    await handled;
    await ends.pass();
    assert.equal(batches, 1);
    ends.stop();
  } finally {
    await store.close();
  }
});
