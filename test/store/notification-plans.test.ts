/**
 * The notification statements every deliverer runs on each pass (README "Notifications") read only the
 * rows not yet final, through the partial index notifications_due, however many delivered ones pile
 * up; the list reads an index in its order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { QUERIES as SQLITE } from '../../src/store/sqlite/queries.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { QUERIES as PG } from '../../src/store/postgres/queries.js';
import { createDatabase } from '../helpers/postgres.js';

test('sqlite: the due notifications, the next due time and the list are index reads', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-notify-plan-'));
  try {
    const file = path.join(dir, 'weft.db');
    await new SqliteStore(file).close();
    const db = new Database(file, { readonly: true });
    try {
      const plan = (sql: string, ...args: unknown[]) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
      const due = plan(SQLITE.dueNotifications, 0, 10);
      assert.match(due, /SEARCH notifications USING INDEX notifications_due \(due_at_ms<\?\)/, due);
      assert.doesNotMatch(due, /TEMP B-TREE|\bSCAN\b/, due);
      const next = plan(SQLITE.nextNotificationDue);
      assert.match(next, /notifications_due/, next);
      assert.doesNotMatch(next, /\bSCAN notifications\b(?! USING)/, next);
      const list = plan(SQLITE.listNotifications, { limit: 10, offset: 0 });
      assert.doesNotMatch(list, /TEMP B-TREE/, list);
      const byStatus = plan(SQLITE.listNotificationsByStatus, { status: 'failed', limit: 10, offset: 0 });
      assert.match(byStatus, /USING INDEX notifications_status \(status=\?\)/, byStatus);
      assert.doesNotMatch(byStatus, /TEMP B-TREE/, byStatus);
      const ofRun = plan(SQLITE.listRunNotifications, { workflow_id: 'w', run_number: 1, status: null, limit: 10, offset: 0 });
      assert.match(ofRun, /USING INDEX notifications_target \(workflow_id=\? AND run_number=\?\)/, ofRun);
      const settled = plan(SQLITE.pruneNotifications, 0, 10);
      assert.match(settled, /notifications_settled/, settled);
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('postgres: the claim, the next due time and the pruning read their partial indexes', async () => {
  const db = await createDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await (await PostgresStore.open(db.url)).close();
    await sql.begin(async (tx) => {
      // A fresh table is tiny, where a sequential scan is cheapest; forbid it to see the index plan.
      await tx.unsafe('SET LOCAL enable_seqscan = off');
      await tx.unsafe('ANALYZE notifications');
      const plan = async (text: string, params: unknown[]) =>
        ((await tx.unsafe(`EXPLAIN ${text}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n');
      const claim = await plan(PG.claimNotifications, [0, 1000, 'c', 10]);
      assert.match(claim, /Index Scan using notifications_due/, claim);
      assert.doesNotMatch(claim, /Seq Scan/, claim);
      const next = await plan(PG.nextNotificationDue, []);
      assert.match(next, /notifications_due/, next);
      assert.doesNotMatch(next, /Seq Scan/, next);
      const prune = await plan(PG.pruneNotifications, [0, 10]);
      assert.match(prune, /notifications_settled/, prune);
      const byStatus = await plan(PG.listNotificationsByStatus, [10, 0, 'failed']);
      assert.match(byStatus, /notifications_status/, byStatus);
      assert.doesNotMatch(byStatus, /Sort|Seq Scan/, byStatus);
    });
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});
