/**
 * Workflows calling workflows (README "Workflows calling workflows"): the pure rules (chains, the
 * outputs a child hands back, the error of a failed child) and the definition keys `uses`, `with` and
 * `outputs`, read, refused and written back.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CallGraphLoader, callChainProblem, childFailure, childOutputs, type CallEdge, type ChildJob } from '../../src/domain/calls.js';
import { DefinitionError, definitionDocument, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { planRun } from '../../src/engine/run-plan.js';

const graph = (edges: Record<string, string[]>) => ({
  down: (w: string) => edges[w] ?? [],
  up: (w: string) => Object.keys(edges).filter((k) => edges[k]!.includes(w)),
});

describe('call chains', () => {
  test('a chain of five nested calls passes; six is refused naming the longest chain, above and below', () => {
    const g = graph({ a: ['b'], b: ['c'], c: ['d'], d: ['e'], x: ['y'] });
    assert.equal(callChainProblem('e', ['f'], g.down, g.up), null, 'a → … → f is five calls');
    assert.deepEqual(callChainProblem('e', ['f', 'x'], g.down, g.up), { kind: 'depth', chain: ['a', 'b', 'c', 'd', 'e', 'x', 'y'] });
    assert.deepEqual(callChainProblem('top', ['a'], graph({ a: ['b'], b: ['c'], c: ['d'], d: ['e'], e: ['f'] }).down, () => []), {
      kind: 'depth',
      chain: ['top', 'a', 'b', 'c', 'd', 'e', 'f'],
    });
  });

  test('a call back to the saving workflow, however far down, is a cycle; its own old calls are replaced by the new ones', () => {
    const g = graph({ b: ['c'], c: ['a'], a: ['z'] });
    assert.deepEqual(callChainProblem('a', ['b'], g.down, g.up), { kind: 'cycle', chain: ['a', 'b', 'c', 'a'] });
    assert.deepEqual(callChainProblem('a', ['a'], g.down, g.up), { kind: 'cycle', chain: ['a', 'a'] });
    // A diamond is no cycle.
    const d = graph({ b: ['d'], c: ['d'] });
    assert.equal(callChainProblem('a', ['b', 'c'], d.down, d.up), null);
  });

  test('the loader asks for the calls a level at a time, both ways, leaving the saving workflow’s own out, to MAX_CALL_DEPTH + 1 levels', () => {
    const saved: CallEdge[] = [
      { caller_id: 'top', callee_id: 'me' },
      { caller_id: 'me', callee_id: 'old' },
      { caller_id: 'a', callee_id: 'b' },
      ...['b', 'c', 'd', 'e', 'f', 'g', 'h'].map((w, i, all) => ({ caller_id: w, callee_id: all[i + 1] ?? 'end' })),
    ];
    const loader = new CallGraphLoader('me', ['a']);
    const asked: Array<{ from: string[]; to: string[] }> = [];
    for (let ask = loader.next(); ask; ask = loader.next()) {
      asked.push(ask);
      loader.add(saved.filter((e) => ask.from.includes(e.caller_id) || ask.to.includes(e.callee_id)), ask);
    }
    assert.deepEqual(asked[0], { from: ['a'], to: ['me'] });
    assert.deepEqual(asked[1], { from: ['b'], to: ['top'] });
    assert.equal(asked.length, 6, 'deep enough to see a chain of six');
    // The chain named is the longest loaded: long enough to refuse, not followed to its end.
    assert.deepEqual(loader.problem(), { kind: 'depth', chain: ['top', 'me', 'a', 'b', 'c', 'd', 'e', 'f', 'g'] });
  });
});

describe('what a child hands back', () => {
  test("declared outputs from the child's jobs (a matrix's instance that finished last), inputs and text", () => {
    const def = {
      outputs: {
        path: { value: '${{ jobs.build.outputs.path }}', description: null },
        where: { value: '${{ jobs.test.outputs.region }}/${{ inputs.env }}', description: null },
        none: { value: '${{ jobs.skipped.outputs.x }}', description: null },
        lit: { value: "${{ 'fixed' }}", description: null },
      },
    };
    const jobs: ChildJob[] = [
      { job_id: 'build', status: 'success', outputs: { path: '/out/app' }, finished_at_ms: 10 },
      { job_id: 'test~0', status: 'success', outputs: { region: 'eu' }, finished_at_ms: 30 },
      { job_id: 'test~1', status: 'success', outputs: { region: 'us' }, finished_at_ms: 20 },
      { job_id: 'skipped', status: 'skipped', outputs: null, finished_at_ms: 5 },
    ];
    assert.deepEqual(childOutputs(def, { env: 'prod' }, jobs), { path: '/out/app', where: 'eu/prod', none: '', lit: 'fixed' });
    assert.deepEqual(childOutputs({}, {}, jobs), {});
  });

  test("a failed child's error names the run and each failed job with the first line of its error", () => {
    const jobs = [
      { job_id: 'a', status: 'failed', error: 'exit code 2\nstderr tail' },
      { job_id: 'b', status: 'skipped', error: 'upstream job "a" failed' },
      { job_id: 'c', status: 'failed', error: null },
    ];
    assert.equal(childFailure({ workflow_id: 'w', run_number: 3, state: 'failed' }, jobs), 'called workflow "w" run #3 failed: failed jobs a: exit code 2; c');
    assert.equal(childFailure({ workflow_id: 'w', run_number: 4, state: 'cancelled' }, []), 'called workflow "w" run #4 was cancelled');
    const long = childFailure({ workflow_id: 'w', run_number: 1, state: 'failed' }, [{ job_id: 'a', status: 'failed', error: 'x'.repeat(5000) }]);
    assert.equal(long.length, 2000);
  });
});

describe('uses, with and outputs in definitions', () => {
  const caller = {
    id: 'caller',
    inputs: { env: { default: 'staging' } },
    outputs: { url: '${{ jobs.deploy.outputs.url }}' },
    jobs: {
      plan: { run: 'echo plan' },
      deploy: {
        needs: 'plan',
        uses: 'deployer',
        with: { target: '${{ inputs.env }}-${{ matrix.region }}', from: '${{ needs.plan.outputs.ref }}', count: 3, dry: false },
        strategy: { matrix: { region: ['eu', 'us'] } },
        retries: 2,
      },
    },
  };

  test('read, planned with inputs and matrix values filled in (needs kept for the start), and written back to the same definition', () => {
    const def = parseWorkflowObject(caller, { source: 'body' });
    const deploy = def.jobs.find((j) => j.id === 'deploy')!;
    assert.equal(deploy.uses, 'deployer');
    assert.deepEqual(deploy.with, { target: '${{ inputs.env }}-${{ matrix.region }}', from: '${{ needs.plan.outputs.ref }}', count: '3', dry: 'false' });
    assert.equal(deploy.command, '');
    assert.deepEqual(def.outputs, { url: { value: '${{ jobs.deploy.outputs.url }}', description: null } });
    const doc = definitionDocument(def);
    assert.deepEqual(parseWorkflowObject(doc, { source: 'again' }), def);
    assert.equal((doc.jobs.deploy as Record<string, unknown>).run, undefined);

    const { jobs, labelSets } = planRun(def, 1000, { inputs: { env: 'prod' } });
    const calls = jobs.filter((j) => j.call);
    assert.deepEqual(calls.map((j) => [j.job_id, j.label_key, j.labels, j.call]), [
      ['deploy~0', 'call', [], { uses: 'deployer', with: { target: 'prod-eu', from: '${{ needs.plan.outputs.ref }}', count: '3', dry: 'false' } }],
      ['deploy~1', 'call', [], { uses: 'deployer', with: { target: 'prod-us', from: '${{ needs.plan.outputs.ref }}', count: '3', dry: 'false' } }],
    ]);
    assert.deepEqual(labelSets.map((s) => s.key), [''], 'the call key is never recorded as a label set');
    assert.equal(jobs.find((j) => j.job_id === 'plan')!.call, undefined);
  });

  test('refused, each naming the job and field: with without uses, uses with run and other keys, a bad id, secrets in with, jobs.* outside outputs, unknown jobs in outputs', () => {
    const issues = (value: unknown) => {
      try {
        parseWorkflowText(JSON.stringify(value), { source: 'x.json', format: 'json', id: 'x' });
      } catch (err) {
        if (err instanceof DefinitionError) return err.issues.map((i) => [i.job, i.field, i.message]);
        throw err;
      }
      return [];
    };
    assert.deepEqual(issues({ jobs: { a: { uses: 'y', steps: [{ run: 'true' }], env: { A: '1' }, approval: true, concurrency: 'g' } } }).map((i) => i.slice(0, 2)), [
      ['a', 'steps'],
      ['a', 'env'],
      ['a', 'approval'],
      ['a', 'concurrency'],
    ]);
    assert.deepEqual(issues({ jobs: { a: { uses: 'owner/repo/.github/workflows/x.yml@main' } } }), [
      ['a', 'uses', "must be a workflow id, got 'owner/repo/.github/workflows/x.yml@main' (a workflow of this server by its id, the file name without extension: 'uses: ./x/build.yml' and 'owner/repo/…@ref' are GitHub's forms)"],
    ]);
    assert.deepEqual(issues({ jobs: { a: { uses: 'y', with: ['v'] } } }), [['a', 'with', 'must be a mapping of input name to value, got a list']]);
    assert.deepEqual(issues({ jobs: { a: { uses: 'y', strategy: { matrix: { n: [1, 2] }, max_parallel: 1 } } } }), [
      ['a', 'strategy.max_parallel', "cannot be combined with 'uses': give the called workflow concurrency: { max_runs: N, when_full: queue } to run N of its runs at once"],
    ]);
    assert.deepEqual(issues({ jobs: { a: { uses: 'y', with: { v: '${{ item }}' } } } }), [['a', 'with.v', "'${{ item }}' cannot be used in with: only matrix values, inputs, and needs' outputs and results"]]);
    assert.deepEqual(issues({ jobs: { a: { uses: 'y', with: { v: '${{ needs.b.outputs.k }}' } } } }), [['a', 'with.v', "'needs.b' is not a need of this job (needs: none)"]]);
    assert.deepEqual(issues({ outputs: { o: '${{ jobs.a.outputs.k }}', p: '${{ inputs.nope }}', q: { value: 'v', extra: 1 } }, jobs: { a: { run: 'true' } } }), [
      [null, 'outputs.q.extra', "unknown key 'extra' (allowed: value, description)"],
      [null, 'outputs.p', "unknown input 'nope' (declared: none)"],
    ]);
    assert.deepEqual(issues({ on: { workflow_call: { outputs: {}, secrets: {} } }, jobs: { a: { run: 'true' } } }), [
      [null, 'on.workflow_call.outputs', "declare the outputs of a called workflow with the top-level 'outputs:' key (README \"Workflows calling workflows\")"],
      [null, 'on.workflow_call.secrets', "a called workflow reads its secrets itself (global ones, or set for its own id); remove 'secrets'"],
    ]);
    assert.deepEqual(issues({ on: { workflow_call: null }, jobs: { a: { run: 'true' } } }), []);
    // The array form (workflow-graph's shape) has no uses.
    assert.match(JSON.stringify(issues({ name: 'x', jobs: [{ id: 'a', command: 'true', uses: 'y' }] })), /unknown key 'uses'/);
  });
});
