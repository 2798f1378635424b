/**
 * Approval gates (README "Approvals"): `approval:` as the definition reader takes it (every problem
 * named with its job and field), written back by the definition view, the states' vocabulary for
 * existing clients, the run plan's roots and the rules of conditions.ts for gated jobs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stringify } from 'yaml';
import { DefinitionError, type DefinitionIssue, definitionDocument, definitionHash, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { endedJob, planCancel, propagate, type WaitingJob } from '../../src/domain/conditions.js';
import { compatJobStatus, STATUS_FILTER_VALUES } from '../../src/protocol/states.js';
import { planRun } from '../../src/engine/run-plan.js';
import { accessOf, allows } from '../../src/domain/access.js';

const yaml = (text: string) => parseWorkflowText(text, { source: 'ci.yml', format: 'yaml', id: 'ci' });

function issues(text: string): DefinitionIssue[] {
  try {
    yaml(text);
  } catch (err) {
    assert.ok(err instanceof DefinitionError, String(err));
    return err.issues;
  }
  return assert.fail('expected a DefinitionError');
}

function expectIssue(list: DefinitionIssue[], job: string, field: string, message: RegExp): void {
  assert.ok(list.some((i) => i.job === job && i.field === field && message.test(i.message)), `no {${job}, ${field}, ~${message}} in ${JSON.stringify(list, null, 2)}`);
}

describe('approval: in a definition', () => {
  test('a gate alone, a gate on its own command, and `true`; absent or false leaves the job (and its hash) as before', () => {
    const def = yaml([
      'jobs:',
      '  build: { run: make }',
      '  gate: { needs: build, approval: { message: "Ship it?", timeout_secs: 3600 } }',
      '  deploy: { needs: gate, run: ./deploy, approval: true }',
      '  plain: { run: x, approval: false }',
    ].join('\n'));
    const by = Object.fromEntries(def.jobs.map((j) => [j.id, j]));
    assert.deepEqual([by.gate!.command, by.gate!.approval], ['', { message: 'Ship it?', timeout_secs: 3600 }]);
    assert.deepEqual([by.deploy!.command, by.deploy!.approval], ['./deploy', { message: null, timeout_secs: null }]);
    assert.equal('approval' in by.plain!, false);
    assert.equal(definitionHash(yaml('jobs:\n  a: { run: x, approval: false }\n')), definitionHash(yaml('jobs:\n  a: { run: x }\n')));
  });

  test('bad values, unknown keys and combinations are named with job and field', () => {
    expectIssue(issues('jobs:\n  a: { approval: { timeout_secs: 0 } }'), 'a', 'approval.timeout_secs', /integer >= 1/);
    expectIssue(issues('jobs:\n  a: { approval: { timeout_secs: 1.5 } }'), 'a', 'approval.timeout_secs', /integer/);
    expectIssue(issues('jobs:\n  a: { approval: { timeout_secs: 2592001 } }'), 'a', 'approval.timeout_secs', /at most 2592000 \(30 days\)/);
    expectIssue(issues('jobs:\n  a: { approval: { message: 3 } }'), 'a', 'approval.message', /must be a string/);
    expectIssue(issues(`jobs:\n  a: { approval: { message: "${'x'.repeat(2001)}" } }`), 'a', 'approval.message', /at most 2000 characters/);
    expectIssue(issues('jobs:\n  a: { approval: { timeout: 5 } }'), 'a', 'approval.timeout', /timeout_secs/);
    expectIssue(issues('jobs:\n  a: { approval: yes please }'), 'a', 'approval', /must be true or an object/);
    expectIssue(issues('jobs:\n  a: { approve: true, run: x }'), 'a', 'approve', /approval/);
    expectIssue(issues('jobs:\n  a: { run: x, approval: true, strategy: { matrix: { os: [l, m] } } }'), 'a', 'approval', /cannot be combined with 'strategy'/);
    expectIssue(issues('jobs:\n  a: { run: "echo ::set-output xs=[]" }\n  b: { needs: a, for_each: "${{ needs.a.outputs.xs }}", run: x, approval: true }'), 'b', 'approval', /cannot be combined with 'for_each'/);
    expectIssue(issues('jobs:\n  a: { approval: false }'), 'a', 'run', /job has no command/);
    expectIssue(issues('jobs:\n  a: { name: nothing }'), 'a', 'run', /job has no command/);
    expectIssue(issues('jobs:\n  a: { approval: true, artifacts: [x] }'), 'a', 'artifacts', /uploads nothing/);
    // The array form is workflow-graph's shape, which has no gates.
    assert.throws(() => parseWorkflowObject({ id: 'w', name: 'w', jobs: [{ id: 'a', command: 'x', approval: true }] }, { source: 'body' }), DefinitionError);
  });

  test('written back by the definition view, it parses to the same definition', () => {
    const def = yaml('jobs:\n  b: { run: x }\n  g: { needs: b, approval: { message: m, timeout_secs: 9 } }\n  h: { needs: g, run: y, approval: true }\n');
    const doc = definitionDocument(def);
    assert.deepEqual(doc.jobs.g, { needs: ['b'], approval: { message: 'm', timeout_secs: 9 } });
    assert.deepEqual(doc.jobs.h, { needs: ['g'], run: 'y', approval: {} });
    assert.deepEqual(parseWorkflowText(stringify(doc), { source: 'ci.yml', format: 'yaml', id: 'ci' }), def);
  });
});

describe('the state awaiting_approval', () => {
  test("shows as queued to workflow-graph's clients, and is a value of the list's status filter", () => {
    assert.equal(compatJobStatus('awaiting_approval'), 'queued');
    assert.ok(STATUS_FILTER_VALUES.includes('awaiting_approval'));
  });

  test('a run plan makes a gated root wait from the start (timed from then) and marks the needs of a gate for the general way', () => {
    const def = yaml('jobs:\n  gate: { approval: { timeout_secs: 5 } }\n  b: { needs: gate, run: x }\n  c: { needs: b, run: y, approval: true }\n');
    const { jobs } = planRun(def, 1000);
    const by = Object.fromEntries(jobs.map((j) => [j.job_id, j]));
    assert.deepEqual([by.gate!.status, by.gate!.enqueued_at_ms, by.gate!.approval?.requested_at_ms, by.gate!.approval?.deadline_ms], ['awaiting_approval', 0, 1000, 6000]);
    assert.deepEqual([by.c!.status, by.c!.approval?.requested_at_ms], ['pending', null]);
    assert.equal(by.b!.conditional_dependents, true, "b's end must take the way that can make c wait");
    assert.equal(by.gate!.conditional_dependents, false);
  });

  test('propagate makes a ready gated job wait instead of queueing it; a cancel never spares a wait', () => {
    const job = (id: string, over: Partial<WaitingJob> = {}): WaitingJob => ({
      job_id: id, status: 'pending', condition: 'success', pending_needs: 1, needs_results: {}, failed_upstream: false, run_cancelled: false, dependents: [], error: null, ...over,
    });
    const rows = new Map([['g', job('g', { approval: { message: null, timeout_secs: null } })], ['p', job('p')]]);
    const changed = propagate([endedJob({ job_id: 'a', status: 'success', failed_upstream: false, dependents: ['g', 'p'], error: null })], (id) => rows.get(id));
    assert.deepEqual(changed.map((j) => [j.job_id, j.status]), [['g', 'awaiting_approval'], ['p', 'queued']]);
    const plan = planCancel([job('w', { status: 'awaiting_approval', condition: 'always', approval: {} }), job('s', { condition: 'always' })]);
    assert.deepEqual([plan.cancelled.map((j) => j.job_id), plan.spared.map((j) => j.job_id)], [['w'], ['s']]);
  });
});

test('the approver role reads and decides, and nothing else; admin decides too', () => {
  const approve = accessOf('POST', '/api/workflows/:id/runs/:run/jobs/:job/approve');
  assert.deepEqual([allows('approver', approve), allows('admin', approve), allows('read', approve), allows('worker', approve)], [true, true, false, false]);
  assert.equal(allows('approver', accessOf('GET', '/api/workflows/:id/status')), true);
  assert.equal(allows('approver', accessOf('POST', '/api/workflows/:id/run')), false);
  assert.equal(allows('approver', accessOf('POST', '/api/jobs/claim')), false);
});
