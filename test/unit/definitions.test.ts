import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobSpec, WorkflowDefinition } from '../../src/domain/model.js';
import {
  DefinitionError,
  type DefinitionIssue,
  ID_PATTERN,
  definitionHash,
  loadWorkflowDir,
  parseWorkflowObject,
  parseWorkflowText,
} from '../../src/definitions/index.js';

const WORKFLOWS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'workflows');

function yaml(text: string, id = 'ci'): WorkflowDefinition {
  return parseWorkflowText(text, { source: `${id}.yml`, format: 'yaml', id });
}

function json(text: string, id = 'ci'): WorkflowDefinition {
  return parseWorkflowText(text, { source: `${id}.json`, format: 'json', id });
}

function body(value: unknown, opts: { id?: string; generateId?: () => string } = {}): WorkflowDefinition {
  return parseWorkflowObject(value, { source: 'request body', ...opts });
}

function errorOf(fn: () => unknown): DefinitionError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DefinitionError, `expected DefinitionError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a DefinitionError');
}

const issuesOf = (fn: () => unknown): DefinitionIssue[] => errorOf(fn).issues;
const yamlIssues = (text: string, id = 'ci'): DefinitionIssue[] => issuesOf(() => yaml(text, id));
const bodyIssues = (value: unknown): DefinitionIssue[] => issuesOf(() => body(value, { id: 'wf' }));

/** Asserts one issue with exactly this job and field whose message matches. */
function expectIssue(issues: DefinitionIssue[], job: string | null, field: string | null, message: RegExp): DefinitionIssue {
  const found = issues.find((i) => i.job === job && i.field === field && message.test(i.message));
  assert.ok(found, `no issue {job: ${job}, field: ${field}, message ~ ${message}} in:\n${JSON.stringify(issues, null, 2)}`);
  return found;
}

/** A contract-form document with one job `a` carrying the given fields. */
function oneJob(fields: Record<string, unknown>): unknown {
  return { jobs: { a: { run: 'true', ...fields } } };
}

function job(def: WorkflowDefinition, id: string): JobSpec {
  const found = def.jobs.find((j) => j.id === id);
  assert.ok(found, `no job ${id}`);
  return found;
}

describe('contract form', () => {
  test('a full YAML document is normalised into a WorkflowDefinition', () => {
    const def = yaml(`
name: CI
on: push
env: { GREETING: hi, COUNT: 3, DEBUG: false }
jobs:
  lint:
    run: make lint
  test:
    run: make test
  build:
    name: Build
    needs: [lint, test, lint]
    run: make build
    labels: [linux, arm64, linux]
    retries: 2
    backoff:
      exponential: { base_secs: 1, max_secs: 30 }
    env: { MODE: release }
    timeout_secs: 600
`);
    assert.deepEqual(def, {
      id: 'ci',
      name: 'CI',
      trigger: 'push',
      env: { COUNT: '3', DEBUG: 'false', GREETING: 'hi' },
      jobs: [
        { id: 'lint', name: 'lint', command: 'make lint', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null },
        { id: 'test', name: 'test', command: 'make test', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null },
        {
          id: 'build',
          name: 'Build',
          command: 'make build',
          needs: ['lint', 'test'],
          labels: ['arm64', 'linux'],
          max_retries: 2,
          backoff: { kind: 'exponential', base_secs: 1, max_secs: 30 },
          env: { MODE: 'release' },
          timeout_secs: 600,
        },
      ],
    });
  });

  test('defaults: name is the id, no trigger, no env', () => {
    const def = yaml('jobs:\n  only:\n    run: echo hi\n', 'hello');
    assert.equal(def.id, 'hello');
    assert.equal(def.name, 'hello');
    assert.equal(def.trigger, null);
    assert.deepEqual(def.env, {});
    assert.equal(job(def, 'only').name, 'only');
  });

  test('the same document in JSON gives the same definition', () => {
    const fromYaml = yaml('on: push\njobs:\n  a: { run: x }\n  b: { needs: a, run: y }\n');
    const fromJson = json('{"on": "push", "jobs": {"a": {"run": "x"}, "b": {"needs": "a", "run": "y"}}}');
    assert.deepEqual(fromJson, fromYaml);
  });

  test('`on` as a list or a mapping becomes a compact trigger string', () => {
    assert.equal(yaml('on: [push, pull_request]\njobs: { a: { run: x } }').trigger, 'push, pull_request');
    assert.equal(yaml('on: { push: null, pull_request: {} }\njobs: { a: { run: x } }').trigger, 'push, pull_request');
    assert.equal(
      yaml('on:\n  push: { branches: [main] }\n  schedule:\n    - cron: "0 2 * * *"\njobs: { a: { run: x } }').trigger,
      'push: {branches: [main]}, schedule: [{cron: 0 2 * * *}]',
    );
    assert.equal(yaml('on: ""\njobs: { a: { run: x } }').trigger, null);
  });

  test('a string `needs` and a string `labels` are one-element lists', () => {
    const def = yaml('jobs:\n  a: { run: x }\n  b: { needs: a, labels: gpu, run: y }\n');
    assert.deepEqual(job(def, 'b').needs, ['a']);
    assert.deepEqual(job(def, 'b').labels, ['gpu']);
  });

  test('labels are sorted and de-duplicated; needs keep their order without duplicates', () => {
    const def = yaml('jobs:\n  z: { run: x }\n  a: { run: x }\n  m: { needs: [z, a, z], labels: [b, a, c, a], run: y }\n');
    assert.deepEqual(job(def, 'm').labels, ['a', 'b', 'c']);
    assert.deepEqual(job(def, 'm').needs, ['z', 'a']);
  });

  test('env values are stringified at workflow and job level', () => {
    const def = yaml('env: { N: 1.5, T: true, S: text, Z: 0 }\njobs:\n  a:\n    run: x\n    env: { PORT: 8080, ON: false, EMPTY: "" }\n');
    assert.deepEqual(def.env, { N: '1.5', S: 'text', T: 'true', Z: '0' });
    assert.deepEqual(job(def, 'a').env, { EMPTY: '', ON: 'false', PORT: '8080' });
  });

  test('env rejects nested values, null and bad variable names', () => {
    const issues = yamlIssues('env: { LIST: [1, 2] }\njobs:\n  a:\n    run: x\n    env: { OBJ: { k: v }, NUL: null, "BAD-NAME": 1, 9LIVES: 1 }\n');
    expectIssue(issues, null, 'env.LIST', /must be a string, number or boolean, got a list/);
    expectIssue(issues, 'a', 'env.OBJ', /must be a string, number or boolean, got a mapping/);
    expectIssue(issues, 'a', 'env.NUL', /got null/);
    expectIssue(issues, 'a', 'env.BAD-NAME', /invalid environment variable name 'BAD-NAME'/);
    expectIssue(issues, 'a', 'env.9LIVES', /invalid environment variable name/);
    expectIssue(bodyIssues({ env: 'A=1', jobs: { a: { run: 'x' } } }), null, 'env', /must be a mapping/);
  });

  test('timeout_secs is null when absent and must be >= 1', () => {
    assert.equal(job(yaml('jobs: { a: { run: x } }'), 'a').timeout_secs, null);
    assert.equal(job(yaml('jobs: { a: { run: x, timeout_secs: 1 } }'), 'a').timeout_secs, 1);
    expectIssue(bodyIssues(oneJob({ timeout_secs: 0 })), 'a', 'timeout_secs', /integer >= 1, got 0/);
  });

  test('an `id` equal to the file name is accepted, a different one is an error', () => {
    assert.equal(yaml('id: ci\njobs: { a: { run: x } }').id, 'ci');
    expectIssue(yamlIssues('id: other\njobs: { a: { run: x } }'), null, 'id', /'other' does not match 'ci'/);
  });
});

describe('steps', () => {
  test('single-line steps are joined with &&, each announced by a ::step line with its name or command', () => {
    const def = yaml('jobs:\n  a:\n    steps:\n      - name: one\n        run: echo one\n      - run: echo two\n');
    assert.equal(
      job(def, 'a').command,
      "printf '::step 1/2 %s\\n' 'one' && echo one && printf '::step 2/2 %s\\n' 'echo two' && echo two",
    );
  });

  test('step names are quoted for sh whatever they hold', () => {
    const names = ["it's", '$(rm -rf /) `x` %s \\n', '# not a comment; & not a job'];
    const def = body({ jobs: { a: { steps: names.map((name, i) => ({ name, run: `echo ${i}` })) } } }, { id: 'x' });
    const result = spawnSync('sh', ['-c', job(def, 'a').command], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, names.map((n, i) => `::step ${i + 1}/3 ${n}\n${i}\n`).join(''));
  });

  test('a single step is the command as is', () => {
    assert.equal(job(yaml('jobs:\n  a:\n    steps: [{ run: "echo a; echo b" }]\n'), 'a').command, 'echo a; echo b');
  });

  test('a multi-line step is wrapped in a group so && applies to all of it', () => {
    const def = yaml('jobs:\n  a:\n    steps:\n      - run: echo start\n      - run: |\n          echo a\n          echo b\n      - run: echo end\n');
    assert.equal(
      job(def, 'a').command,
      "printf '::step 1/3 %s\\n' 'echo start' && echo start && printf '::step 2/3 %s\\n' 'echo a' && { echo a\necho b\n} && " +
        "printf '::step 3/3 %s\\n' 'echo end' && echo end",
    );
  });

  test('steps with ; or a comment are grouped too', () => {
    const def = body({ jobs: { a: { steps: [{ run: 'cd /tmp; ls' }, { run: 'echo hi # greet' }, { run: 'echo end' }] } } }, { id: 'x' });
    assert.equal(
      job(def, 'a').command,
      "printf '::step 1/3 %s\\n' 'cd /tmp; ls' && { cd /tmp; ls\n} && printf '::step 2/3 %s\\n' 'echo hi # greet' && " +
        "{ echo hi # greet\n} && printf '::step 3/3 %s\\n' 'echo end' && echo end",
    );
  });

  test('the joined command stops at the first failing step when run by sh', () => {
    const def = body(
      {
        jobs: {
          a: {
            steps: [
              { run: 'echo one' },
              { run: 'echo two\nfalse\n' },
              { run: 'echo three' },
            ],
          },
        },
      },
      { id: 'x' },
    );
    const result = spawnSync('sh', ['-c', job(def, 'a').command], { encoding: 'utf8' });
    assert.equal(result.status, 1);
    assert.equal(result.stdout, '::step 1/3 echo one\none\n::step 2/3 echo two\ntwo\n');
  });

  test('step errors name the step', () => {
    const issues = bodyIssues({
      jobs: {
        a: { steps: [{ run: 'x', nmae: 'typo' }, { name: 'no run' }, 'echo hi', { run: '  ' }, { run: 5 }] },
        b: { steps: [] },
        c: { steps: 'echo hi' },
      },
    });
    expectIssue(issues, 'a', 'steps[0].nmae', /unknown key 'nmae' \(did you mean 'name'\?\)/);
    expectIssue(issues, 'a', 'steps[1].run', /is required/);
    expectIssue(issues, 'a', 'steps[2]', /must be a mapping \{ name\?, run \}/);
    expectIssue(issues, 'a', 'steps[3].run', /empty command/);
    expectIssue(issues, 'a', 'steps[4].run', /must be a string, got number 5/);
    expectIssue(issues, 'b', 'steps', /at least one step/);
    expectIssue(issues, 'c', 'steps', /must be a list/);
  });
});

describe('backoff', () => {
  const backoffOf = (backoff: unknown) => job(body(oneJob({ backoff }), { id: 'x' }), 'a').backoff;

  test('lower-case and PascalCase spellings are accepted', () => {
    for (const none of ['none', 'None', { none: null }, { None: null }, { none: {} }, { None: {} }, null]) {
      assert.deepEqual(backoffOf(none), { kind: 'none' }, JSON.stringify(none));
    }
    assert.deepEqual(backoffOf({ fixed: { delay_secs: 5 } }), { kind: 'fixed', delay_secs: 5 });
    assert.deepEqual(backoffOf({ Fixed: { delay_secs: 0 } }), { kind: 'fixed', delay_secs: 0 });
    assert.deepEqual(backoffOf({ exponential: { base_secs: 1, max_secs: 30 } }), { kind: 'exponential', base_secs: 1, max_secs: 30 });
    assert.deepEqual(backoffOf({ Exponential: { base_secs: 2, max_secs: 2 } }), { kind: 'exponential', base_secs: 2, max_secs: 2 });
  });

  test('absent backoff is none', () => {
    assert.deepEqual(job(yaml('jobs: { a: { run: x, retries: 1 } }'), 'a').backoff, { kind: 'none' });
  });

  test('YAML PascalCase form as a Rust worker would write it', () => {
    const def = yaml('jobs:\n  a:\n    run: x\n    backoff:\n      Fixed:\n        delay_secs: 5\n');
    assert.deepEqual(job(def, 'a').backoff, { kind: 'fixed', delay_secs: 5 });
  });


  test('bad backoffs are reported with their path', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      ['linear', 'backoff', /unknown backoff 'linear'/],
      ['fixed', 'backoff', /'fixed' needs parameters/],
      [5, 'backoff', /must be a string or a mapping, got number 5/],
      [{}, 'backoff', /must not be empty/],
      [{ fixd: { delay_secs: 1 } }, 'backoff.fixd', /unknown key 'fixd' \(did you mean 'fixed'\?\)/],
      [{ fixed: { delay_secs: 1 }, exponential: { base_secs: 1, max_secs: 2 } }, 'backoff', /exactly one strategy/],
      [{ none: { delay_secs: 1 } }, 'backoff.none', /takes no parameters/],
      [{ fixed: 5 }, 'backoff.fixed', /must be a mapping \{ delay_secs \}/],
      [{ fixed: {} }, 'backoff.fixed.delay_secs', /is required/],
      [{ fixed: { delay: 5 } }, 'backoff.fixed.delay', /unknown key 'delay' \(did you mean 'delay_secs'\?\)/],
      [{ fixed: { delay_secs: -1 } }, 'backoff.fixed.delay_secs', /integer >= 0, got -1 \(negative\)/],
      [{ Fixed: { delay_secs: 2.5 } }, 'backoff.Fixed.delay_secs', /not an integer/],
      [{ exponential: { base_secs: '1', max_secs: 5 } }, 'backoff.exponential.base_secs', /got string '1'/],
      [{ exponential: { base_secs: 1 } }, 'backoff.exponential.max_secs', /is required/],
      [{ exponential: { base_secs: 10, max_secs: 5 } }, 'backoff.exponential.max_secs', /must be >= base_secs \(10\), got 5/],
      [{ Exponential: { base_secs: 1, max_secs: 2, cap: 3 } }, 'backoff.Exponential.cap', /unknown key 'cap'/],
    ];
    for (const [backoff, field, message] of cases) {
      expectIssue(bodyIssues(oneJob({ backoff })), 'a', field, message);
    }
  });
});

describe('validation', () => {
  test('the message has one line per issue naming the source, job and field', () => {
    const err = errorOf(() => yaml('jobs:\n  lint: { run: x }\n  test: { run: y }\n  build: { needs: [deploy], run: z, retries: -1 }\n'));
    assert.equal(err.source, 'ci.yml');
    assert.equal(err.name, 'DefinitionError');
    assert.ok(err instanceof Error);
    assert.equal(err.issues.length, 2);
    const lines = err.message.split('\n');
    assert.equal(lines.length, 2);
    assert.ok(lines.includes("ci.yml: job 'build', field 'needs': unknown job 'deploy' (jobs are: lint, test)"), err.message);
    assert.ok(lines.includes("ci.yml: job 'build', field 'retries': must be an integer >= 0, got -1 (negative)"), err.message);
    for (const issue of err.issues) assert.equal(issue.source, 'ci.yml');
  });

  test('a quoted value with newlines keeps the message at one line per issue', () => {
    const err = errorOf(() => body({ jobs: { a: { run: 'x', labels: 5, name: ['multi\nline'] }, b: { run: 'x', retries: 'one\ntwo' } } }, { id: 'w' }));
    assert.equal(err.message.split('\n').length, err.issues.length);
    assert.match(err.message, /got string 'one\\ntwo'/);
  });

  test('unknown needs suggests a close job name', () => {
    const issue = expectIssue(
      yamlIssues('jobs:\n  lint: { run: x }\n  test: { run: y }\n  build: { needs: lint2, run: z }\n'),
      'build',
      'needs',
      /unknown job 'lint2'/,
    );
    assert.match(issue.message, /did you mean 'lint'\?/);
    assert.match(issue.message, /jobs are: lint, test/);
  });

  test('a cycle is reported with its path', () => {
    const issues = yamlIssues('jobs:\n  a: { needs: c, run: x }\n  b: { needs: a, run: x }\n  c: { needs: b, run: x }\n  d: { run: x }\n');
    assert.equal(issues.length, 1);
    expectIssue(issues, 'a', 'needs', /cycle: a -> c -> b -> a/);
  });

  test('a two-job cycle and a separate cycle are both reported', () => {
    const issues = yamlIssues('jobs:\n  a: { needs: b, run: x }\n  b: { needs: a, run: x }\n  c: { needs: d, run: x }\n  d: { needs: c, run: x }\n');
    expectIssue(issues, 'a', 'needs', /cycle: a -> b -> a/);
    expectIssue(issues, 'c', 'needs', /cycle: c -> d -> c/);
  });

  test('a very long dependency chain is handled without recursion limits', () => {
    const jobs: Record<string, unknown> = {};
    for (let i = 0; i < 20000; i++) jobs[`j${i}`] = { run: 'true', needs: i === 0 ? `j19999` : `j${i - 1}` };
    expectIssue(bodyIssues({ jobs }), 'j0', 'needs', /^cycle: j0 -> j19999 -> /);
  });

  test('a huge number of issues keeps every issue but a bounded message', () => {
    const jobs: Record<string, unknown> = {};
    for (let i = 0; i < 300; i++) jobs[`j${i}`] = { run: 'true', retries: -1 };
    const err = errorOf(() => body({ jobs }, { id: 'big' }));
    assert.equal(err.issues.length, 300);
    const lines = err.message.split('\n');
    assert.equal(lines.length, 51);
    assert.equal(lines[50], 'request body: … and 250 more issues');
  });

  test('a self-dependency', () => {
    const issues = yamlIssues('jobs:\n  a: { needs: [a], run: x }\n');
    expectIssue(issues, 'a', 'needs', /depends on itself/);
    assert.equal(issues.length, 1, 'not also reported as a cycle');
  });

  test('a job with neither run nor steps, or with both', () => {
    const issues = yamlIssues('jobs:\n  a: { name: A }\n  b: { run: x, steps: [{ run: y }] }\n  c: {}\n');
    expectIssue(issues, 'a', 'run', /no command: add 'run' or 'steps'/);
    expectIssue(issues, 'b', 'run', /both 'run' and 'steps'/);
    expectIssue(issues, 'c', 'run', /no command/);
  });

  test('an empty command', () => {
    expectIssue(yamlIssues('jobs:\n  a: { run: "   " }\n'), 'a', 'run', /empty command/);
  });

  test('a job that is not a mapping', () => {
    const issues = yamlIssues('jobs:\n  a:\n  b: echo hi\n  c: { needs: [a, b], run: x }\n');
    expectIssue(issues, 'a', null, /must be a mapping.*got null/);
    expectIssue(issues, 'b', null, /must be a mapping.*got string 'echo hi'/);
    assert.ok(!issues.some((i) => i.job === 'c'), 'needs on a broken job is not also "unknown"');
  });

  test('bad job ids', () => {
    const long = 'x'.repeat(129);
    const issues = bodyIssues({ jobs: { 'has space': { run: 'x' }, 'slash/job': { run: 'x' }, [long]: { run: 'x' }, ['x'.repeat(128)]: { run: 'x' } } });
    expectIssue(issues, 'has space', null, /bad job id: invalid id 'has space'/);
    expectIssue(issues, 'slash/job', null, /bad job id/);
    expectIssue(issues, long, null, /bad job id/);
    assert.equal(issues.length, 3);
  });

  test('bad workflow ids', () => {
    expectIssue(issuesOf(() => body({ id: 'no spaces', jobs: { a: { run: 'x' } } })), null, 'id', /invalid id 'no spaces'/);
    expectIssue(issuesOf(() => body({ id: 42, jobs: { a: { run: 'x' } } })), null, 'id', /must be a string, got number 42/);
    expectIssue(issuesOf(() => body({ jobs: { a: { run: 'x' } } }, { generateId: () => 'bad id' })), null, 'id', /invalid id/);
    expectIssue(issuesOf(() => parseWorkflowText('jobs: { a: { run: x } }', { source: 'a b.yml', format: 'yaml', id: 'a b' })), null, 'id', /invalid id 'a b'/);
  });

  test('numbers: negative, non-integer and non-number values', () => {
    const issues = bodyIssues({
      jobs: {
        neg: { run: 'x', retries: -2 },
        frac: { run: 'x', retries: 1.5 },
        str: { run: 'x', retries: '3' },
        inf: { run: 'x', timeout_secs: Number.POSITIVE_INFINITY },
        bool: { run: 'x', timeout_secs: true },
      },
    });
    expectIssue(issues, 'neg', 'retries', /integer >= 0, got -2 \(negative\)/);
    expectIssue(issues, 'frac', 'retries', /got 1.5 \(not an integer\)/);
    expectIssue(issues, 'str', 'retries', /got string '3'/);
    expectIssue(issues, 'inf', 'timeout_secs', /not an integer/);
    expectIssue(issues, 'bool', 'timeout_secs', /got boolean true/);
  });

  test('wrong types anywhere', () => {
    const issues = bodyIssues({
      name: 5,
      on: undefined,
      jobs: {
        a: { run: ['echo'], name: {}, needs: { b: true }, labels: 3 },
        b: { run: 'x', labels: ['ok', 7, ''], needs: [1] },
      },
    });
    expectIssue(issues, null, 'name', /must be a string, got number 5/);
    expectIssue(issues, 'a', 'run', /must be a string, got a list/);
    expectIssue(issues, 'a', 'name', /must be a string, got a mapping/);
    expectIssue(issues, 'a', 'needs', /string or a list of strings, got a mapping/);
    expectIssue(issues, 'a', 'labels', /string or a list of strings, got number 3/);
    expectIssue(issues, 'b', 'labels[1]', /must be a string, got number 7/);
    expectIssue(issues, 'b', 'labels[2]', /must not be empty/);
    expectIssue(issues, 'b', 'needs[0]', /must be a string, got number 1/);
    expectIssue(bodyIssues({ jobs: 'build' }), null, 'jobs', /must be a mapping of job id to job, got string/);
  });

  test('unknown top-level, job, backoff and step keys suggest the closest key', () => {
    const issues = yamlIssues(`
nmae: CI
trigger: push
colour: blue
jobs:
  a:
    need: [b]
    lables: [x]
    depends_on: [b]
    runs-on: linux
    timeout: 5
    run: x
    backoff: { exponental: { base_secs: 1, max_secs: 2 } }
    steps_x: 1
  b:
    steps: [{ run: y, cmd: z }]
`);
    expectIssue(issues, null, 'nmae', /unknown key 'nmae' \(did you mean 'name'\?\)/);
    expectIssue(issues, null, 'trigger', /did you mean 'on'\?/);
    expectIssue(issues, null, 'colour', /unknown key 'colour' \(allowed: id, name, on, env, inputs, concurrency, priority, outputs, jobs, notify\)/);
    expectIssue(issues, 'a', 'need', /unknown key 'need' \(did you mean 'needs'\?\)/);
    expectIssue(issues, 'a', 'lables', /did you mean 'labels'\?/);
    expectIssue(issues, 'a', 'depends_on', /did you mean 'needs'\?/);
    expectIssue(issues, 'a', 'runs-on', /did you mean 'labels'\?/);
    expectIssue(issues, 'a', 'timeout', /did you mean 'timeout_secs'\?/);
    expectIssue(issues, 'a', 'backoff.exponental', /did you mean 'exponential'\?/);
    expectIssue(issues, 'a', 'steps_x', /did you mean 'steps'\?/);
    expectIssue(issues, 'b', 'steps[0].cmd', /did you mean 'run'\?/);
  });

  test('missing or empty jobs', () => {
    expectIssue(yamlIssues('name: x\n'), null, 'jobs', /is required/);
    expectIssue(yamlIssues('jobs: {}\n'), null, 'jobs', /at least one job/);
    expectIssue(bodyIssues({ name: 'x', jobs: [] }), null, 'jobs', /at least one job/);
  });

  test('a document that is not a mapping', () => {
    expectIssue(yamlIssues('- a\n- b\n'), null, null, /must be a mapping with a 'jobs' key, got a list/);
    expectIssue(yamlIssues('just text\n'), null, null, /got string 'just text'/);
    expectIssue(yamlIssues(''), null, null, /document is empty/);
    expectIssue(yamlIssues('# only a comment\n'), null, null, /document is empty/);
    expectIssue(issuesOf(() => json('[1, 2]')), null, null, /got a list/);
    expectIssue(issuesOf(() => json('null')), null, null, /got null/);
    expectIssue(bodyIssues(undefined), null, null, /must be a mapping/);
  });

  test('all issues are collected, not just the first', () => {
    const issues = yamlIssues(`
jobs:
  a: { needs: missing, run: x, retries: -1 }
  b: { run: "" }
  c: { nedds: a }
  d: { needs: d, run: x, labels: 5 }
`);
    expectIssue(issues, 'a', 'needs', /unknown job 'missing'/);
    expectIssue(issues, 'a', 'retries', /negative/);
    expectIssue(issues, 'b', 'run', /empty command/);
    expectIssue(issues, 'c', 'nedds', /did you mean 'needs'/);
    expectIssue(issues, 'c', 'run', /no command/);
    expectIssue(issues, 'd', 'needs', /depends on itself/);
    expectIssue(issues, 'd', 'labels', /got number 5/);
    assert.equal(issues.length, 7);
  });
});

describe('syntax errors', () => {
  test('YAML syntax errors carry line and column', () => {
    const err = errorOf(() => yaml('jobs:\n  a:\n    run: [unclosed\n'));
    assert.equal(err.issues.length >= 1, true);
    assert.match(err.issues[0]!.message, /^YAML error at line \d+, column \d+: /);
    assert.match(err.message, /^ci\.yml: YAML error at line/);
  });

  test('a bad indentation is located', () => {
    expectIssue(yamlIssues('jobs:\n  a:\n    run: x\n   needs: b\n'), null, null, /YAML error at line 4, column \d+/);
  });

  test('duplicate YAML keys are errors, including duplicated job ids', () => {
    const issues = yamlIssues('jobs:\n  a:\n    run: x\n  a:\n    run: y\n');
    expectIssue(issues, null, null, /line 4, column 3: duplicate key 'a'/);
    expectIssue(yamlIssues('jobs:\n  a:\n    run: x\n    run: y\n'), null, null, /line 4, column 5: duplicate key 'run'/);
  });

  test('several YAML documents in one file are an error', () => {
    expectIssue(yamlIssues('jobs: { a: { run: x } }\n---\njobs: { b: { run: y } }\n'), null, null, /YAML error at line \d+/);
  });

  test('an unknown YAML tag is an error rather than a silent string', () => {
    expectIssue(yamlIssues('jobs:\n  a: { run: !secret token }\n'), null, null, /YAML error at line 2, column \d+: .*tag/i);
  });

  test('an undefined YAML alias is an error', () => {
    expectIssue(yamlIssues('jobs:\n  a: { run: *nothing }\n'), null, null, /YAML error/);
  });

  test('YAML anchors and aliases work', () => {
    const def = yaml('env: &e { A: 1 }\njobs:\n  a: { run: x, env: *e }\n');
    assert.deepEqual(def.env, { A: '1' });
    assert.deepEqual(job(def, 'a').env, { A: '1' });
  });

  test('JSON syntax errors give a clear message', () => {
    const err = errorOf(() => json('{"jobs": {"a": {"run": "x"},\n }'));
    assert.equal(err.issues.length, 1);
    assert.match(err.issues[0]!.message, /^JSON syntax error: /);
    assert.equal(err.issues[0]!.job, null);
    expectIssue(issuesOf(() => json('')), null, null, /JSON syntax error: the file is empty/);
    expectIssue(issuesOf(() => json('{"jobs": {}} trailing')), null, null, /JSON syntax error/);
  });

  test('duplicate JSON keys are errors', () => {
    const issues = issuesOf(() => json('{"jobs": {\n  "a": {"run": "x"},\n  "a": {"run": "y"}\n}}'));
    expectIssue(issues, null, null, /line 3, column 3: duplicate key 'a'/);
  });
});

describe('array form (existing clients)', () => {
  test('is normalised like the contract form', () => {
    const def = body({
      id: 'legacy',
      name: 'Legacy',
      trigger: 'manual',
      jobs: [
        { id: 'a', command: 'echo a' },
        {
          id: 'b',
          name: 'B',
          command: 'echo b',
          depends_on: ['a', 'a'],
          required_labels: ['z', 'y', 'z'],
          max_retries: 3,
          backoff: { Fixed: { delay_secs: 2 } },
          env: { N: 1 },
          timeout_secs: 30,
        },
        { id: 'c', command: 'echo c', depends_on: 'b', backoff: 'None' },
      ],
    });
    assert.deepEqual(def, {
      id: 'legacy',
      name: 'Legacy',
      trigger: 'manual',
      env: {},
      jobs: [
        { id: 'a', name: 'a', command: 'echo a', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null },
        { id: 'b', name: 'B', command: 'echo b', needs: ['a'], labels: ['y', 'z'], max_retries: 3, backoff: { kind: 'fixed', delay_secs: 2 }, env: { N: '1' }, timeout_secs: 30 },
        { id: 'c', name: 'c', command: 'echo c', needs: ['b'], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null },
      ],
    });
  });

  test('null optional fields count as absent, as JSON clients send them', () => {
    const def = body({
      id: null,
      name: null,
      trigger: null,
      env: null,
      jobs: [{ id: 'a', name: null, command: 'x', depends_on: null, required_labels: null, max_retries: null, backoff: null, env: null, timeout_secs: null }],
    }, { generateId: () => 'gen' });
    assert.deepEqual(def, {
      id: 'gen',
      name: 'gen',
      trigger: null,
      env: {},
      jobs: [{ id: 'a', name: 'a', command: 'x', needs: [], labels: [], max_retries: 0, backoff: { kind: 'none' }, env: {}, timeout_secs: null }],
    });
    assert.deepEqual(job(yaml('jobs:\n  a:\n    run: x\n    needs:\n    labels:\n'), 'a').needs, []);
  });

  test('gives the same definition and hash as the equivalent contract form', () => {
    const arrayForm = body({ name: 'W', trigger: 'push', jobs: [{ id: 'a', command: 'x' }, { id: 'b', command: 'y', depends_on: ['a'], required_labels: ['l'], max_retries: 1 }] }, { id: 'w' });
    const contractForm = body({ name: 'W', on: 'push', jobs: { a: { run: 'x' }, b: { run: 'y', needs: 'a', labels: 'l', retries: 1 } } }, { id: 'w' });
    assert.deepEqual(arrayForm, contractForm);
    assert.equal(definitionHash(arrayForm), definitionHash(contractForm));
  });

  test('job errors: missing id, bad id, duplicate id, missing command, wrong keys, dependencies', () => {
    const issues = bodyIssues({
      name: 'x',
      on: 'push',
      trigger: 7,
      jobs: [
        { command: 'x' },
        { id: 'bad id', command: 'x' },
        { id: 'a', command: 'x' },
        { id: 'a', command: 'y' },
        { id: 'b', run: 'x', needs: ['a'] },
        { id: 'c', command: 'x', depends_on: ['zz', 'c'], max_retries: -1 },
        'not a job',
        { id: 5, command: 'x' },
      ],
    });
    expectIssue(issues, null, 'on', /unknown key 'on' \(did you mean 'trigger'\?\)/);
    expectIssue(issues, null, 'trigger', /must be a string, got number 7/);
    expectIssue(issues, 'jobs[0]', 'id', /is required/);
    expectIssue(issues, 'bad id', 'id', /bad job id/);
    expectIssue(issues, 'a', 'id', /duplicate job id 'a' \(also jobs\[2\]\)/);
    expectIssue(issues, 'b', 'run', /unknown key 'run' \(did you mean 'command'\?\)/);
    expectIssue(issues, 'b', 'needs', /did you mean 'depends_on'\?/);
    expectIssue(issues, 'b', 'command', /no command: add 'command'/);
    expectIssue(issues, 'c', 'depends_on', /unknown job 'zz'/);
    expectIssue(issues, 'c', 'depends_on', /depends on itself/);
    expectIssue(issues, 'c', 'max_retries', /negative/);
    expectIssue(issues, 'jobs[6]', null, /must be a mapping with 'id' and 'command'/);
    expectIssue(issues, 'jobs[7]', 'id', /must be a string, got number 5/);
  });

  test('a cycle in the array form names depends_on', () => {
    expectIssue(bodyIssues({ jobs: [{ id: 'a', command: 'x', depends_on: 'b' }, { id: 'b', command: 'x', depends_on: 'a' }] }), 'a', 'depends_on', /cycle: a -> b -> a/);
  });
});

describe('parseWorkflowObject ids', () => {
  const doc = { jobs: { a: { run: 'x' } } };

  test('opts.id wins, then the body id, then generateId', () => {
    assert.equal(body(doc, { id: 'given' }).id, 'given');
    assert.equal(body({ ...doc, id: 'mine' }, { generateId: () => 'gen' }).id, 'mine');
    assert.equal(body(doc, { generateId: () => 'gen-1' }).id, 'gen-1');
    assert.equal(body(doc, { generateId: () => 'gen-1' }).name, 'gen-1');
  });

  test('no id and no generator is an error', () => {
    expectIssue(issuesOf(() => body(doc)), null, 'id', /workflow id is required/);
  });

  test('a body id conflicting with opts.id is an error', () => {
    expectIssue(issuesOf(() => body({ ...doc, id: 'other' }, { id: 'given' })), null, 'id', /does not match/);
  });

  test('source is used in the error', () => {
    const err = errorOf(() => parseWorkflowObject({}, { source: 'POST /api/workflows', id: 'x' }));
    assert.equal(err.source, 'POST /api/workflows');
    assert.match(err.message, /^POST \/api\/workflows: field 'jobs': is required/);
  });

  test('a __proto__ key cannot pollute anything', () => {
    const value = JSON.parse('{"env": {"__proto__": "x"}, "jobs": {"a": {"run": "x"}}}');
    const def = body(value, { id: 'p' });
    assert.equal(Object.getPrototypeOf(def.env), Object.prototype);
    assert.equal(def.env.__proto__ as unknown, 'x');
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });
});

describe('ID_PATTERN', () => {
  test('matches the contract', () => {
    for (const ok of ['a', 'A-b_c.d', '0', 'x'.repeat(128)]) assert.ok(ID_PATTERN.test(ok), ok);
    for (const bad of ['', 'a b', 'a/b', 'é', 'x'.repeat(129), 'a\n']) assert.ok(!ID_PATTERN.test(bad), JSON.stringify(bad));
  });
});

describe('definitionHash', () => {
  const base = 'name: W\nenv: { A: "1", B: "2" }\njobs:\n  a: { run: x, env: { X: "1", Y: "2" } }\n  b: { needs: a, run: y }\n';

  test('is a stable sha256 hex string', () => {
    const hash = definitionHash(yaml(base));
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.equal(definitionHash(yaml(base)), hash);
  });

  test('ignores formatting, comments, key order and equivalent spellings', () => {
    const reordered = '# comment\njobs:\n  a:\n    env: { Y: 2, X: 1 }\n    run: x\n  b: { run: y, needs: [a] }\nenv: { B: 2, A: 1 }\nname: W\n';
    assert.equal(definitionHash(yaml(reordered)), definitionHash(yaml(base)));
    const asJson = json('{"name":"W","env":{"A":"1","B":"2"},"jobs":{"a":{"run":"x","env":{"X":"1","Y":"2"}},"b":{"needs":"a","run":"y"}}}');
    assert.equal(definitionHash(asJson), definitionHash(yaml(base)));
  });

  test('changes when the meaning changes', () => {
    const hash = definitionHash(yaml(base));
    assert.notEqual(definitionHash(yaml(base.replace('run: y', 'run: z'))), hash);
    assert.notEqual(definitionHash(yaml(base + '  c: { run: z }\n')), hash);
    assert.notEqual(definitionHash(yaml(base, 'other')), hash);
    // Job order is part of the definition (it is the display order).
    const swapped = 'name: W\nenv: { A: "1", B: "2" }\njobs:\n  b: { needs: a, run: y }\n  a: { run: x, env: { X: "1", Y: "2" } }\n';
    assert.notEqual(definitionHash(yaml(swapped)), hash);
  });
});

describe('loadWorkflowDir', () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'weft-defs-'));
    dirs.push(dir);
    return dir;
  };

  test('loads good files, reports bad ones and ignores the rest', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'build.yml'), 'jobs:\n  a: { run: echo a }\n');
    writeFileSync(join(dir, 'deploy.yaml'), 'name: Deploy\njobs:\n  d: { run: echo d }\n');
    writeFileSync(join(dir, 'api.json'), '\uFEFF{"jobs": {"x": {"run": "echo x"}}}');
    writeFileSync(join(dir, 'broken.yml'), 'jobs:\n  a: { run: [\n');
    writeFileSync(join(dir, 'invalid.yml'), 'jobs:\n  a: { needs: b, run: x }\n');
    writeFileSync(join(dir, 'bad name.yml'), 'jobs:\n  a: { run: x }\n');
    writeFileSync(join(dir, 'dup.json'), '{"jobs": {"a": {"run": "x"}}}');
    writeFileSync(join(dir, 'dup.yml'), 'jobs:\n  a: { run: x }\n');
    writeFileSync(join(dir, 'README.md'), '# not a workflow\n');
    writeFileSync(join(dir, 'notes.txt'), 'jobs: nope\n');
    writeFileSync(join(dir, '.hidden.yml'), 'not: [valid\n');
    mkdirSync(join(dir, 'nested.yml'));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'deep.yml'), 'jobs:\n  a: { run: x }\n');

    const { loaded, errors } = loadWorkflowDir(dir);
    assert.deepEqual(loaded.map((l) => l.file), ['api.json', 'build.yml', 'deploy.yaml', 'dup.json']);
    assert.deepEqual(loaded.map((l) => l.definition.id), ['api', 'build', 'deploy', 'dup']);
    assert.equal(loaded.find((l) => l.file === 'deploy.yaml')?.definition.name, 'Deploy');
    for (const l of loaded) assert.equal(l.hash, definitionHash(l.definition));

    assert.deepEqual(errors.map((e) => e.file), ['bad name.yml', 'broken.yml', 'dup.yml', 'invalid.yml']);
    const byFile = Object.fromEntries(errors.map((e) => [e.file, e.error]));
    assert.match(byFile['bad name.yml']!.message, /^bad name\.yml: file name gives invalid id 'bad name'/);
    assert.match(byFile['broken.yml']!.message, /^broken\.yml: YAML error at line \d+, column \d+/);
    assert.match(byFile['dup.yml']!.message, /workflow id 'dup' is already defined by dup\.json/);
    expectIssue(byFile['invalid.yml']!.issues, 'a', 'needs', /unknown job 'b'/);
    for (const e of errors) {
      assert.ok(e.error instanceof DefinitionError);
      assert.equal(e.error.source, e.file);
    }
  });

  test('a missing directory gives empty results', () => {
    assert.deepEqual(loadWorkflowDir(join(tempDir(), 'does-not-exist')), { loaded: [], errors: [] });
  });

  test('an empty directory gives empty results', () => {
    assert.deepEqual(loadWorkflowDir(tempDir()), { loaded: [], errors: [] });
  });
});

describe('example workflows in workflows/', () => {
  const { loaded, errors } = loadWorkflowDir(WORKFLOWS_DIR);
  const byId = new Map(loaded.map((l) => [l.definition.id, l.definition]));

  test('every file loads without errors', () => {
    assert.deepEqual(errors.map((e) => e.error.message), []);
    assert.deepEqual(loaded.map((l) => l.file), ['ci.yml', 'deploy.yml', 'hello.json', 'nightly-report.yaml', 'release.yml']);
  });

  test('ci.yml fans out and back in and uses the advertised features', () => {
    const ci = byId.get('ci')!;
    assert.deepEqual(job(ci, 'checkout').needs, []);
    for (const id of ['lint', 'unit-tests', 'build']) assert.deepEqual(job(ci, id).needs, ['checkout']);
    assert.deepEqual(job(ci, 'package').needs, ['lint', 'unit-tests', 'build']);
    assert.deepEqual(job(ci, 'deploy').needs, ['package']);
    assert.ok(ci.jobs.some((j) => j.labels.includes('linux')));
    assert.equal(job(ci, 'unit-tests').backoff.kind, 'exponential');
    assert.ok(job(ci, 'unit-tests').max_retries > 0);
    assert.notDeepEqual(ci.env, {});
    assert.ok(ci.jobs.some((j) => Object.keys(j.env).length > 0));
    assert.match(job(ci, 'package').command, / && /);
    assert.match(job(ci, 'build').command, /::set-output artifact=/);
    assert.match(job(ci, 'package').command, /\$UPSTREAM_BUILD_ARTIFACT/);
  });

  test('nightly-report.yaml is a linear pipeline with fixed backoff and a timeout', () => {
    const nightly = byId.get('nightly-report')!;
    assert.deepEqual(nightly.jobs.map((j) => [j.id, j.needs]), [
      ['extract', []],
      ['transform', ['extract']],
      ['load', ['transform']],
      ['notify', ['load']],
    ]);
    assert.ok(nightly.jobs.some((j) => j.backoff.kind === 'fixed'));
    assert.ok(nightly.jobs.some((j) => j.timeout_secs !== null));
  });

  test('hello.json has hello -> world', () => {
    const hello = byId.get('hello')!;
    assert.deepEqual(hello.jobs.map((j) => [j.id, j.needs]), [['hello', []], ['world', ['hello']]]);
  });

  // Runs each job with sh the way the standalone worker does (env merge, ::set-output, UPSTREAM_*)
  // to prove the examples really work on a POSIX machine.
  for (const file of ['ci.yml', 'nightly-report.yaml', 'hello.json']) {
    test(`${file} runs to success with sh`, () => {
      const def = loaded.find((l) => l.file === file)!.definition;
      const outputs = new Map<string, Record<string, string>>();
      for (const j of def.jobs) {
        const upstream: Record<string, string> = {};
        for (const dep of j.needs) {
          const out = outputs.get(dep);
          assert.ok(out, `${j.id} ran before ${dep}`);
          for (const [k, v] of Object.entries(out)) upstream[`UPSTREAM_${dep}_${k}`.toUpperCase().replace(/[^A-Za-z0-9]/g, '_')] = v;
        }
        const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...def.env, ...j.env, WEFT_ATTEMPT: '0', ...upstream };
        const result = spawnSync('sh', ['-c', j.command], { env, encoding: 'utf8', timeout: 20_000 });
        assert.equal(result.status, 0, `${file} job ${j.id} failed:\n${result.stdout}\n${result.stderr}`);
        const out: Record<string, string> = {};
        for (const line of result.stdout.split('\n')) {
          const m = /^::set-output ([^=]+)=(.*)$/.exec(line);
          if (m) out[m[1]!] = m[2]!;
        }
        outputs.set(j.id, out);
      }
      if (file === 'ci.yml') {
        assert.equal(outputs.get('build')?.artifact, 'app-1.2.3.tar.gz');
        assert.equal(outputs.get('package')?.package, 'app-1.2.3.tar.gz');
        assert.equal(outputs.get('deploy')?.url, 'https://staging.example.com/app');
      }
      if (file === 'nightly-report.yaml') assert.equal(outputs.get('transform')?.avg_cents, '1658');
    });
  }
});

test('ids made only of dots are refused: URL normalisation would rewrite them', () => {
  for (const id of ['.', '..', '...']) {
    assert.throws(() => parseWorkflowObject({ id, jobs: { a: { run: 'x' } } }, { source: 'body' }), /not only dots/);
    assert.throws(() => parseWorkflowObject({ id: 'ok', jobs: { [id]: { run: 'x' } } }, { source: 'body' }), /not only dots/);
  }
  assert.equal(parseWorkflowObject({ id: 'a.b', jobs: { 'v1.2': { run: 'x' } } }, { source: 'body' }).id, 'a.b');
});

test('a NUL character in a string is refused with the job and field named', () => {
  assert.throws(
    () => parseWorkflowObject({ id: 'n', jobs: { a: { run: 'echo a\u0000b' } } }, { source: 'body' }),
    (err: any) => err.issues.some((i: any) => i.job === 'a' && /NUL/.test(i.message)),
  );
});

describe('inputs', () => {
  test('declared inputs are normalised: default as text, required, description; none declared leaves the hash as before', () => {
    const def = yaml(`
inputs:
  branch:
    required: true
    description: what to build
  retries: { default: 3 }
  dry-run: { default: false }
  note:
jobs:
  a: { run: "true" }
`);
    assert.deepEqual(def.inputs, {
      branch: { default: null, required: true, description: 'what to build' },
      'dry-run': { default: 'false', required: false, description: null },
      note: { default: null, required: false, description: null },
      retries: { default: '3', required: false, description: null },
    });
    const plain = yaml('jobs:\n  a: { run: "true" }\n');
    assert.equal('inputs' in plain, false);
    assert.equal(definitionHash(yaml('inputs: {}\njobs:\n  a: { run: "true" }\n')), definitionHash(plain));
    // The array form takes them too.
    assert.deepEqual(body({ id: 'n', name: 'n', inputs: { x: { default: 'y' } }, jobs: [{ id: 'a', command: 'true' }] }).inputs, {
      x: { default: 'y', required: false, description: null },
    });
  });

  test('bad inputs are reported with their path', () => {
    const issues = bodyIssues({
      inputs: {
        '9lives': {},
        'a-b': {},
        a_b: {},
        both: { required: true, default: 'x' },
        typo: { defualt: 'x' },
        kind: { required: 'yes' },
        nested: { default: ['x'] },
        nul: { default: 'a\u0000b' },
        flat: 'x',
      },
      jobs: { a: { run: 'true' } },
    });
    expectIssue(issues, null, 'inputs.9lives', /invalid input name '9lives'/);
    expectIssue(issues, null, 'inputs.a_b', /input 'a_b' and input 'a-b' would both be WEFT_INPUT_A_B/);
    expectIssue(issues, null, 'inputs.both', /cannot be required/);
    expectIssue(issues, null, 'inputs.typo.defualt', /did you mean 'default'/);
    expectIssue(issues, null, 'inputs.kind.required', /must be true or false/);
    expectIssue(issues, null, 'inputs.nested.default', /must be a string/);
    expectIssue(issues, null, 'inputs.nul.default', /NUL/);
    expectIssue(issues, null, 'inputs.flat', /must be a mapping/);
    expectIssue(bodyIssues({ inputs: ['x'], jobs: { a: { run: 'true' } } }), null, 'inputs', /must be a mapping of input name/);
    expectIssue(bodyIssues({ params: {}, jobs: { a: { run: 'true' } } }), null, 'params', /did you mean 'inputs'/);
  });
});

describe('concurrency', () => {
  const base = 'jobs:\n  a: { run: x }\n';

  test('max_runs and when_full are read in both forms; the default is not stored, so the hash is unchanged', () => {
    assert.deepEqual(yaml(`concurrency: { max_runs: 3, when_full: queue }\n${base}`).concurrency, { max_runs: 3, when_full: 'queue' });
    assert.deepEqual(yaml(`concurrency: { max_runs: 2 }\n${base}`).concurrency, { max_runs: 2, when_full: 'reject' });
    assert.deepEqual(yaml(`concurrency: { when_full: queue }\n${base}`).concurrency, { max_runs: 1, when_full: 'queue' });
    const array = body({ id: 'wf', concurrency: { max_runs: 100, when_full: 'reject' }, jobs: [{ id: 'a', command: 'x' }] });
    assert.deepEqual(array.concurrency, { max_runs: 100, when_full: 'reject' });
    for (const same of ['concurrency: {}\n', 'concurrency: { max_runs: 1, when_full: reject }\n', 'concurrency:\n']) {
      const def = yaml(same + base);
      assert.equal('concurrency' in def, false, same);
      assert.equal(definitionHash(def), definitionHash(yaml(base)), `${same.trim()} hashes as no concurrency at all`);
    }
    assert.notEqual(definitionHash(yaml(`concurrency: { max_runs: 2 }\n${base}`)), definitionHash(yaml(base)));
  });

  test('bad values and unknown keys are named, with hints', () => {
    for (const bad of ['0', '101', '1.5', '"2"']) {
      expectIssue(yamlIssues(`concurrency: { max_runs: ${bad} }\n${base}`), null, 'concurrency.max_runs', /whole number from 1 to 100/);
    }
    expectIssue(yamlIssues(`concurrency: { when_full: wait }\n${base}`), null, 'concurrency.when_full', /one of reject, queue/);
    expectIssue(yamlIssues(`concurrency: { max: 2 }\n${base}`), null, 'concurrency.max', /max_runs/);
    expectIssue(yamlIssues(`concurrency: 2\n${base}`), null, 'concurrency', /must be a mapping/);
    expectIssue(bodyIssues({ concurrency: { max_runs: 2, queue: true }, jobs: [{ id: 'a', command: 'x' }] }), null, 'concurrency.queue', /unknown/);
  });
});
