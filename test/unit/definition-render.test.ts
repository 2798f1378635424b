/**
 * A stored definition written back as a workflow file (GET /api/workflows/{id}/definition) parses to
 * the same definition: what the dashboard shows is what runs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { definitionDocument, loadWorkflowDir, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import type { WorkflowDefinition } from '../../src/domain/model.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function roundTrip(def: WorkflowDefinition): void {
  const doc = definitionDocument(def);
  // Through YAML text, as a person would save it, and through the object, as the API hands it out.
  const again = parseWorkflowText(stringify(doc), { source: `${def.id}.yml`, format: 'yaml', id: def.id });
  assert.deepEqual(again, def, `${def.id} written back as YAML parses to the same definition`);
  assert.deepEqual(parseWorkflowObject(doc, { source: 'render' }), def);
}

test('every key of the contract form survives being written back', () => {
  const def = parseWorkflowText(
    [
      'id: everything',
      'name: Every key',
      'on: { push: { branches: [main] } }',
      'inputs: { branch: { default: main, description: Branch to build }, sha: { required: true }, quiet: {} }',
      'env: { A: "1", B: two }',
      'concurrency: { max_runs: 3, when_full: queue }',
      'priority: -3',
      'jobs:',
      '  build:',
      '    name: Build it',
      '    steps: [{ run: make deps }, { run: make }]',
      '    labels: [linux, x86]',
      '    retries: 2',
      '    backoff: { exponential: { base_secs: 1, max_secs: 30 } }',
      '    env: { MODE: release }',
      '    timeout_secs: 600',
      '    priority: 40',
      '  test: { needs: build, run: make test, backoff: { fixed: { delay_secs: 5 } } }',
      '  ship: { needs: [build, test], run: "echo \\"ship it\\"" }',
      '  cleanup: { needs: ship, if: "always()", run: "rm -rf out" }',
      '',
    ].join('\n'),
    { source: 'everything.yml', format: 'yaml', id: 'everything' },
  );
  roundTrip(def);
  const doc = definitionDocument(def);
  assert.deepEqual(Object.keys(doc), ['id', 'name', 'on', 'inputs', 'concurrency', 'priority', 'env', 'jobs']);
  assert.deepEqual(doc.concurrency, { max_runs: 3, when_full: 'queue' });
  assert.equal(doc.priority, -3);
  assert.equal((doc.jobs.build as { priority?: number }).priority, 40);
  // Defaults are left out, as a person would write the file.
  assert.deepEqual(doc.jobs.ship, { needs: ['build', 'test'], run: 'echo "ship it"' });
  assert.deepEqual(doc.jobs.cleanup, { needs: ['ship'], if: 'always()', run: 'rm -rf out' });
});

test('the shipped workflow files survive being written back', () => {
  let seen = 0;
  for (const dir of ['workflows', 'examples'].map((d) => path.join(ROOT, d))) {
    if (!fs.existsSync(dir)) continue;
    for (const { definition } of loadWorkflowDir(dir).loaded) {
      roundTrip(definition);
      seen++;
    }
  }
  assert.ok(seen >= 1, 'at least one shipped workflow file');
});

test('schedules are written back as the on: mapping they came from', () => {
  const def = parseWorkflowText(
    'on:\n  schedule:\n    - cron: "0 2 * * *"\n    - { cron: "30 6 * * 1-5", timezone: Europe/Paris, catch_up: none }\njobs:\n  a: { run: "true" }\n',
    { source: 'sched.yml', format: 'yaml', id: 'sched' },
  );
  roundTrip(def);
  assert.deepEqual(definitionDocument(def).on, {
    schedule: [{ cron: '0 2 * * *' }, { cron: '30 6 * * 1-5', timezone: 'Europe/Paris', catch_up: 'none' }],
  });
});

test('the array form is written back in the contract form, without its display fields', () => {
  const def = parseWorkflowObject(
    { id: 'arr', name: 'Array', trigger: 'manual', jobs: [{ id: 'a', command: 'true', metadata: { x: 1 } }, { id: 'b', command: 'true', depends_on: ['a'], max_retries: 1 }] },
    { source: 'body' },
  );
  const doc = definitionDocument(def);
  assert.deepEqual(doc, { id: 'arr', name: 'Array', on: 'manual', jobs: { a: { run: 'true' }, b: { needs: ['a'], run: 'true', retries: 1 } } });
  const { jobs, ...rest } = parseWorkflowObject(doc, { source: 'render' });
  assert.deepEqual(rest, { id: 'arr', name: 'Array', trigger: 'manual', env: {} });
  assert.deepEqual(
    jobs.map((j) => j.presentation),
    [undefined, undefined],
  );
});

test('a matrix job and ${{ }} values survive being written back', () => {
  const def = parseWorkflowText(
    [
      'id: mx',
      'inputs: { tier: { default: gold } }',
      'jobs:',
      '  test:',
      '    name: "T ${{ matrix.os }}"',
      '    strategy:',
      '      matrix: { os: [a, b], n: [1, 2], exclude: [{ os: b, n: 1 }], include: [{ os: a, extra: x }] }',
      '      fail_fast: false',
      '      max_parallel: 2',
      '    labels: ["${{ matrix.os }}", "tier-${{ inputs.tier }}"]',
      '    run: echo ${{ matrix.n }}',
      '  after:',
      '    needs: test',
      '    env: { ALL: "${{ needs.test.outputs.v }}" }',
      '    run: echo "$ALL"',
    ].join('\n'),
    { source: 'mx.yml', format: 'yaml', id: 'mx' },
  );
  assert.equal(def.jobs[0]!.strategy!.combos.length, 3);
  roundTrip(def);
});

test('a for_each job survives being written back', () => {
  const def = parseWorkflowObject({
    id: 'fan',
    jobs: {
      plan: { run: 'x' },
      shard: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', strategy: { max_parallel: 2 }, env: { I: '${{ item.k }}' }, run: 'x' },
      plain: { needs: 'plan', for_each: '${{ needs.plan.outputs.list }}', run: 'x' },
    },
  }, { source: 'fan' });
  roundTrip(def);
});
