import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTemplate, substitute } from '../../src/domain/expressions.js';
import { expandMatrix, groupOfInstance, instanceId, instanceName, matrixEnvName } from '../../src/domain/matrix.js';
import { DefinitionError, parseWorkflowObject } from '../../src/definitions/index.js';
import { planRun, keptJobs } from '../../src/engine/run-plan.js';
import { resolveEnv } from '../../src/engine/needs-values.js';
import type { JobRecord } from '../../src/store/store.js';

const body = (value: unknown) => parseWorkflowObject(value, { source: 'request body', id: 'wf' });

function issues(value: unknown) {
  try {
    body(value);
  } catch (err) {
    assert.ok(err instanceof DefinitionError);
    return err.issues.map((i) => ({ job: i.job, field: i.field, message: i.message }));
  }
  assert.fail('expected a DefinitionError');
}

describe('matrix expansion (GitHub rules)', () => {
  test('product with the first key varying slowest; exclude by partial match; include merged or added', () => {
    const combos = expandMatrix(
      [['os', ['linux', 'mac']], ['node', [18, 20, 22]]],
      [{ os: 'linux', experimental: true }, { os: 'windows', node: 20 }, { node: 22, npm: 10 }],
      [{ os: 'mac', node: 18 }],
    );
    assert.deepEqual(combos, [
      { os: 'linux', node: 18, experimental: true },
      { os: 'linux', node: 20, experimental: true },
      { os: 'linux', node: 22, experimental: true, npm: 10 },
      { os: 'mac', node: 20 },
      { os: 'mac', node: 22, npm: 10 },
      { os: 'windows', node: 20 },
    ]);
  });

  test('an include entry may overwrite values added by an earlier include, never the original ones', () => {
    const combos = expandMatrix([['fruit', ['apple', 'pear']], ['animal', ['cat', 'dog']]], [
      { color: 'green' },
      { color: 'pink', animal: 'cat' },
      { fruit: 'apple', shape: 'circle' },
      { fruit: 'banana' },
      { fruit: 'banana', animal: 'cat' },
    ], []);
    // GitHub's documented example.
    assert.deepEqual(combos, [
      { fruit: 'apple', animal: 'cat', color: 'pink', shape: 'circle' },
      { fruit: 'apple', animal: 'dog', color: 'green', shape: 'circle' },
      { fruit: 'pear', animal: 'cat', color: 'pink' },
      { fruit: 'pear', animal: 'dog', color: 'green' },
      { fruit: 'banana' },
      { fruit: 'banana', animal: 'cat' },
    ]);
  });

  test('ids, names and env names', () => {
    assert.equal(instanceId('test', 3), 'test~3');
    assert.equal(groupOfInstance('test~3'), 'test');
    assert.equal(groupOfInstance('test'), null);
    assert.equal(instanceName('test', ['linux', 20, { a: 1 }]), 'test (linux, 20, {"a":1})');
    assert.equal(matrixEnvName('node-version'), 'WEFT_MATRIX_NODE_VERSION');
  });
});

describe('${{ }} values', () => {
  test('parsed into references; anything but a value is refused', () => {
    const p = parseTemplate('a ${{ matrix.os }} b ${{needs.plan.outputs.shards}}');
    assert.ok('parts' in p);
    assert.equal(substitute('x-${{ matrix.os }}-${{ inputs.v }}', (r) => (r.kind === 'matrix' ? 'linux' : undefined)), 'x-linux-${{ inputs.v }}');
    for (const bad of ['${{ github.sha }}', '${{ matrix.os == 1 }}', '${{ toJSON(matrix) }}', '${{ matrix.os ']) {
      assert.ok('error' in parseTemplate(bad), bad);
    }
  });

  test('definition errors name job and field: unknown matrix key, need that is not one, run-time values in run', () => {
    const got = issues({
      inputs: { v: { default: '1' } },
      jobs: {
        plan: { run: 'x' },
        test: {
          strategy: { matrix: { os: ['a'] } },
          name: 'T ${{ matrix.oss }}',
          needs: ['plan'],
          env: { A: '${{ needs.other.outputs.k }}', B: '${{ needs.plan.outputs.k }}', C: '${{ inputs.nope }}' },
          run: 'echo ${{ inputs.v }} ${{ matrix.os }}',
        },
        steps: { steps: [{ run: 'echo ${{ needs.plan.result }}' }], needs: ['plan'], labels: ['${{ needs.plan.outputs.pool }}'] },
      },
    });
    assert.deepEqual(got.map((i) => [i.job, i.field]), [
      ['test', 'name'], ['test', 'env.A'], ['test', 'env.C'], ['test', 'run'], ['steps', 'labels[0]'], ['steps', 'steps'],
    ]);
    assert.match(got[0]!.message, /unknown matrix key 'oss'/);
    assert.match(got[1]!.message, /'needs.other' is not a need/);
    assert.match(got[3]!.message, /Pass it through env/);
  });

  test('a matrix of more than 256 instances, or of none, is a definition error', () => {
    const big = issues({ jobs: { t: { run: 'x', strategy: { matrix: { a: Array.from({ length: 17 }, (_, i) => i), b: Array.from({ length: 16 }, (_, i) => i) } } } } });
    assert.match(big[0]!.message, /272 instances; at most 256/);
    const none = issues({ jobs: { t: { run: 'x', strategy: { matrix: { a: [1] , exclude: [{ a: 1 }] } } } } });
    assert.match(none[0]!.message, /no combination/);
    const label = issues({ jobs: { t: { run: 'x', labels: ['${{ matrix.os }}'], strategy: { matrix: { os: ['ok', 'bad\u0007'] } } } } });
    const proto = issues(JSON.parse('{"jobs": {"t": {"run": "x", "strategy": {"matrix": {"a": [1], "include": [{"__proto__": {"x": 1}}]}}}}}'));
    assert.deepEqual([proto[0]!.field, proto[0]!.message], ['strategy.matrix.include[0].__proto__', "invalid matrix key '__proto__'"]);
    assert.deepEqual([label[0]!.job, label[0]!.field], ['t', 'labels[0]']);
  });
});

describe('a run of a matrix workflow', () => {
  const def = body({
    inputs: { tier: { default: 'gold' } },
    jobs: {
      test: {
        strategy: { matrix: { os: ['linux', 'mac'], node: [20, 22], exclude: [{ os: 'mac', node: 20 }] }, max_parallel: 2 },
        labels: ['${{ matrix.os }}', 'tier-${{ inputs.tier }}'],
        env: { OS: '${{ matrix.os }}' },
        run: 'echo ${{ matrix.node }}',
      },
      report: { needs: ['test'], env: { ALL: '${{ needs.test.outputs.v }}', R: '${{ needs.test.result }}' }, run: 'echo "$ALL"' },
    },
  });

  test('instances with ids, names, labels, env, commands; the need lists every instance', () => {
    const { jobs } = planRun(def, 1000, { inputs: { tier: 'gold' } });
    assert.deepEqual(jobs.map((j) => [j.job_id, j.name, j.labels, j.command, j.env.OS, j.env.WEFT_MATRIX_NODE, j.status, j.max_parallel, j.fail_fast]), [
      ['test~0', 'test (linux, 20)', ['linux', 'tier-gold'], 'echo 20', 'linux', '20', 'queued', 2, true],
      ['test~1', 'test (linux, 22)', ['linux', 'tier-gold'], 'echo 22', 'linux', '22', 'queued', 2, true],
      ['test~2', 'test (mac, 22)', ['mac', 'tier-gold'], 'echo 22', 'mac', '22', 'queued', 2, true],
      ['report', 'report', [], 'echo "$ALL"', undefined, undefined, 'pending', null, false],
    ]);
    assert.deepEqual(jobs[3]!.needs, ['test~0', 'test~1', 'test~2']);
    assert.deepEqual(jobs[0]!.dependents, ['report']);
  });

  test('needs values of a group: outputs as a JSON array in index order, one result for the whole group', () => {
    const report = planRun(def, 1000).jobs[3]! as unknown as JobRecord;
    const env = resolveEnv({
      ...report,
      upstream_outputs: { 'test~0': { v: 'a' }, 'test~1': {}, 'test~2': { v: 'c' } },
      needs_results: { 'test~1': 'skipped' },
    });
    assert.deepEqual([env.ALL, env.R], ['["a",null,"c"]', 'skipped']);
  });

  test('a re-run of failed jobs runs the failed instances again and keeps the others', () => {
    const prev = planRun(def, 1000).jobs.map((j, i) => ({ ...j, row_id: i + 1, run_number: 1, status: j.job_id === 'test~1' ? 'failed' : 'success' }) as JobRecord);
    prev[3]!.status = 'skipped';
    assert.deepEqual([...keptJobs(def, prev, { only: 'failed' }).keys()], ['test~0', 'test~2']);
    assert.deepEqual([...keptJobs(def, prev.map((j) => ({ ...j, status: 'success' as const })), { from: 'test' }).keys()], []);
  });
});

describe('for_each in definitions', () => {
  test('must be an output of one of the job\'s needs; no matrix beside it; item only where it is allowed', () => {
    const got = issues({
      jobs: {
        plan: { run: 'x' },
        a: { needs: 'plan', for_each: '${{ needs.other.outputs.list }}', run: 'x' },
        b: { needs: 'plan', for_each: 'plain text', run: 'x' },
        c: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', strategy: { matrix: { k: [1] } }, run: 'x' },
        d: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', labels: ['${{ item }}'], run: 'echo ${{ item }}' },
        e: { run: 'x', env: { I: '${{ item.k }}' } },
      },
    });
    assert.deepEqual(got.map((i) => [i.job, i.field]), [
      ['a', 'for_each'], ['b', 'for_each'], ['c', 'strategy.matrix'], ['d', 'labels[0]'], ['d', 'run'], ['e', 'env.I'],
    ]);
    assert.match(got[0]!.message, /'needs.other' is not a need/);
    assert.match(got[4]!.message, /Pass it through env/);
    assert.match(got[5]!.message, /has no for_each/);
  });

  test('a for_each job is one pending row until its need completes; jobs below it need it by its own id', () => {
    const def = body({
      jobs: {
        plan: { run: 'x' },
        shard: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', strategy: { max_parallel: 3, fail_fast: false }, run: 'x' },
        join: { needs: 'shard', run: 'x' },
      },
    });
    const { jobs } = planRun(def, 1000);
    assert.deepEqual(jobs.map((j) => [j.job_id, j.status, j.group_id, j.for_each, j.max_parallel, j.fail_fast, j.needs]), [
      ['plan', 'queued', null, null, null, false, []],
      ['shard', 'pending', 'shard', { job: 'plan', key: 'list' }, 3, false, ['plan']],
      ['join', 'pending', null, null, null, false, ['shard']],
    ]);
    assert.equal(jobs[0]!.conditional_dependents, true, 'the need of a for_each job ends the general way, which expands it');
  });
});

test('a re-run keeps the need of a fan-out and expands the fan-out again from its earlier output, at the start', () => {
  const def = body({
    jobs: {
      plan: { run: 'x' },
      shard: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', run: 'x' },
      join: { needs: 'shard', run: 'x' },
    },
  });
  const prev = [
    { job_id: 'plan', status: 'success', outputs: { list: '["a","b"]' } },
    { job_id: 'shard~0', status: 'success', outputs: {} },
    { job_id: 'shard~1', status: 'failed', outputs: null },
    { job_id: 'join', status: 'skipped', outputs: null },
  ].map((j, i) => ({ ...planRun(def, 1000).jobs[0]!, ...j, row_id: i + 1, run_number: 1 }) as unknown as JobRecord);
  const kept = keptJobs(def, prev, { only: 'failed' });
  assert.deepEqual([...kept.keys()], ['plan']);
  const { jobs } = planRun(def, 2000, { kept });
  assert.deepEqual(jobs.map((j) => [j.job_id, j.status, j.needs]), [
    ['plan', 'success', []],
    ['shard~0', 'queued', ['plan']],
    ['shard~1', 'queued', ['plan']],
    ['join', 'pending', ['shard~0', 'shard~1']],
  ]);
  assert.equal(jobs[3]!.pending_needs, 2);
});
