/**
 * Runs started from outside (README "Triggers and notifications"), the pure parts: GitHub's signature,
 * dot paths and filters, payload cleaning, which run ends a follower hears, `on:` read and written
 * back, `${{ event.* }}` where it may and may not go and what it becomes when a run is planned, and
 * how the dashboard names these triggers.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { DefinitionError, definitionDocument, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { hubSignature, signatureMatches } from '../../src/domain/webhooks.js';
import { cleanPayload, conclusionOf, filterRefusal, followsEnd, parsePath, triggerRows, valueAt } from '../../src/domain/triggers.js';
import { planRun } from '../../src/engine/run-plan.js';
import { runGroupOf } from '../../src/engine/run-start.js';
import { runTriggerText, triggerText } from '../../src/dashboard/triggers.js';
import type { WorkflowRecord } from '../../src/store/store.js';

const yaml = (text: string, id = 'wf') => parseWorkflowText(text, { source: `${id}.yml`, format: 'yaml', id });

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DefinitionError, String(err));
    return err.issues.map((i) => `${i.field ?? ''}: ${i.message}`);
  }
  return assert.fail('expected a DefinitionError');
}

describe('the webhook signature', () => {
  test("matches GitHub's documented example, and refuses anything else in the same time's work", () => {
    // docs.github.com "Validating webhook deliveries": this secret and payload give this signature.
    const secret = "It's a Secret to Everybody";
    const body = Buffer.from('Hello, World!');
    const github = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    assert.equal(hubSignature(secret, body), github);
    assert.equal(signatureMatches(github, secret, body), true);
    assert.equal(signatureMatches(github.toUpperCase().replace('SHA256=', 'sha256='), secret, body), true, 'hex digits in either case');
    assert.equal(signatureMatches(github, 'another secret', body), false);
    assert.equal(signatureMatches(github, secret, Buffer.from('Hello, World! ')), false, 'one byte more');
    for (const bad of [undefined, '', 'sha256=', 'sha1=' + '0'.repeat(40), github.slice(0, -2), `${github}00`, github.replace('sha256=', ''), `sha256=${'z'.repeat(64)}`]) {
      assert.equal(signatureMatches(bad, secret, body), false, String(bad));
    }
    // As GitHub computes it: over the exact bytes, whatever they are.
    const raw = Buffer.from('{"a": 1,\n "b":"é"}');
    assert.equal(hubSignature('k', raw), `sha256=${createHmac('sha256', 'k').update(raw).digest('hex')}`);
  });
});

describe('dot paths, filters and payloads', () => {
  const payload = JSON.parse('{"ref":"refs/heads/main","n":5,"ok":true,"repository":{"full_name":"o/r"},"commits":[{"id":"c1"},{"id":"c2"}],"__proto__":{"x":1}}');

  test('a path reads own keys and list items only', () => {
    assert.deepEqual(parsePath('commits[1].id'), ['commits', 1, 'id']);
    assert.deepEqual(parsePath('a.b-c.d_e'), ['a', 'b-c', 'd_e']);
    for (const bad of ['', 'a..b', '.a', 'a.', 'a[x]', 'a b', 'a[1', 'ä']) assert.equal(parsePath(bad), null, bad);
    assert.equal(valueAt(payload, parsePath('repository.full_name')!), 'o/r');
    assert.equal(valueAt(payload, parsePath('commits[1].id')!), 'c2');
    assert.equal(valueAt(payload, parsePath('commits.0.id')!), 'c1');
    assert.equal(valueAt(payload, parsePath('commits[2].id')!), undefined);
    assert.equal(valueAt(payload, parsePath('ref.length')!), undefined, 'no property of a string');
    assert.equal(valueAt(payload, parsePath('repository.constructor')!), undefined, 'nothing of the prototype');
    assert.deepEqual(valueAt(payload, parsePath('__proto__')!), { x: 1 }, "a payload's own __proto__ key is data");
  });

  test('filters pass a payload with one of the values at every path, compared as text', () => {
    assert.equal(filterRefusal(undefined, payload), null);
    assert.equal(filterRefusal({ ref: ['refs/heads/main'], 'repository.full_name': ['o/x', 'o/r'], n: ['5'], ok: ['true'] }, payload), null);
    assert.match(filterRefusal({ ref: ['refs/heads/dev'] }, payload)!, /filters\.ref: the delivery has "refs\/heads\/main" there, not "refs\/heads\/dev"/);
    assert.match(filterRefusal({ 'repository.owner': ['o'] }, payload)!, /has nothing there/);
    assert.match(filterRefusal({ ref: ['refs/heads/main'] }, [1, 2])!, /has nothing there/);
  });

  test('a payload is kept without NUL and lone surrogates, and no deeper than 64 levels', () => {
    const dirty = JSON.parse('{"a":"x\\u0000y","b":["\\ud800z",{"c":"ok \\ud83d\\ude00"}]}');
    const clean = cleanPayload(dirty);
    assert.ok(clean.ok);
    assert.deepEqual(clean.value, { a: 'x\ufffdy', b: ['\ufffdz', { c: 'ok 😀' }] });
    assert.deepEqual(cleanPayload('a\u0000'), { ok: true, value: 'a\ufffd' });
    let deep: unknown = 'end';
    for (let i = 0; i < 64; i++) deep = [deep];
    assert.equal(cleanPayload(deep).ok, true);
    assert.deepEqual(cleanPayload([deep]), { ok: false, problem: 'the payload nests arrays and objects deeper than 64 levels' });
    // Any depth is safe to ask about.
    assert.equal(cleanPayload(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000))).ok, false);
  });

  test('a follower hears the ends its types name', () => {
    assert.equal(conclusionOf('failed'), 'failure');
    assert.equal(followsEnd(['completed'], 'cancelled'), true);
    assert.equal(followsEnd(['success'], 'success'), true);
    assert.equal(followsEnd(['success'], 'failed'), false);
    assert.equal(followsEnd(['failure', 'cancelled'], 'failed'), true);
    assert.equal(followsEnd(['failure'], 'cancelled'), false);
  });
});

describe('on: webhook, event and workflow_run', () => {
  const full = yaml(`
on:
  push: { branches: [main] }
  webhook:
    secret: GITHUB_HOOK
    filters: { ref: refs/heads/main, "repository.full_name": [o/a, o/b], deleted: false }
    events: [push, pull_request]
  event: [released, deployed, deployed]
  workflow_run: { workflows: build, types: [failure, success] }
jobs: { a: { run: "true" } }
`);

  test('are read into triggers, normalised, with their listener rows', () => {
    assert.deepEqual(full.triggers, {
      webhook: { secret: 'GITHUB_HOOK', filters: { ref: ['refs/heads/main'], 'repository.full_name': ['o/a', 'o/b'], deleted: ['false'] }, events: ['pull_request', 'push'] },
      events: ['deployed', 'released'],
      workflow_run: { workflows: ['build'], types: ['failure', 'success'] },
    });
    assert.deepEqual(triggerRows(full), [
      { kind: 'event', key: 'deployed' },
      { kind: 'event', key: 'released' },
      { kind: 'workflow_run', key: 'build' },
    ]);
    assert.deepEqual(yaml('on: { workflow_run: { workflows: [b, a], types: [success, completed] } }\njobs: { a: { run: "true" } }').triggers, {
      workflow_run: { workflows: ['a', 'b'], types: ['completed'] },
    });
    assert.equal(yaml('on: { push: {} }\njobs: { a: { run: "true" } }').triggers, undefined, 'none: the definition keeps its shape and hash');
  });

  test('are written back so that reading them again gives the same definition', () => {
    const doc = definitionDocument(full);
    assert.deepEqual(doc.on, {
      webhook: { secret: 'GITHUB_HOOK', filters: { ref: 'refs/heads/main', 'repository.full_name': ['o/a', 'o/b'], deleted: 'false' }, events: ['pull_request', 'push'] },
      event: ['deployed', 'released'],
      workflow_run: { workflows: ['build'], types: ['failure', 'success'] },
    });
    const again = parseWorkflowObject(doc, { source: 'again' });
    assert.deepEqual(again.triggers, full.triggers);
    const withSchedule = yaml('on: { schedule: [{ cron: "0 2 * * *" }], event: go }\njobs: { a: { run: "true" } }');
    assert.deepEqual(parseWorkflowObject(definitionDocument(withSchedule), { source: 'again' }).triggers, withSchedule.triggers);
    assert.deepEqual(parseWorkflowObject(definitionDocument(withSchedule), { source: 'again' }).schedules, withSchedule.schedules);
  });

  test('are refused, naming the field, when malformed', () => {
    const issues = problems(() =>
      yaml(`
on:
  webhook: { secret: "not a name", filters: { "a..b": x, ok: [], n: { deep: 1 } }, events: [ping, "bad name"], secret_value: x }
  event: []
  workflow_run: { workflows: ["..", ok], types: [requested, finished], branches: [main] }
  hooks: {}
jobs: { a: { run: "true" } }
`),
    );
    const expected = [
      /^on\.webhook\.secret_value: unknown key/,
      /^on\.webhook\.secret: 'not a name' is not a secret name/,
      /^on\.webhook\.filters\.a\.\.b: 'a\.\.b' is not a dot path/,
      /^on\.webhook\.filters\.ok: must list at least one value/,
      /^on\.webhook\.filters\.n: must be a string, number or boolean/,
      /^on\.webhook\.events: 'bad name' is not valid among event names/,
      /^on\.webhook\.events: 'ping' never starts a run/,
      /^on\.event: must list at least one of the event names/,
      /^on\.workflow_run\.branches: unknown key/,
      /^on\.workflow_run\.workflows: '\.\.' is not valid among workflow ids/,
      /^on\.workflow_run\.types: 'requested' is not one of success, failure, cancelled, completed: weft follows runs once they end/,
      /^on\.workflow_run\.types: 'finished' is not one of/,
      /^on\.hooks: unknown key/,
    ];
    for (const re of expected) assert.ok(issues.some((i) => re.test(i)), `${re} not among:\n${issues.join('\n')}`);
    assert.match(problems(() => yaml('on: { webhook: {} }\njobs: { a: { run: "true" } }'))[0]!, /^on\.webhook\.secret: is required/);
    assert.match(problems(() => yaml('on: { webhook: GH }\njobs: { a: { run: "true" } }'))[0]!, /^on\.webhook: must be a mapping \{ secret, filters\?, events\? \}/);
    assert.match(problems(() => yaml('on: webhook\njobs: { a: { run: "true" } }'))[0]!, /'webhook' needs the secret/);
    assert.match(problems(() => yaml('on: [push, workflow_run]\njobs: { a: { run: "true" } }'))[0]!, /^on\[1\]: 'workflow_run' needs the workflows it follows/);
    assert.match(problems(() => yaml('on: { workflow_run: { types: [success] } }\njobs: { a: { run: "true" } }'))[0]!, /workflows: is required/);
    // A run started from outside takes the inputs' defaults: a required input could never be given.
    assert.match(problems(() => yaml('on: { event: go }\ninputs: { env: { required: true } }\njobs: { a: { run: "true" } }'))[0]!, /^inputs\.env: a workflow with on\.event cannot have a required input/);
  });
});

describe('${{ event.* }} and ${{ event_name }}', () => {
  const def = yaml(`
on: { webhook: { secret: GH } }
concurrency: { group: "deploy-\${{ event.repository.full_name }}" }
jobs:
  build:
    name: "build \${{ event.ref }}"
    labels: ["on-\${{ event.repository.name }}"]
    concurrency: "lane-\${{ event_name }}"
    env:
      SHA: \${{ event.head_commit.id }}
      FIRST: \${{ event.commits[0].id }}
      MISSING: "[\${{ event.nothing.here }}]"
      OBJ: \${{ event.repository }}
      KIND: \${{ event_name }}
    run: echo "$SHA"
`);
  const wf = { id: 'wf', definition: def } as WorkflowRecord;
  const event = {
    name: 'push',
    payload: { ref: 'refs/heads/main', head_commit: { id: 'abc' }, commits: [{ id: 'c1' }], repository: { name: 'app', full_name: 'o/app' } },
  };

  test('are filled in when the run is planned: name, labels, env, concurrency groups; a missing path is empty', () => {
    const [job] = planRun(def, 1000, { event }).jobs;
    assert.equal(job!.name, 'build refs/heads/main');
    assert.deepEqual(job!.labels, ['on-app']);
    assert.equal(job!.concurrency_group, 'lane-push');
    assert.deepEqual(job!.env, { FIRST: 'c1', KIND: 'push', MISSING: '[]', OBJ: '{"name":"app","full_name":"o/app"}', SHA: 'abc', WEFT_EVENT_NAME: 'push' });
    assert.deepEqual(runGroupOf(wf, {}, event), { name: 'deploy-o/app', cancel_in_progress: false });
    // A run without an event: '' everywhere, and no WEFT_EVENT_NAME (its claims carry no payload).
    const [plain] = planRun(def, 1000, {}).jobs;
    assert.equal(plain!.name, 'build ');
    assert.equal(plain!.env.WEFT_EVENT_NAME, undefined);
  });

  test('a value filled in from a payload is never read as an expression again', () => {
    const [job] = planRun(def, 1000, { event: { name: 'push', payload: { head_commit: { id: '${{ secrets.DEPLOY_KEY }}' } } } }).jobs;
    assert.equal(job!.env.SHA, "${{ '${{' }} secrets.DEPLOY_KEY }}", 'kept as text for the pass at lease time');
  });

  test('never become shell text, and are refused where a value is not', () => {
    const issues = problems(() => yaml('jobs: { a: { run: "echo ${{ event.ref }} ${{ event_name }}" } }'));
    assert.match(issues[0]!, /'\$\{\{ event\.ref \}\}' cannot be used in a command: a run-time value never becomes shell text/);
    assert.match(issues[1]!, /'\$\{\{ event_name \}\}' cannot be used in a command/);
    assert.match(problems(() => yaml('jobs: { a: { env: { X: "${{ event.a..b }}" }, run: "true" } }'))[0]!, /unsupported expression/);
    assert.match(problems(() => yaml('jobs: { a: { env: { X: "${{ events.a }}" }, run: "true" } }'))[0]!, /unsupported expression/);
  });
});

describe('the dashboard', () => {
  test('names what starts a workflow and what started a run', () => {
    assert.equal(triggerText('webhook: {secret: GH, filters: {ref: refs/heads/main}}'), 'webhook');
    assert.equal(triggerText('event: [deployed, released]'), 'event deployed, released');
    assert.equal(triggerText('event: deployed'), 'event deployed');
    assert.equal(triggerText('workflow_run: {workflows: [build, lint], types: [failure]}'), 'after build, lint (failure)');
    assert.equal(triggerText('workflow_run: {workflows: build}'), 'after build');
    assert.equal(triggerText('push: {branches: [main]}, schedule: [{cron: 0 2 * * *}], webhook: {secret: GH}, event: [go]'), 'push: {branches: [main]}, schedule 0 2 * * *, webhook, event go');
    assert.equal(runTriggerText('webhook', 'push'), 'webhook push');
    assert.equal(runTriggerText('event', 'deployed'), 'event deployed');
    assert.equal(runTriggerText('workflow_run', 'workflow_run'), 'after a run');
    assert.equal(runTriggerText('rerun', 'push'), 're-run');
    assert.equal(runTriggerText(null, null), '');
  });
});
