import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { conditionHolds, needsResultEnvName, planCancel, propagate, type WaitingJob } from '../../src/domain/conditions.js';
import { DefinitionError, definitionHash, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { planRun } from '../../src/engine/run-plan.js';
import { upstreamEnvName } from '../../src/worker/shell.js';

const body = (value: unknown) => parseWorkflowObject(value, { source: 'request body', id: 'wf' });

function issues(value: unknown) {
  try {
    body(value);
  } catch (err) {
    assert.ok(err instanceof DefinitionError);
    return err.issues;
  }
  assert.fail('expected a DefinitionError');
}

describe('if: in definitions', () => {
  test('the four conditions, bare or wrapped in ${{ }}; success() is the default and leaves the definition as it was', () => {
    const def = parseWorkflowText(
      `
jobs:
  a: { run: x }
  b: { run: x, needs: a, if: always() }
  c: { run: x, needs: a, if: "\${{ failure() }}" }
  d: { run: x, needs: a, if: " cancelled( ) " }
  e: { run: x, needs: a, if: success() }
`,
      { source: 'ci.yml', format: 'yaml', id: 'ci' },
    );
    assert.deepEqual(def.jobs.map((j) => j.condition), [undefined, 'always', 'failure', 'cancelled', undefined]);
    const plain = body({ jobs: { a: { run: 'x' }, e: { run: 'x', needs: 'a' } } });
    const explicit = body({ jobs: { a: { run: 'x' }, e: { run: 'x', needs: 'a', if: 'success()' } } });
    assert.equal(definitionHash(explicit), definitionHash(plain));
    assert.notEqual(definitionHash(body({ jobs: { a: { run: 'x' }, e: { run: 'x', needs: 'a', if: 'always()' } } })), definitionHash(plain));
  });

  test('anything else is an issue naming the job and `if`, with a hint', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['always', /did you mean 'always\(\)'\?/],
      ['!cancelled()', /must be one of success\(\), failure\(\), always\(\), cancelled\(\), got string '!cancelled\(\)'; expressions are not supported/],
      ["${{ needs.a.result == 'failure' }}", /expressions are not supported/],
      [true, /must be a string, got boolean true/],
      ['', /must be one of/],
    ];
    for (const [value, message] of cases) {
      const found = issues({ jobs: { a: { run: 'x' }, b: { run: 'x', needs: 'a', if: value } } });
      assert.equal(found.length, 1, JSON.stringify(found));
      assert.deepEqual([found[0]!.job, found[0]!.field], ['b', 'if'], String(value));
      assert.match(found[0]!.message, message);
    }
    const alias = issues({ jobs: { a: { run: 'x', when: 'always()' } } });
    assert.match(alias[0]!.message, /unknown key 'when' \(did you mean 'if'\?\)/);
  });

  test('the array form has no `if`, and says where it is read', () => {
    const found = issues({ jobs: [{ id: 'a', command: 'x', if: 'always()' }] });
    assert.deepEqual([found[0]!.job, found[0]!.field], ['a', 'if']);
    assert.match(found[0]!.message, /'if' is read only in the contract form/);
  });
});

describe('condition rules', () => {
  const waiting = (over: Partial<WaitingJob>): WaitingJob => ({
    job_id: 'x', status: 'pending', condition: 'success', pending_needs: 1, needs_results: {}, failed_upstream: false,
    run_cancelled: false, dependents: [], error: null, ...over,
  });

  test('what holds once every need ended', () => {
    const table: Array<[Partial<WaitingJob>, boolean]> = [
      [{ condition: 'success' }, true],
      [{ condition: 'success', needs_results: { a: 'skipped' } }, false],
      [{ condition: 'success', failed_upstream: true }, false],
      [{ condition: 'failure' }, false],
      [{ condition: 'failure', failed_upstream: true }, true],
      [{ condition: 'failure', failed_upstream: true, run_cancelled: true }, false],
      [{ condition: 'always', needs_results: { a: 'failure' }, run_cancelled: true }, true],
      [{ condition: 'cancelled' }, false],
      [{ condition: 'cancelled', run_cancelled: true }, true],
    ];
    for (const [over, holds] of table) assert.equal(conditionHolds(waiting(over)), holds, JSON.stringify(over));
  });

  test('a diamond below a failure: each job reached is decided once, the always() join after both its needs', () => {
    const rows = new Map<string, WaitingJob>([
      ['b', waiting({ job_id: 'b', dependents: ['j'] })],
      ['c', waiting({ job_id: 'c', dependents: ['j'], condition: 'failure' })],
      ['j', waiting({ job_id: 'j', pending_needs: 2, condition: 'always' })],
    ]);
    const changed = propagate(
      [{ job_id: 'a', result: 'failure', failed_upstream: true, dependents: ['b', 'c'], skip_reason: 'upstream job "a" failed' }],
      (id) => rows.get(id),
    );
    assert.deepEqual(changed.map((j) => [j.job_id, j.status]), [['b', 'skipped'], ['c', 'queued'], ['j', 'pending']]);
    assert.deepEqual([rows.get('j')!.pending_needs, rows.get('j')!.needs_results, rows.get('j')!.failed_upstream], [1, { b: 'skipped' }, true]);
  });

  test('a cancel spares always() and cancelled() once', () => {
    const jobs = [waiting({ job_id: 'a' }), waiting({ job_id: 'k', condition: 'always' }), waiting({ job_id: 'm', condition: 'cancelled', run_cancelled: true })];
    const plan = planCancel(jobs);
    assert.deepEqual([plan.cancelled.map((j) => j.job_id), plan.spared.map((j) => j.job_id)], [['a', 'm'], ['k']]);
    assert.equal(jobs[1]!.run_cancelled, true);
  });

  test('a run starts with failure() and cancelled() roots skipped, and what they decide below them', () => {
    const def = body({
      jobs: {
        a: { run: 'x' },
        onfail: { run: 'x', if: 'failure()' },
        below: { run: 'x', needs: 'onfail' },
        cleanup: { run: 'x', needs: 'onfail', if: 'always()' },
        later: { run: 'x', needs: ['a', 'onfail'], if: 'always()' },
      },
    });
    const { jobs } = planRun(def, 5000);
    const by = new Map(jobs.map((j) => [j.job_id, j]));
    assert.deepEqual([...by.values()].map((j) => [j.job_id, j.status]), [
      ['a', 'queued'], ['onfail', 'skipped'], ['below', 'skipped'], ['cleanup', 'queued'], ['later', 'pending'],
    ]);
    assert.deepEqual([by.get('onfail')!.error, by.get('onfail')!.finished_at_ms], ['if: failure() is false at the start of the run', 5000]);
    assert.deepEqual(
      [by.get('cleanup')!.enqueued_at_ms, by.get('cleanup')!.needs_results, by.get('cleanup')!.upstream_outputs],
      [5000, { onfail: 'skipped' }, { onfail: {} }],
    );
    assert.deepEqual([by.get('later')!.pending_needs, by.get('a')!.conditional_dependents, by.get('below')!.conditional_dependents], [1, true, false]);
  });

  test('WEFT_NEEDS_<JOB>_RESULT cleans the job id as UPSTREAM_<JOB>_<KEY> does', () => {
    assert.equal(needsResultEnvName('build-linux.x64'), 'WEFT_NEEDS_BUILD_LINUX_X64_RESULT');
    assert.equal(upstreamEnvName('build-linux.x64', 'k'), 'UPSTREAM_BUILD_LINUX_X64_K');
  });
});
