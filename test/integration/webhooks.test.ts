/**
 * Webhooks (README "Webhooks") over real HTTP: a delivery signed as GitHub signs it (HMAC-SHA256 of the
 * exact bytes, computed here) starts a run whose job, run by a real `weft worker`, reads the payload
 * from $WEFT_EVENT_PATH and `${{ event.* }}` from its env; every refusal (no signature, a wrong one, a
 * wrong secret, an unknown workflow, a workflow without on.webhook, a secret not set) reads the same
 * and starts nothing; the 1 MiB cap, filters, `ping`, repeated deliveries, hostile bodies and headers;
 * and a re-run that keeps its run's event.
 */
import { before, after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseSecretKey } from '../../src/engine/secret-box.js';
import { WorkflowClient } from '../../src/client/index.js';
import { client, rawRequest, request, until } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, startInProcess, track, type InProcessServer } from '../helpers/server.js';

const LIMIT = 1024 * 1024;
const SECRET = 'It is a secret to everybody';

/** What GitHub sends: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body's bytes under the hook's secret>`. */
function githubSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(typeof body === 'string' ? Buffer.from(body) : body).digest('hex')}`;
}

function deliver(base: string, id: string, body: Buffer | string, headers: Record<string, string> = {}, secret: string | null = SECRET) {
  return rawRequest(base, 'POST', `/api/hooks/${id}`, body, {
    'x-github-event': 'push',
    ...(secret !== null ? { 'x-hub-signature-256': githubSignature(secret, body) } : {}),
    ...headers,
  });
}

const PUSH = {
  ref: 'refs/heads/main',
  repository: { full_name: 'octo/app' },
  // What a commit message may hold: never shell text (README "Values").
  head_commit: { id: '6dcb09b5b57875f334f61aebed695e2e4193db5e', message: 'fix "$(touch /tmp/pwned)"; `id` & $HOME' },
};

test('a GitHub-signed delivery starts a run; weft worker gives its job the payload in $WEFT_EVENT_PATH and ${{ event.* }} in its env', async (t) => {
  const sb = sandbox(t);
  fs.writeFileSync(
    path.join(sb.workflowsDir, 'hook.yml'),
    [
      'on:',
      '  webhook: { secret: GH_HOOK, filters: { ref: refs/heads/main } }',
      'jobs:',
      '  build:',
      '    name: build ${{ event.head_commit.id }}',
      '    env:',
      '      SHA: ${{ event.head_commit.id }}',
      '      REPO: ${{ event.repository.full_name }}',
      '      MSG: ${{ event.head_commit.message }}',
      '    run: |',
      '      echo "::set-output sha=$SHA"',
      '      echo "::set-output repo=$REPO"',
      '      echo "::set-output msg=$MSG"',
      '      echo "::set-output kind=$WEFT_EVENT_NAME"',
      '      echo "::set-output file=$(cat "$WEFT_EVENT_PATH")"',
      '      echo "::set-output path=$WEFT_EVENT_PATH"',
      '      echo "::set-output cwd=$PWD"',
      '',
    ].join('\n'),
  );
  const server = await serverProcess(t, sb, { WEFT_SECRET_KEY: randomBytes(32).toString('base64') });
  const api = client(server.url);
  assert.equal((await api.put('/api/secrets/GH_HOOK?workflow_id=hook', { value: SECRET })).status, 201);

  // Odd spacing on purpose: the signature covers these very bytes, not a re-serialization of them.
  const body = Buffer.from(`{ "ref": "refs/heads/main",\n  "repository": ${JSON.stringify(PUSH.repository)},  "head_commit": ${JSON.stringify(PUSH.head_commit)} }`);
  const r = await deliver(server.url, 'hook', body, { 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' });
  assert.equal(r.status, 202, r.text);
  assert.deepEqual(r.body, { workflow_id: 'hook', started: true, duplicate: false, run_number: 1, status: 'running' });
  assert.equal(r.headers['www-authenticate'], undefined);

  const work = path.join(sb.dir, 'work');
  track(t, spawnWeft(['worker'], { SERVER_URL: server.url, LONG_POLL_SECS: '1', WORK_DIR: work }, sb.dir));
  const done = await api.settled('hook', 60_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs));
  assert.equal(done.run.trigger, 'webhook');
  assert.equal(done.run.event_name, 'push');
  const job = done.jobs[0];
  assert.equal(job.name, `build ${PUSH.head_commit.id}`);
  assert.deepEqual(
    { sha: job.outputs.sha, repo: job.outputs.repo, msg: job.outputs.msg, kind: job.outputs.kind },
    { sha: PUSH.head_commit.id, repo: 'octo/app', msg: PUSH.head_commit.message, kind: 'push' },
  );
  assert.equal(fs.existsSync('/tmp/pwned'), false, 'the commit message stayed text');
  assert.deepEqual(JSON.parse(job.outputs.file), PUSH, 'the file holds the payload');
  // The file is beside the attempt's directory, never in it (its `artifacts:` patterns cannot pick it up), and goes with it.
  assert.ok(job.outputs.path.startsWith(work + path.sep), job.outputs.path);
  assert.ok(!job.outputs.path.startsWith(job.outputs.cwd + path.sep), `${job.outputs.path} is inside ${job.outputs.cwd}`);
  await until(() => !fs.existsSync(job.outputs.path), 'the event file to be removed after the attempt', 60_000, 50);

  // GET …/event answers the payload as the run keeps it (what other workers write to a file).
  const kept = await api.get('/api/workflows/hook/runs/1/event');
  assert.equal(kept.status, 200);
  assert.equal(kept.headers.get('x-weft-event-name'), 'push');
  assert.deepEqual(kept.body, PUSH);
  assert.equal((await api.get('/api/workflows/hook/runs/2/event')).body.error, 'run_not_found');
});

describe('webhook deliveries against one server', () => {
  let s: InProcessServer;
  let api: ReturnType<typeof client>;
  const latest = async (id: string) => (await api.status(id)).run_number;

  before(async () => {
    // A server taking larger bodies elsewhere: the hook's own 1 MiB cap is what holds.
    s = await startInProcess({ secretKey: parseSecretKey(randomBytes(32).toString('base64'), 'WEFT_SECRET_KEY'), bodyLimitBytes: 4 * LIMIT });
    api = client(s.url);
    await s.engine.secrets.set('GH_HOOK', null, SECRET, null);
    // Its own secret wins over the global one (README "Secrets").
    await api.createWorkflow({ id: 'own', on: { webhook: { secret: 'GH_HOOK' } }, jobs: { a: { run: 'true' } } });
    await s.engine.secrets.set('GH_HOOK', 'own', 'its very own secret', null);
    await api.createWorkflow({ id: 'hook', on: { webhook: { secret: 'GH_HOOK' } }, concurrency: { max_runs: 100, when_full: 'queue' }, jobs: { a: { name: 'a ${{ event.n }}', run: 'true' } } });
    await api.createWorkflow({ id: 'filtered', on: { webhook: { secret: 'GH_HOOK', filters: { ref: 'refs/heads/main', 'repository.full_name': ['o/a', 'o/b'] }, events: ['push', 'release'] } }, concurrency: { max_runs: 100 }, jobs: { a: { run: 'true' } } });
    await api.createWorkflow({ id: 'no-hook', on: { push: {} }, jobs: { a: { run: 'true' } } });
    await api.createWorkflow({ id: 'unset', on: { webhook: { secret: 'NOT_SET' } }, jobs: { a: { run: 'true' } } });
  });
  after(() => s.close());

  test('every refusal is the same 401, whatever is wrong, and starts nothing', async () => {
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const answers = [
      await deliver(s.url, 'hook', body, {}, null),
      await deliver(s.url, 'hook', body, { 'x-hub-signature-256': '' }, null),
      await deliver(s.url, 'hook', body, { 'x-hub-signature-256': 'sha256=' + '0'.repeat(64) }, null),
      await deliver(s.url, 'hook', body, { 'x-hub-signature-256': githubSignature(SECRET, body).replace('sha256=', 'sha1=') }, null),
      await deliver(s.url, 'hook', body, {}, 'a wrong secret'),
      // Signed bytes that are not the bytes sent (the same JSON, spaced otherwise).
      await deliver(s.url, 'hook', body, { 'x-hub-signature-256': githubSignature(SECRET, JSON.stringify({ ref: 'refs/heads/main' }, null, 1)) }, null),
      // The global secret, where the workflow's own wins.
      await deliver(s.url, 'own', body),
      await deliver(s.url, 'no-such-workflow', body),
      await deliver(s.url, 'no-hook', body),
      await deliver(s.url, 'unset', body, {}, 'anything'),
    ];
    for (const r of answers) {
      assert.equal(r.status, 401, r.text);
      assert.deepEqual(r.body, answers[0]!.body, 'the same words, whatever is wrong');
      assert.equal(r.body.error, 'invalid_signature');
      assert.equal(r.headers['www-authenticate'], undefined);
    }
    for (const id of ['hook', 'own', 'no-hook', 'unset']) assert.equal(await latest(id), null, `${id} never ran`);
    // With the workflow's own secret it does start.
    assert.equal((await deliver(s.url, 'own', body, {}, 'its very own secret')).status, 202);
  });

  test('GitHub\'s form content type, filters, events and ping: started or skipped with the reason', async () => {
    const payload = { ref: 'refs/heads/main', repository: { full_name: 'o/b' } };
    const form = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
    const viaForm = await deliver(s.url, 'filtered', form, { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(viaForm.status, 202, viaForm.text);
    assert.equal(viaForm.body.started, true);
    assert.deepEqual((await api.get(`/api/workflows/filtered/runs/${viaForm.body.run_number}/event`)).body, payload);

    const skipped = async (body: unknown, event: string, reason: RegExp) => {
      const r = await deliver(s.url, 'filtered', JSON.stringify(body), { 'x-github-event': event });
      assert.equal(r.status, 202, r.text);
      assert.deepEqual([r.body.started, r.body.duplicate, r.body.run_number], [false, false, undefined]);
      assert.match(r.body.reason, reason);
    };
    const before = await latest('filtered');
    await skipped({ ...payload, ref: 'refs/heads/dev' }, 'push', /filters\.ref: the delivery has "refs\/heads\/dev" there, not "refs\/heads\/main"/);
    await skipped({ ...payload, repository: { full_name: 'o/c' } }, 'push', /filters\.repository\.full_name/);
    await skipped({ ref: 'refs/heads/main' }, 'push', /filters\.repository\.full_name: the delivery has nothing there/);
    await skipped(payload, 'issues', /event "issues" is not among on\.webhook\.events \(push, release\)/);
    await skipped({ zen: 'Design for failure.', hook_id: 1 }, 'ping', /^ping/);
    assert.equal(await latest('filtered'), before, 'nothing started');
    const other = await deliver(s.url, 'filtered', JSON.stringify(payload), { 'x-github-event': 'release' });
    assert.equal(other.body.started, true);
    assert.equal((await api.get(`/api/workflows/filtered/runs/${other.body.run_number}`)).body.run.event_name, 'release');
  });

  test('a delivery id seen before starts no second run: 200 with that run and duplicate: true', async () => {
    const body = JSON.stringify({ n: 1 });
    const first = await deliver(s.url, 'hook', body, { 'x-github-delivery': 'dup-1' });
    assert.equal(first.status, 202, first.text);
    for (const headers of [{ 'x-github-delivery': 'dup-1' }, { 'x-weft-delivery': 'dup-1' }] as Array<Record<string, string>>) {
      const again = await deliver(s.url, 'hook', JSON.stringify({ n: 2 }), headers);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, { workflow_id: 'hook', started: false, duplicate: true, run_number: first.body.run_number, status: 'running' });
    }
    assert.equal(await latest('hook'), first.body.run_number);
    assert.deepEqual((await api.get(`/api/workflows/hook/runs/${first.body.run_number}/event`)).body, { n: 1 });
    assert.deepEqual(await new WorkflowClient(s.url).getRunEvent('hook', first.body.run_number), { n: 1 }, 'the SDK reads it too');
    const next = await deliver(s.url, 'hook', body, { 'x-github-delivery': 'dup-2' });
    assert.deepEqual([next.status, next.body.run_number], [202, first.body.run_number + 1]);
    // No id: every delivery is its own.
    assert.equal((await deliver(s.url, 'hook', body)).body.run_number, first.body.run_number + 2);
  });

  test('the body cap is 1 MiB: one byte over is 413 (with or without Content-Length) and starts nothing; 1 MiB is taken', async () => {
    const shell = '{"n":1,"pad":""}';
    const exact = `{"n":1,"pad":"${'x'.repeat(LIMIT - shell.length)}"}`;
    assert.equal(Buffer.byteLength(exact), LIMIT);
    const over = `{"n":1,"pad":"${'x'.repeat(LIMIT - shell.length + 1)}"}`;
    const before = await latest('hook');
    for (const headers of [{}, { 'transfer-encoding': 'chunked' }] as Array<Record<string, string>>) {
      const r = await deliver(s.url, 'hook', over, headers);
      assert.equal(r.status, 413, r.text.slice(0, 200));
      assert.equal(r.body.error, 'payload_too_large');
      assert.match(r.body.message, /1048576 byte limit/);
    }
    assert.equal(await latest('hook'), before);
    const ok = await deliver(s.url, 'hook', exact);
    assert.equal(ok.status, 202, ok.text.slice(0, 200));
    assert.equal((await api.get(`/api/workflows/hook/runs/${ok.body.run_number}/event`)).body.pad.length, LIMIT - shell.length);
  });

  test('hostile bodies and headers: 4xx in the error shape, nothing started, the server serving on', async () => {
    const before = await latest('hook');
    const expect = (r: { status: number; body: any; text: string }, status: number, code: string, re?: RegExp) => {
      assert.equal(r.status, status, r.text.slice(0, 300));
      assert.equal(r.body?.error, code, r.text.slice(0, 300));
      if (re) assert.match(r.body.message, re);
    };
    expect(await deliver(s.url, 'hook', 'not json'), 400, 'invalid_json', /not JSON/);
    expect(await deliver(s.url, 'hook', ''), 400, 'invalid_json', /no payload/);
    expect(await deliver(s.url, 'hook', Buffer.from([0x7b, 0xff, 0x7d])), 400, 'invalid_json', /UTF-8/);
    expect(await deliver(s.url, 'hook', 'payload=%7Bnope', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_json');
    expect(await deliver(s.url, 'hook', 'zen=1', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_json', /`payload` field/);
    expect(await deliver(s.url, 'hook', '['.repeat(100_000) + ']'.repeat(100_000)), 400, 'invalid_json', /deeper than 64 levels/);
    // Unsigned, a wrong content type is refused before anything is read.
    expect(await deliver(s.url, 'hook', '{}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    expect(await deliver(s.url, 'hook', '<a/>', { 'content-type': 'application/xml' }), 415, 'unsupported_media_type');
    expect(await deliver(s.url, 'hook', '{}', { 'x-github-event': 'bad name!' }), 400, 'invalid_request', /X-GitHub-Event/);
    expect(await deliver(s.url, 'hook', '{}', { 'x-github-delivery': 'a b' }), 400, 'invalid_request', /X-GitHub-Delivery/);
    expect(await deliver(s.url, 'hook', '{}', { 'x-github-delivery': 'x'.repeat(201) }), 400, 'invalid_request');
    expect(await deliver(s.url, 'hook', '{}', { 'x-huge': 'h'.repeat(20 * 1024) }), 431, 'headers_too_large');
    expect(await deliver(s.url, 'hook%2f..%2fhook', '{}'), 401, 'invalid_signature');
    assert.equal(await latest('hook'), before, 'nothing started');
    // NUL and a lone surrogate in the payload's text: kept as U+FFFD wherever the run uses them.
    const odd = await deliver(s.url, 'hook', '{"n":"a\\u0000b\\ud800c"}');
    assert.equal(odd.status, 202, odd.text);
    const run = await api.get(`/api/workflows/hook/runs/${odd.body.run_number}`);
    assert.equal(run.body.jobs[0].name, 'a a\ufffdb\ufffdc');
    assert.equal((await api.get('/healthz')).status, 200);
  });

  test('a re-run of a run a delivery started sees the same event', async () => {
    const r = await deliver(s.url, 'filtered', JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'o/a' }, sha: 'abc' }));
    assert.equal(r.status, 202, r.text);
    const n = r.body.run_number;
    await api.post(`/api/workflows/filtered/cancel?run=${n}`);
    const again = await api.post(`/api/workflows/filtered/runs/${n}/rerun`, { only: 'all' });
    assert.equal(again.status, 202, again.text);
    assert.equal(again.body.run.trigger, 'rerun');
    assert.equal(again.body.run.event_name, 'push');
    assert.deepEqual((await api.get(`/api/workflows/filtered/runs/${again.body.run_number}/event`)).body, (await api.get(`/api/workflows/filtered/runs/${n}/event`)).body);
    // A run started by hand has none.
    const manual = await request('POST', `${s.url}/api/workflows/no-hook/run`);
    assert.equal(manual.body.run.event_name, null);
    const none = await api.get(`/api/workflows/no-hook/runs/${manual.body.run_number}/event`);
    assert.deepEqual([none.status, none.body.error], [404, 'event_not_found']);
  });
});
