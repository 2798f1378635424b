/**
 * The reads of workflows calling workflows (docs/architecture.md "Workflows calling workflows") are
 * reads of partial indexes in both stores, run on every reaper pass and after changes: the ready
 * calls off jobs_claim for the call label key, the orphaned child runs off runs_children, the calls
 * of a save off workflow_calls, never a pass over every job or run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CALL_LABEL_KEY } from '../../src/domain/calls.js';
import { QUERIES as SQLITE } from '../../src/store/sqlite/queries.js';
import { QUERIES as PG } from '../../src/store/postgres/queries.js';
import { withPostgresPlans, withSqlitePlans } from '../helpers/plans.js';

test('sqlite: ready calls, orphaned child runs and a save\'s calls are reads of their indexes', async () => {
  await withSqlitePlans((plan) => {
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
  });
});

test('postgres: ready calls, orphaned child runs and a save\'s calls are reads of their indexes', async () => {
  await withPostgresPlans(['jobs', 'runs'], async (plan) => {
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
});
