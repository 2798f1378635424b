/**
 * The reads of workflows calling workflows (docs/architecture.md "Workflows calling workflows") are
 * reads of partial indexes in both stores, run on every reaper pass and after changes: the ready
 * calls off jobs_claim for the call label key, the orphaned child runs off runs_children, the calls
 * of a save off workflow_calls, never a pass over every job or run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { CALL_LABEL_KEY } from '../../src/domain/calls.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { QUERIES as SQLITE } from '../../src/store/sqlite/queries.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { QUERIES as PG } from '../../src/store/postgres/queries.js';
import { createDatabase } from '../helpers/postgres.js';

test('sqlite: ready calls, orphaned child runs and a save\'s calls are reads of their indexes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-call-plans-'));
  const file = path.join(dir, 'weft.db');
  try {
    await new SqliteStore(file).close();
    const db = new Database(file, { readonly: true });
    try {
      const plan = (sql: string, ...args: unknown[]) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
      const ready = plan(SQLITE.queuedCalls, CALL_LABEL_KEY, 0, 100);
      assert.match(ready, /SEARCH jobs USING INDEX jobs_claim \(label_key=\?/, ready);
      assert.doesNotMatch(ready, /TEMP B-TREE|\bSCAN\b/, ready);
      const orphans = plan(SQLITE.orphanedChildRuns, 100);
      assert.match(orphans, /(SCAN|SEARCH) r USING INDEX runs_children/, orphans);
      assert.match(orphans, /SEARCH j USING INDEX jobs_by_run/, orphans);
      assert.doesNotMatch(orphans, /SCAN (r|j|k|runs|jobs)\b(?! USING)/, orphans);
      const edges = plan(SQLITE.callEdges, '["a"]', '["b"]');
      assert.match(edges, /USING (COVERING )?INDEX (sqlite_autoindex_workflow_calls_1|workflow_calls_callee)/, edges);
      assert.match(edges, /workflow_calls_callee/, edges);
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('postgres: ready calls, orphaned child runs and a save\'s calls are reads of their indexes', async () => {
  const db = await createDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await (await PostgresStore.open(db.url)).close();
    await sql.begin(async (tx) => {
      // A fresh table is tiny, where a sequential scan is cheapest; forbid it to see the index plan.
      await tx.unsafe('SET LOCAL enable_seqscan = off');
      await tx.unsafe('ANALYZE jobs');
      await tx.unsafe('ANALYZE runs');
      const plan = async (text: string, params: unknown[]) =>
        ((await tx.unsafe(`EXPLAIN ${text}`, params as never[])) as unknown as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n');
      const ready = await plan(PG.queuedCalls, [CALL_LABEL_KEY, 0, 100]);
      assert.match(ready, /Index Scan using jobs_claim/, ready);
      assert.doesNotMatch(ready, /Sort|Seq Scan/, ready);
      const orphans = await plan(PG.orphanedChildRuns, [100]);
      assert.match(orphans, /Index (Only )?Scan using runs_children/, orphans);
      assert.match(orphans, /Index (Only )?Scan using jobs_by_run/, orphans);
      assert.doesNotMatch(orphans, /Seq Scan/, orphans);
      const edges = await plan(PG.callEdges, [['a'], ['b']]);
      assert.match(edges, /workflow_calls_pkey/, edges);
      assert.match(edges, /workflow_calls_callee/, edges);
      assert.doesNotMatch(edges, /Seq Scan/, edges);
    });
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});
