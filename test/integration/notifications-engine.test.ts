/**
 * Notifications (README "Notifications") against a server in this process, whose timings the test
 * sets (a give-up age of a fraction of a second instead of a day) and whose HTTP client it may point
 * elsewhere (a Slack URL led to the local receiver): giving up after the age, Slack's format chosen by
 * the URL's host, webhook URLs kept in secrets, and hostile `notify:` entries refused.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { client, until } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';
import { startReceiver } from '../helpers/receiver.js';
import { parseSecretKey } from '../../src/engine/secret-box.js';
import type { NotifySettings } from '../../src/engine/notifications.js';

type Http = ReturnType<typeof client>;

async function setup(t: TestContext, notify: Partial<NotifySettings>) {
  const recv = await startReceiver();
  t.after(() => recv.close());
  const server = await startInProcess({
    secretKey: parseSecretKey(randomBytes(32).toString('base64'), 'WEFT_SECRET_KEY'),
    notify: { pollMs: 50, publicUrl: 'http://weft.test', ...notify },
  });
  t.after(() => server.close());
  return { recv, server, http: client(server.url) };
}

async function failRun(http: Http, wf: string): Promise<void> {
  await http.run(wf);
  const c = await until(() => http.claim(), `the job of ${wf}`);
  assert.equal(c.job.workflow_id, wf);
  assert.equal((await http.post(`/api/jobs/${c.lease.lease_id}/fail`, { error: 'broke', retryable: false })).status, 200);
}

const only = async (http: Http, wf: string, pred: (n: any) => boolean, what: string) =>
  until(async () => {
    const [n] = (await http.get(`/api/notifications?workflow_id=${wf}`)).body as any[];
    return n && pred(n) ? n : null;
  }, what);

test('a notification that keeps failing is retried with growing delays, then failed for good with the last error', async (t) => {
  const { recv, http } = await setup(t, { retry: { baseMs: 20, maxMs: 80, giveUpMs: 400 }, timeoutMs: 2000, claimMs: 10_000 });
  recv.answer = () => ({ status: 500, body: 'nope\nnot today' });
  await http.createWorkflow({ id: 'doomed', jobs: { a: { run: 'false' } }, notify: [{ webhook: `${recv.url}/hook` }] });
  await failRun(http, 'doomed');
  const n = await only(http, 'doomed', (x) => x.status === 'failed', 'the notification to give up');
  assert.equal(n.last_error, 'HTTP 500: nope not today');
  assert.ok(n.attempts >= 2, `attempts: ${n.attempts}`);
  assert.equal(n.next_attempt_at_ms, null);
  assert.equal(recv.received.length, n.attempts, 'one request per attempt');
  assert.ok(recv.received.every((r) => r.delivery === n.id));
  const attempts = recv.received.length;
  // Failed for good: later passes leave it alone.
  await until(async () => (await http.get('/api/notifications?status=failed')).body.length === 1, 'the failed list');
  assert.equal((await http.get('/api/notifications?status=pending')).body.length, 0);
  assert.equal(recv.received.length, attempts);
});

test("a Slack incoming-webhook URL gets Slack's format, chosen by the URL's host; its token is masked in the list", async (t) => {
  let recvUrl = '';
  const { recv, http } = await setup(t, {
    // Slack's host, led to the local receiver: what is sent is what Slack would get.
    fetch: (input, init) => {
      const u = new URL(String(input));
      assert.equal(u.hostname, 'hooks.slack.com');
      return fetch(`${recvUrl}${u.pathname}`, init);
    },
  });
  recvUrl = recv.url;
  const token = 'XXXXXXXXXXXXXXXXXXXXXXXX';
  await http.createWorkflow({ id: 'chatty', jobs: { a: { run: 'false' } }, notify: [{ on: ['failure'], webhook: `https://hooks.slack.com/services/T0001/B0001/${token}` }] });
  await failRun(http, 'chatty');
  const [got] = await recv.waitFor(1, 'the Slack message');
  assert.equal(got!.path, `/services/T0001/B0001/${token}`);
  assert.deepEqual(Object.keys(got!.body), ['text']);
  assert.match(got!.body.text, /^:x: \*chatty\* <http:\/\/weft\.test\/#\/workflows\/chatty\/runs\/1\|run 1> failed after \d+s \(manual\)\n• `a` failed: broke$/);
  const n = await only(http, 'chatty', (x) => x.status === 'delivered', 'delivered');
  assert.equal(n.format, 'slack');
  assert.equal(n.url, 'https://hooks.slack.com/services/T0001/B0001/***');
});

test('a webhook URL kept in a secret is opened at each attempt; one that is missing or no URL is said without its value', async (t) => {
  const { recv, http } = await setup(t, { retry: { baseMs: 20, maxMs: 50, giveUpMs: 3_600_000 } });
  assert.equal((await http.put('/api/secrets/HOOK_URL', { value: `${recv.url}/from-secret?sig=abc123` })).status, 201);
  const NOT_URL = `not-a-url-${randomBytes(6).toString('hex')}`;
  assert.equal((await http.put('/api/secrets/NOT_URL', { value: NOT_URL })).status, 201);
  for (const [id, ref] of [['kept', 'HOOK_URL'], ['broken', 'NOT_URL'], ['late', 'LATE_URL']] as const) {
    await http.createWorkflow({ id, jobs: { a: { run: 'false' } }, notify: [{ webhook: `\${{ secrets.${ref} }}` }] });
    await failRun(http, id);
  }
  const [got] = await recv.waitFor(1, 'the delivery to the URL in the secret');
  assert.equal(got!.path, '/from-secret?sig=abc123');
  const kept = await only(http, 'kept', (x) => x.status === 'delivered', 'delivered');
  assert.deepEqual([kept.url, kept.format], ['${{ secrets.HOOK_URL }}', null], 'the list shows the reference, never the URL it holds');

  const broken = await only(http, 'broken', (x) => x.attempts >= 2, 'attempts of the broken one');
  assert.equal(broken.status === 'pending' || broken.status === 'delivering', true);
  assert.equal(broken.last_error, 'the webhook URL in secret NOT_URL is not an absolute URL (write it as https://host/path)');
  const late = await only(http, 'late', (x) => x.attempts >= 2, 'attempts of the late one');
  assert.match(late.last_error, /^secret LATE_URL is not set: set it with `weft secret set LATE_URL` \(or --workflow late\)/);
  assert.ok(!JSON.stringify((await http.get('/api/notifications')).body).includes(NOT_URL), 'a secret value never shows');

  // Set late, it still counts: the next attempt opens it.
  assert.equal((await http.put('/api/secrets/LATE_URL?workflow_id=late', { value: `${recv.url}/late` })).status, 201);
  await recv.waitFor(1, 'the late delivery', (r) => r.path === '/late');
  await only(http, 'late', (x) => x.status === 'delivered', 'the late one delivered');
});

test('hostile notify: entries are refused with the field named: other schemes, URLs mixing in secrets, unknown keys and ends', async (t) => {
  const server = await startInProcess();
  t.after(() => server.close());
  const http = client(server.url);
  const cases: Array<[unknown, RegExp]> = [
    [[{ webhook: 'file:///etc/passwd' }], /notify\[0\]\.webhook'?: must be an http or https URL, not file/],
    [[{ webhook: 'javascript:alert(1)' }], /must be an http or https URL, not javascript/],
    [[{ webhook: 'gopher://127.0.0.1:6379/_FLUSHALL' }], /not gopher/],
    [[{ webhook: 'https://evil.example/?k=${{ secrets.DEPLOY_KEY }}' }], /a whole \$\{\{ secrets\.NAME \}\}/],
    [[{ webhook: 'https://ok.example/\r\nX-Injected: 1' }], /must not contain spaces or control characters/],
    [[{ webhook: `https://ok.example/${'a'.repeat(3000)}` }], /at most 2048/],
    [[{ url: 'https://ok.example/' }], /notify\[0\]\.url'?: .*webhook/],
    [[{ webhook: 'https://ok.example/', on: ['failed'] }], /notify\[0\]\.on\[0\]'?: must be one of failure, success, cancelled, got string 'failed': write 'failure'/],
    [[{ webhook: 'https://ok.example/', on: [] }], /must be a list of failure, success, cancelled, got an empty list/],
    [[{ webhook: 'https://ok.example/', secret: '${{ secrets.KEY }}' }], /names the secret itself: write KEY/],
    [[{ webhook: 'https://ok.example/', secret: 'bad-name' }], /must name a secret/],
    [[{ webhook: 'https://ok.example/', format: 'teams' }], /must be one of json, slack/],
    [Array.from({ length: 11 }, () => ({ webhook: 'https://ok.example/' })), /has 11 entries; at most 10/],
    ['https://ok.example/', /must be a list of \{on, webhook, secret\?, format\?\}/],
  ];
  for (const [notify, re] of cases) {
    const r = await http.post('/api/workflows', { id: 'hostile', jobs: { a: { run: 'true' } }, notify });
    assert.equal(r.status, 400, `${JSON.stringify(notify).slice(0, 80)}: ${r.text}`);
    assert.equal(r.body.error, 'invalid_workflow');
    assert.match(r.body.message, re, r.body.message);
  }
  // A single mapping is taken as a list of one, and `on` defaults to failures.
  const ok = await http.post('/api/workflows', { id: 'fine', jobs: { a: { run: 'true' } }, notify: { webhook: 'https://ok.example/hook' } });
  assert.equal(ok.status, 201, ok.text);
  const def = await http.get('/api/workflows/fine/definition');
  assert.deepEqual(def.body.notify, [{ on: ['failure'], webhook: 'https://ok.example/hook' }]);
});
