/** How the dashboard writes a workflow's trigger (README "Dashboard"); the next start is checked in test/browser/screenshots.test.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { triggerText } from '../../src/dashboard/triggers.js';

test('a schedule reads as its crons, with their time zones; other triggers as written', () => {
  assert.equal(triggerText('schedule: [{cron: 0 2 * * *}]'), 'schedule 0 2 * * *');
  assert.equal(triggerText('schedule: [{cron: 0 2 * * *}, {cron: 30 9 * * 1-5, timezone: Europe/Paris}]'), 'schedule 0 2 * * *; 30 9 * * 1-5 (Europe/Paris)');
  assert.equal(triggerText('push, schedule: [{cron: */5 * * * *, catch_up: none}]'), 'push, schedule */5 * * * *');
  assert.equal(triggerText('push, pull_request'), 'push, pull_request');
});
