import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DefinitionError, type DefinitionIssue, definitionHash, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { nextFireAfter, planFires } from '../../src/domain/schedule.js';
import type { Schedule, WorkflowDefinition } from '../../src/domain/model.js';

const yaml = (text: string): WorkflowDefinition => parseWorkflowText(text, { source: 'w.yml', format: 'yaml', id: 'w' });
const body = (on: unknown): WorkflowDefinition => parseWorkflowObject({ on, jobs: { a: { run: 'x' } } }, { source: 'request body', id: 'w' });

function issues(on: unknown): DefinitionIssue[] {
  try {
    body(on);
  } catch (err) {
    assert.ok(err instanceof DefinitionError, String(err));
    return err.issues;
  }
  assert.fail(`on: ${JSON.stringify(on)} was accepted`);
}

function expectIssue(on: unknown, field: string, message: RegExp): void {
  const found = issues(on);
  assert.ok(found.some((i) => i.job === null && i.field === field && message.test(i.message)), `no issue at ${field} ~ ${message} in ${JSON.stringify(found)}`);
}

const at = (iso: string) => Date.parse(iso);

describe('on.schedule in definitions', () => {
  test('a scheduled workflow may declare inputs only with defaults: its runs start without a body', () => {
    const def = yaml('on: { schedule: [{ cron: "0 2 * * *" }] }\ninputs: { branch: { default: main } }\njobs: { a: { run: x } }');
    assert.equal(def.inputs?.branch?.default, 'main');
    assert.throws(
      () => yaml('on: { schedule: [{ cron: "0 2 * * *" }] }\ninputs: { branch: { required: true } }\njobs: { a: { run: x } }'),
      (err: unknown) =>
        err instanceof DefinitionError && err.issues.some((i) => i.field === 'inputs.branch' && /cannot have a required input/.test(i.message)),
    );
  });

  test('a schedule is read with its defaults; the trigger text is what it always was', () => {
    const def = yaml('on:\n  push: { branches: [main] }\n  schedule:\n    - cron: "0 2 * * *"\n    - { cron: "30 6 * * 1-5", timezone: Europe/Paris, catch_up: none }\njobs: { a: { run: x } }');
    assert.deepEqual(def.schedules, [
      { cron: '0 2 * * *', timezone: null, catch_up: 'latest' },
      { cron: '30 6 * * 1-5', timezone: 'Europe/Paris', catch_up: 'none' },
    ]);
    assert.equal(def.trigger, 'push: {branches: [main]}, schedule: [{cron: 0 2 * * *}, {cron: 30 6 * * 1-5, timezone: Europe/Paris, catch_up: none}]');
  });

  test('nicknames are accepted; a workflow without schedules has no schedules key (its hash is unchanged)', () => {
    assert.deepEqual(body({ schedule: [{ cron: '@daily' }] }).schedules, [{ cron: '@daily', timezone: null, catch_up: 'latest' }]);
    const plain = body('push');
    assert.equal('schedules' in plain, false);
    assert.equal(definitionHash(plain), definitionHash({ id: 'w', name: 'w', trigger: 'push', env: {}, jobs: plain.jobs }));
    assert.equal('schedules' in body({ push: null, workflow_dispatch: {} }), false);
    // Free text as before: a string, a list.
    assert.equal(body(['push', 'pull_request']).trigger, 'push, pull_request');
    assert.equal(body('anything at all').trigger, 'anything at all');
  });

  test('unknown event keys are rejected with a hint', () => {
    expectIssue({ shedule: [{ cron: '0 2 * * *' }] }, 'on.shedule', /did you mean 'schedule'\?/);
    expectIssue({ push: null, release: {} }, 'on.release', /unknown key 'release' \(allowed: push, pull_request, workflow_dispatch, schedule, workflow_call, webhook, event, workflow_run\)/);
    expectIssue({ cron: '0 2 * * *' }, 'on.cron', /did you mean 'schedule'\?/);
  });

  test('schedule without times, as a string or a list item, is an error', () => {
    expectIssue('schedule', 'on', /needs its times/);
    expectIssue(['push', 'schedule'], 'on[1]', /needs its times/);
  });

  test('bad cron expressions name the field', () => {
    const s = (cron: unknown) => ({ schedule: [{ cron }] });
    expectIssue(s('0 0 2 * * *'), 'on.schedule[0].cron', /five fields.*got 6 \(seconds are not supported\)/);
    expectIssue(s('* * * *'), 'on.schedule[0].cron', /five fields.*got 4/);
    expectIssue(s('61 * * * *'), 'on.schedule[0].cron', /invalid cron expression '61 \* \* \* \*'.*minute/);
    expectIssue(s('a b c d e'), 'on.schedule[0].cron', /invalid cron expression/);
    expectIssue(s('0 0 30 2 *'), 'on.schedule[0].cron', /never matches a date/);
    expectIssue(s('@reboot'), 'on.schedule[0].cron', /unknown nickname '@reboot'/);
    expectIssue(s(''), 'on.schedule[0].cron', /must not be empty/);
    expectIssue(s(5), 'on.schedule[0].cron', /must be a string, got number 5/);
    expectIssue({ schedule: [{ timezone: 'UTC' }] }, 'on.schedule[0].cron', /is required/);
  });

  test('bad time zones, catch_up values, keys and shapes name the field', () => {
    expectIssue({ schedule: [{ cron: '0 2 * * *', timezone: 'Mars/Olympus' }] }, 'on.schedule[0].timezone', /unknown time zone 'Mars\/Olympus'/);
    expectIssue({ schedule: [{ cron: '0 2 * * *', timezone: 1 }] }, 'on.schedule[0].timezone', /must be a string/);
    expectIssue({ schedule: [{ cron: '0 2 * * *', catch_up: 'all' }] }, 'on.schedule[0].catch_up', /must be one of latest, none, got string 'all'/);
    expectIssue({ schedule: [{ cron: '0 2 * * *', catch_up: true }] }, 'on.schedule[0].catch_up', /must be one of latest, none/);
    expectIssue({ schedule: [{ cron: '0 2 * * *', tz: 'UTC' }] }, 'on.schedule[0].tz', /did you mean 'timezone'\?/);
    expectIssue({ schedule: [{ cron: '0 2 * * *', 'catch-up': 'none' }] }, 'on.schedule[0].catch-up', /did you mean 'catch_up'\?/);
    expectIssue({ schedule: '0 2 * * *' }, 'on.schedule', /must be a list of \{ cron, timezone\?, catch_up\? \}, got string/);
    expectIssue({ schedule: { cron: '0 2 * * *' } }, 'on.schedule', /must be a list/);
    expectIssue({ schedule: null }, 'on.schedule', /must be a list/);
    expectIssue({ schedule: [] }, 'on.schedule', /at least one/);
    expectIssue({ schedule: ['0 2 * * *'] }, 'on.schedule[0]', /must be a mapping/);
    expectIssue({ schedule: Array.from({ length: 11 }, () => ({ cron: '0 2 * * *' })) }, 'on.schedule', /at most 10 schedules per workflow, got 11/);
    // Every problem of every schedule at once.
    const all = issues({ schedule: [{ cron: 'x' }, { cron: '0 2 * * *', timezone: 'No/Where' }] });
    assert.deepEqual(all.map((i) => i.field), ['on.schedule[0].cron', 'on.schedule[1].timezone']);
  });
});

describe('fire times', () => {
  const daily: Schedule = { cron: '0 2 * * *', timezone: null, catch_up: 'latest' };
  const paris: Schedule = { cron: '0 2 * * *', timezone: 'Europe/Paris', catch_up: 'latest' };

  test('the next fire time is strictly after the reference, in UTC unless a time zone says otherwise', () => {
    assert.equal(nextFireAfter([daily], at('2026-06-01T01:59:59.999Z')), at('2026-06-01T02:00:00Z'));
    assert.equal(nextFireAfter([daily], at('2026-06-01T02:00:00Z')), at('2026-06-02T02:00:00Z'));
    assert.equal(nextFireAfter([paris], at('2026-06-01T00:00:00Z')), at('2026-06-02T00:00:00Z'), '02:00 in Paris is 00:00 UTC in summer');
    assert.equal(nextFireAfter([daily, paris], at('2026-06-01T01:00:00Z')), at('2026-06-01T02:00:00Z'));
    assert.equal(nextFireAfter([], 0), null);
    assert.equal(nextFireAfter(undefined, 0), null);
  });

  test('on time: the due time fires and the next one follows', () => {
    const due = at('2026-06-01T02:00:00Z');
    assert.deepEqual(planFires([daily], due, due + 3000, 60_000), { fire_at_ms: due, dropped_at_ms: null, next_fire_at_ms: at('2026-06-02T02:00:00Z') });
  });

  test('missed times: catch_up latest fires once for the latest, none drops them', () => {
    const due = at('2026-06-01T02:00:00Z');
    const now = at('2026-06-04T12:00:00Z');
    const next = at('2026-06-05T02:00:00Z');
    assert.deepEqual(planFires([daily], due, now, 60_000), { fire_at_ms: at('2026-06-04T02:00:00Z'), dropped_at_ms: null, next_fire_at_ms: next });
    const none = { ...daily, catch_up: 'none' as const };
    assert.deepEqual(planFires([none], due, now, 60_000), { fire_at_ms: null, dropped_at_ms: at('2026-06-04T02:00:00Z'), next_fire_at_ms: next });
    // Within the grace a time is on time even with none.
    assert.equal(planFires([none], due, due + 59_000, 60_000).fire_at_ms, due);
    // Two schedules due together start one run, for the later time.
    const hourly: Schedule = { cron: '0 * * * *', timezone: null, catch_up: 'none' };
    assert.deepEqual(planFires([daily, hourly], due, at('2026-06-01T03:00:10Z'), 60_000), {
      fire_at_ms: at('2026-06-01T03:00:00Z'),
      dropped_at_ms: null,
      next_fire_at_ms: at('2026-06-01T04:00:00Z'),
    });
  });
});
