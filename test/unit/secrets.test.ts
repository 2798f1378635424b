/**
 * Secrets' pure parts (README "Secrets"): what is hidden and how (src/domain/masking.ts), sealing
 * (src/engine/secret-box.ts), and `${{ secrets.* }}` in definitions and templates.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { escapeExpressions, substitute } from '../../src/domain/expressions.js';
import { MASK, maskAcrossSeam, maskForms, maskText } from '../../src/domain/masking.js';
import { DefinitionError, parseWorkflowObject } from '../../src/definitions/index.js';
import { open, parseSecretKey, seal, SecretKeyError } from '../../src/engine/secret-box.js';

const SECRET = 'hunter2-Zq9/x+Lm';

describe('masking', () => {
  test('a value, each of its lines and its base64 forms are hidden wherever they appear', () => {
    const forms = maskForms([SECRET, 'line-one\nline-two']);
    assert.equal(maskText(`key=${SECRET}.`, forms), `key=${MASK}.`);
    assert.equal(maskText('first line-one then line-two', forms), `first ${MASK} then ${MASK}`);
    // `base64` of the value alone, and of the value inside longer text at each alignment.
    for (const lead of ['', 'a', 'ab', 'abc']) {
      const encoded = Buffer.from(`${lead}${SECRET}tail`).toString('base64');
      const masked = maskText(encoded, forms);
      assert.ok(masked.includes(MASK), `base64 of the secret after ${lead.length} bytes is hidden: ${masked}`);
      assert.ok(!masked.includes(Buffer.from(SECRET).toString('base64').slice(4, 16)), masked);
    }
    const url = Buffer.from(SECRET).toString('base64url');
    assert.ok(maskText(url, forms).startsWith(MASK), 'base64url too');
  });

  test('an empty or very short value hides nothing on its own; forms are longest first', () => {
    assert.deepEqual(maskForms(['', 'ab']), []);
    const forms = maskForms(['abcdef', 'abcdefghij']);
    assert.ok(forms.includes('abcdefghij') && forms.includes('abcdef'));
    assert.ok(forms.every((f, i) => i === 0 || forms[i - 1]!.length >= f.length));
    assert.equal(maskText('xabcdefghijx', forms), `x${MASK}x`, 'the longer value is hidden whole');
  });

  test('a secret split at a seam is hidden on both sides; text that only looks like its start is left', () => {
    const forms = maskForms([SECRET]);
    const seam = maskAcrossSeam(`the key: ${SECRET.slice(0, 6)}`, `${SECRET.slice(6)} done`, forms);
    assert.deepEqual(seam, { before: `the key: ${MASK}`, after: ' done' });
    assert.equal(maskAcrossSeam('the key: hun', 'gry hippo', forms), null);
    assert.equal(maskAcrossSeam('nothing', 'here', forms), null);
  });
});

describe('secret box', () => {
  const key = parseSecretKey(randomBytes(32).toString('base64'), 'WEFT_SECRET_KEY');

  test('a sealed value opens under its key, scope and name only', () => {
    const sealed = seal(key, '', 'DEPLOY_KEY', SECRET);
    assert.ok(!sealed.includes(SECRET) && !sealed.includes(Buffer.from(SECRET).toString('base64')));
    assert.notEqual(seal(key, '', 'DEPLOY_KEY', SECRET), sealed, 'a fresh nonce each time');
    assert.equal(open(key, '', 'DEPLOY_KEY', sealed), SECRET);
    assert.throws(() => open(key, 'deploy', 'DEPLOY_KEY', sealed), SecretKeyError, 'moved to another scope');
    assert.throws(() => open(key, '', 'OTHER', sealed), SecretKeyError, 'moved to another name');
    const other = parseSecretKey(randomBytes(32).toString('hex'), 'WEFT_SECRET_KEY');
    assert.notEqual(other.id, key.id);
    assert.throws(() => open(other, '', 'DEPLOY_KEY', sealed), /does not open with this server's key/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64');
    assert.throws(() => open(key, '', 'DEPLOY_KEY', parts.join('.')), SecretKeyError);
  });

  test('a key is 32 bytes as hex or base64; anything else is refused with how to make one', () => {
    assert.equal(parseSecretKey('ab'.repeat(32), 'K').bytes.length, 32);
    assert.equal(parseSecretKey(` ${randomBytes(32).toString('base64')}\n`, 'K').bytes.length, 32, 'a file with a trailing newline');
    for (const bad of ['', 'correct horse battery staple', 'ab'.repeat(31), randomBytes(16).toString('base64')]) {
      assert.throws(() => parseSecretKey(bad, 'WEFT_SECRET_KEY'), /WEFT_SECRET_KEY is not a 32-byte key: .*openssl rand -base64 32/);
    }
  });
});

describe('secrets in definitions and templates', () => {
  const parse = (jobs: unknown) => parseWorkflowObject({ id: 'wf', jobs }, { source: 'request body', id: 'wf' });
  const problems = (jobs: unknown) => {
    try {
      parse(jobs);
      return [];
    } catch (err) {
      assert.ok(err instanceof DefinitionError);
      return err.issues.map((i) => `${i.job}.${i.field}: ${i.message}`);
    }
  };

  test('env may name a secret; a command, name or label may not', () => {
    assert.deepEqual(problems({ d: { run: 'deploy', env: { KEY: '${{ secrets.DEPLOY_KEY }}', MIXED: 'k=${{ secrets.A_1 }}' } } }), []);
    const run = problems({ d: { run: 'echo ${{ secrets.DEPLOY_KEY }}' } });
    assert.equal(run.length, 1);
    assert.match(run[0]!, /cannot be used in a command: a run-time value never becomes shell text.*env/);
    assert.match(problems({ d: { run: 'x', name: 'n ${{ secrets.K }}' } })[0]!, /a secret reaches a job only through its env/);
    assert.match(problems({ d: { run: 'x', env: { K: '${{ secrets.9bad }}' } } })[0]!, /unsupported expression/);
  });

  test('a value filled in for a later pass stays text to that pass: an input holding ${{ secrets.X }} never becomes the secret', () => {
    const template = 'v=${{ inputs.x }}';
    const planned = substitute(template, (ref) => (ref.kind === 'inputs' ? '${{ secrets.DEPLOY_KEY }}' : undefined), { keepForLater: true });
    const leased = substitute(planned, (ref) => (ref.kind === 'secrets' ? SECRET : undefined));
    assert.equal(leased, 'v=${{ secrets.DEPLOY_KEY }}');
    assert.equal(escapeExpressions('plain'), 'plain');
    assert.equal(substitute("${{ 'it''s' }}", () => undefined), "it's");
  });
});
