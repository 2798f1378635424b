/**
 * The notification statements every deliverer runs on each pass (README "Notifications") read only the
 * rows not yet final, through the partial index notifications_due, however many delivered ones pile
 * up; the list reads an index in its order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QUERIES as SQLITE } from '../../src/store/sqlite/queries.js';
import { QUERIES as PG } from '../../src/store/postgres/queries.js';
import { withPostgresPlans, withSqlitePlans } from '../helpers/plans.js';

test('sqlite: the due notifications, the next due time and the list are index reads', async () => {
  await withSqlitePlans((plan) => {
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
  });
});

test('postgres: the claim, the next due time and the pruning read their partial indexes', async () => {
  await withPostgresPlans(['notifications'], async (plan) => {
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
});
