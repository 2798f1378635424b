/**
 * Job ids, output names, env names and input names are map keys all the way from the definition to the
 * worker's environment. `__proto__`, `constructor` and `toString` are valid names ([A-Za-z0-9_.-]) that
 * a plain object treats as its prototype or inherits: each must travel as an ordinary key. A real
 * `weft server` and a real `weft worker`. Needs `npm run build` first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';
import { normalizeOutputs } from '../../src/worker/outcome.js';

const WORKER_ENV: Record<string, string | undefined> = {
  WORKER_LABELS: undefined,
  WORKER_ID: 'proto-worker',
  LEASE_TTL_SECS: undefined,
  HEARTBEAT_SECS: undefined,
  CONCURRENCY: undefined,
  CANCEL_POLL_SECS: undefined,
  KILL_GRACE_SECS: undefined,
  POLL_SECS: '0.2',
};

/** Prints the variables a job sees, one `NAME=value` line each, sorted, with the given prefixes. */
const dumpEnv = (prefixes: string) => `env | grep -E '^(${prefixes})' | sort`;

test('jobs __proto__ -> constructor -> toString pass outputs (one named __proto__) and results to each other through a real worker', async (t) => {
  const sb = sandbox(t, 'weft-proto-');
  const srv = await serverProcess(t, sb);
  const api = client(srv.url);
  // Written as JSON text: in an object literal, `__proto__: …` would set the prototype, not a key.
  const cmd = (text: string) => JSON.stringify(text);
  const body = `{
    "id": "proto",
    "env": { "__proto__": "workflow-env", "constructor": "c-env" },
    "inputs": { "__proto__": { "default": "in-proto" }, "constructor": { "default": "in-ctor" } },
    "jobs": {
      "__proto__": {
        "run": ${cmd("echo '::set-output __proto__=p-out'; echo '::set-output constructor=c-out'; echo '::set-output plain=x'")}
      },
      "constructor": {
        "needs": "__proto__",
        "env": { "toString": "job-env" },
        "run": ${cmd(`${dumpEnv('WEFT_NEEDS_|UPSTREAM_|WEFT_INPUT_|__proto__=|constructor=|toString=')}; echo "JSON=$WEFT_UPSTREAM_OUTPUTS"; echo '::set-output toString=t-out'`)}
      },
      "toString": {
        "needs": ["constructor", "__proto__"],
        "if": "always()",
        "run": ${cmd(`${dumpEnv('WEFT_NEEDS_|UPSTREAM_')}; echo "JSON=$WEFT_UPSTREAM_OUTPUTS"`)}
      }
    }
  }`;
  assert.deepEqual(Object.keys(JSON.parse(body).jobs), ['__proto__', 'constructor', 'toString']);
  const created = await api.post('/api/workflows', body);
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(
    created.body.jobs.map((j: any) => j.id),
    ['__proto__', 'constructor', 'toString'],
  );

  // The definition as the server gives it back keeps every job.
  const rendered = await api.get('/api/workflows/proto/definition');
  assert.equal(rendered.status, 200, rendered.text);
  assert.deepEqual(Object.keys(rendered.body.jobs), ['__proto__', 'constructor', 'toString']);
  assert.deepEqual(Object.keys(rendered.body.env), ['__proto__', 'constructor']);

  track(t, spawnWeft(['worker'], { ...WORKER_ENV, SERVER_URL: srv.url }, sb.dir));
  await api.run('proto');
  const doc = await api.settled('proto', 30_000);
  assert.equal(doc.status, 'success', JSON.stringify(doc.jobs));

  const stdout = async (job: string) => {
    const r = await api.get(`/api/workflows/proto/jobs/${job}/logs`);
    assert.equal(r.status, 200, r.text);
    return (r.body as any[]).filter((c) => c.stream === 'stdout').map((c) => c.data).join('');
  };

  const first = await api.get('/api/workflows/proto/runs/1');
  const outputs = first.body.jobs.find((j: any) => j.id === '__proto__').outputs;
  assert.deepEqual(Object.entries(outputs).sort(), [['__proto__', 'p-out'], ['constructor', 'c-out'], ['plain', 'x']]);

  const second = (await stdout('constructor')).split('\n');
  for (const line of [
    'WEFT_NEEDS___PROTO___RESULT=success',
    'UPSTREAM___PROTO_____PROTO__=p-out',
    'UPSTREAM___PROTO___CONSTRUCTOR=c-out',
    'UPSTREAM___PROTO___PLAIN=x',
    'WEFT_INPUT___PROTO__=in-proto',
    'WEFT_INPUT_CONSTRUCTOR=in-ctor',
    '__proto__=workflow-env',
    'constructor=c-env',
    'toString=job-env',
  ]) {
    assert.ok(second.includes(line), `constructor's env lacks ${line}:\n${second.join('\n')}`);
  }
  const upstream = JSON.parse(second.find((l) => l.startsWith('JSON='))!.slice(5));
  assert.deepEqual(Object.keys(upstream), ['__proto__']);
  assert.deepEqual(Object.entries(upstream.__proto__ ?? {}).sort(), [['__proto__', 'p-out'], ['constructor', 'c-out'], ['plain', 'x']]);

  const third = (await stdout('toString')).split('\n');
  for (const line of [
    'WEFT_NEEDS___PROTO___RESULT=success',
    'WEFT_NEEDS_CONSTRUCTOR_RESULT=success',
    'UPSTREAM_CONSTRUCTOR_TOSTRING=t-out',
    'UPSTREAM___PROTO_____PROTO__=p-out',
  ]) {
    assert.ok(third.includes(line), `toString's env lacks ${line}:\n${third.join('\n')}`);
  }
  const up3 = JSON.parse(third.find((l) => l.startsWith('JSON='))!.slice(5));
  assert.deepEqual(Object.keys(up3).sort(), ['__proto__', 'constructor']);
});

test('outputs an embedded handler returns keep a key named __proto__', () => {
  const out = normalizeOutputs(JSON.parse('{"__proto__":"p","constructor":"c","n":1}'));
  assert.deepEqual(Object.entries(out).sort(), [['__proto__', 'p'], ['constructor', 'c'], ['n', '1']]);
});
