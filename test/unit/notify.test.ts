/**
 * Notifications' rules (README "Notifications"): the format chosen by URL, masking in the list,
 * retry times with jitter and the give-up age, the Slack text, the signature, the definition's
 * `notify:` written back, and the NOTIFY_* and PUBLIC_URL settings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { stringify } from 'yaml';
import {
  formatFor,
  isSlackWebhook,
  maskedWebhook,
  nextAttemptAt,
  runLink,
  shortError,
  slackText,
  webhookSecretName,
  webhookUrlProblem,
  type NotificationPayload,
} from '../../src/domain/notify.js';
import { bodyOf, signature } from '../../src/engine/notify-delivery.js';
import { definitionDocument, parseWorkflowObject, parseWorkflowText } from '../../src/definitions/index.js';
import { ConfigError, loadServerConfig } from '../../src/runtime/config.js';
import { notifySettings } from '../../src/runtime/notify-config.js';

test('the format follows the URL: Slack for hooks.slack.com, JSON elsewhere, unless `format` says', () => {
  assert.equal(isSlackWebhook('https://hooks.slack.com/services/T/B/x'), true);
  assert.equal(isSlackWebhook('https://HOOKS.SLACK.COM/services/T/B/x'), true);
  assert.equal(isSlackWebhook('https://hooks.slack.com.evil.example/services'), false);
  assert.equal(isSlackWebhook('https://evil.example/hooks.slack.com'), false);
  assert.equal(formatFor('https://hooks.slack.com/services/T/B/x', null), 'slack');
  assert.equal(formatFor('https://hooks.slack.com/services/T/B/x', 'json'), 'json');
  assert.equal(formatFor('https://chat.example/hooks/abc', undefined), 'json');
  assert.equal(formatFor('https://chat.example/hooks/abc', 'slack'), 'slack', 'a Slack-compatible receiver (Mattermost) asks for it');
});

test('a webhook as the list shows it: user, password, query values and token-like segments masked', () => {
  assert.equal(maskedWebhook('https://hooks.slack.com/services/T0001/B0001/XXXXXXXXXXXXXXXXXXXXXXXX'), 'https://hooks.slack.com/services/T0001/B0001/***');
  assert.equal(maskedWebhook('https://user:pa55@ci.example:8443/hook?token=abc&x=1'), 'https://***@ci.example:8443/hook?token=***&x=***');
  assert.equal(maskedWebhook('https://discord.com/api/webhooks/123456789012345678/aVeryLongTokenValue'), 'https://discord.com/api/webhooks/***/***');
  assert.equal(maskedWebhook('http://127.0.0.1:9000/notify'), 'http://127.0.0.1:9000/notify');
  assert.equal(maskedWebhook('${{ secrets.HOOK }}'), '${{ secrets.HOOK }}');
  assert.equal(maskedWebhook('not a url'), '***');
});

test('a webhook URL: http or https, absolute, bounded, no control characters; a secret reference is the whole value', () => {
  assert.equal(webhookUrlProblem('https://ok.example/a?b=c'), null);
  assert.equal(webhookUrlProblem('http://10.0.0.1:8080/'), null);
  assert.match(webhookUrlProblem('ftp://x/')!, /not ftp/);
  assert.match(webhookUrlProblem('/relative')!, /not an absolute URL/);
  assert.match(webhookUrlProblem('https://ok.example/\n')!, /control/);
  assert.equal(webhookSecretName('${{ secrets.HOOK_URL }}'), 'HOOK_URL');
  assert.equal(webhookSecretName('${{secrets.X}}'), 'X');
  assert.equal(webhookSecretName('https://x/${{ secrets.X }}'), null);
  assert.equal(webhookSecretName('${{ inputs.X }}'), null);
});

test('retries: doubling from the base up to the cap, each drawn between half and all of it; none past the give-up age', () => {
  const policy = { baseMs: 1000, maxMs: 8000, giveUpMs: 60_000 };
  const at = (attempts: number, r: number, now = 10_000) => nextAttemptAt(policy, attempts, 0, now, () => r)!;
  assert.deepEqual([1, 2, 3, 4, 5, 9].map((n) => at(n, 1) - 10_000), [1000, 2000, 4000, 8000, 8000, 8000]);
  assert.deepEqual([1, 2, 3, 4].map((n) => at(n, 0) - 10_000), [500, 1000, 2000, 4000], 'at least half: the jitter never collapses the delay');
  assert.equal(nextAttemptAt(policy, 1, 0, 59_001, () => 1), null, 'the next attempt would come after the give-up age');
  assert.equal(nextAttemptAt(policy, 1, 0, 59_000, () => 1), 60_000, 'at the age exactly it still comes');
  assert.equal(nextAttemptAt(policy, 1, 0, 59_000, () => 0), 59_500);
  assert.equal(nextAttemptAt(policy, 1000, 0, 0, () => 1), 8000, 'a huge attempt count stays at the cap');
});

const payload: NotificationPayload = {
  event: 'run_ended',
  workflow_id: 'ci',
  workflow_name: 'CI <main> & co',
  run_number: 7,
  status: 'failed',
  trigger: 'schedule',
  started_at: '2024-01-01T00:00:00.000Z',
  ended_at: '2024-01-01T00:02:05.000Z',
  started_at_ms: 1704067200000,
  ended_at_ms: 1704067325000,
  duration_ms: 125_000,
  failed_jobs: [
    { job_id: 'test', name: 'Test', attempts: 3, error: 'exit 1\nmore lines' },
    { job_id: 'lint', name: 'lint', attempts: 1, error: null },
  ],
  failed_jobs_total: 5,
  url: 'https://weft.example.com/#/workflows/ci/runs/7',
};

test("Slack's text: the run linked, the failed jobs with their first error line, the rest counted, mrkdwn escaped", () => {
  assert.equal(
    slackText(payload),
    [
      ':x: *CI &lt;main&gt; &amp; co* <https://weft.example.com/#/workflows/ci/runs/7|run 7> failed after 2m 5s (schedule)',
      '• `test` failed after 3 attempts: exit 1',
      '• `lint` failed',
      '• … and 3 more failed jobs',
    ].join('\n'),
  );
  assert.equal(
    slackText({ ...payload, status: 'success', failed_jobs: [], failed_jobs_total: 0, url: null, trigger: null, workflow_name: 'CI' }),
    ':white_check_mark: *CI* run 7 succeeded after 2m 5s',
  );
  assert.deepEqual(JSON.parse(bodyOf({ format: 'slack', payload: JSON.stringify(payload) })), { text: slackText(payload) });
  const raw = JSON.stringify(payload);
  assert.equal(bodyOf({ format: 'json', payload: raw }), raw, 'JSON is sent as stored: every attempt the same bytes');
});

test("the signature is GitHub's: sha256= and the hex HMAC-SHA256 of the raw body", () => {
  const body = '{"a":1}';
  assert.equal(signature('It\'s a Secret to Everybody', 'Hello, World!'), 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
  assert.equal(signature('k', body), `sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
});

test('errors and links in a payload', () => {
  assert.equal(shortError(null), null);
  assert.equal(shortError('x'.repeat(1000)), 'x'.repeat(1000));
  assert.equal(shortError('x'.repeat(1001)), `${'x'.repeat(999)}…`);
  assert.equal(runLink('https://w.example/base/', 'a b/c', 3), 'https://w.example/base/#/workflows/a%20b%2Fc/runs/3');
  assert.equal(runLink(null, 'a', 1), null);
});

test('notify: written back as a workflow file parses to the same definition; absent, the definition is as before', () => {
  const def = parseWorkflowText(
    [
      'jobs: { a: { run: "true" } }',
      'notify:',
      '  - { on: [success, failure], webhook: "https://ops.example/hook", secret: HOOK_KEY }',
      '  - { on: cancelled, webhook: "${{ secrets.SLACK_URL }}", format: slack }',
      '  - webhook: "https://ops.example/failures"',
    ].join('\n'),
    { source: 'n.yml', format: 'yaml', id: 'n' },
  );
  assert.deepEqual(def.notify, [
    { on: ['failure', 'success'], webhook: 'https://ops.example/hook', secret: 'HOOK_KEY' },
    { on: ['cancelled'], webhook: '${{ secrets.SLACK_URL }}', format: 'slack' },
    { on: ['failure'], webhook: 'https://ops.example/failures' },
  ]);
  const doc = definitionDocument(def);
  assert.deepEqual(parseWorkflowText(stringify(doc), { source: 'n.yml', format: 'yaml', id: 'n' }), def);
  assert.deepEqual(parseWorkflowObject(doc, { source: 'render' }), def);
  const plain = parseWorkflowObject({ id: 'p', jobs: { a: { run: 'true' } } }, { source: 'p' });
  assert.equal('notify' in plain, false);
  assert.equal('notify' in definitionDocument(plain), false);
  assert.equal('notify' in parseWorkflowObject({ id: 'p', jobs: { a: { run: 'true' } }, notify: [] }, { source: 'p' }), false);
  // The array form takes it too.
  const arr = parseWorkflowObject({ id: 'arr', jobs: [{ id: 'a', command: 'true' }], notify: [{ webhook: 'https://x.example/' }] }, { source: 'arr' });
  assert.deepEqual(arr.notify, [{ on: ['failure'], webhook: 'https://x.example/' }]);
});

test('NOTIFY_* and PUBLIC_URL: defaults, values, and malformed values stopping the start', () => {
  const base = loadServerConfig({});
  assert.deepEqual(base.notify, { webhook: null, on: ['failure'], secret: null, timeoutMs: 10_000, retryBaseMs: 10_000 });
  assert.equal(base.publicUrl, null);
  const set = loadServerConfig({
    NOTIFY_WEBHOOK: 'https://ops.example/weft',
    NOTIFY_ON: 'success, failure',
    NOTIFY_SECRET: 'OPS_KEY',
    NOTIFY_TIMEOUT_SECS: '2.5',
    NOTIFY_RETRY_SECS: '0.5',
    PUBLIC_URL: 'https://weft.example.com/ci/',
  });
  assert.deepEqual(set.notify, { webhook: 'https://ops.example/weft', on: ['failure', 'success'], secret: 'OPS_KEY', timeoutMs: 2500, retryBaseMs: 500 });
  assert.equal(set.publicUrl, 'https://weft.example.com/ci');
  const s = notifySettings(set.notify, set.publicUrl, null);
  assert.deepEqual([s.timeoutMs, s.claimMs, s.retry?.baseMs, s.retry?.giveUpMs, s.retainMs], [2500, 10_000, 500, 86_400_000, 30 * 86_400_000]);
  assert.equal(notifySettings(set.notify, null, 2).retainMs, 2 * 86_400_000, 'kept no longer than runs are');
  for (const [env, re] of [
    [{ NOTIFY_WEBHOOK: 'ftp://x/' }, /^NOTIFY_WEBHOOK must be an http or https URL/],
    [{ NOTIFY_WEBHOOK: 'hooks.example' }, /NOTIFY_WEBHOOK is not an absolute URL/],
    [{ NOTIFY_ON: 'failed' }, /NOTIFY_ON="failed" is not valid: list some of failure, success, cancelled/],
    [{ NOTIFY_ON: ',' }, /NOTIFY_ON/],
    [{ NOTIFY_SECRET: 'a-b' }, /NOTIFY_SECRET="a-b" is not valid/],
    [{ NOTIFY_TIMEOUT_SECS: '0' }, /NOTIFY_TIMEOUT_SECS/],
    [{ NOTIFY_RETRY_SECS: 'soon' }, /NOTIFY_RETRY_SECS/],
    [{ PUBLIC_URL: 'weft.example.com' }, /PUBLIC_URL="weft.example.com" is not valid/],
    [{ PUBLIC_URL: 'https://weft.example.com/?x=1' }, /without credentials, query or fragment/],
  ] as const) {
    assert.throws(() => loadServerConfig(env), (err: Error) => err instanceof ConfigError && re.test(err.message), JSON.stringify(env));
  }
});
