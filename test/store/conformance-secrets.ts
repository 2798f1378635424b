/**
 * Conformance: secrets (README "Secrets"): sealed values kept by scope and name, listed without them,
 * read for a workflow (its own and the global ones), removed; and the guarded rewrite of a stored log
 * chunk that hides a secret split between two pushes.
 */
import assert from 'node:assert/strict';
import type { SecretRecord, Store } from '../../src/store/store.js';
import type { Case } from './conformance.js';
import { claimOne, read, start } from './fixtures.js';

const secret = (scope: string, name: string, sealed: string, at = 1000): SecretRecord => ({ scope, name, sealed, key_id: 'k1', updated_at_ms: at, updated_by: 'ops' });

export function secretCases(withStore: Case): void {
  withStore('secrets are set, replaced, listed without values, read by scope and removed', async (store: Store) => {
    assert.equal(await store.putSecret(secret('', 'DEPLOY_KEY', 'sealed-1')), 'created');
    assert.equal(await store.putSecret(secret('', 'DEPLOY_KEY', 'sealed-2', 2000)), 'updated');
    assert.equal(await store.putSecret(secret('deploy', 'DEPLOY_KEY', 'sealed-own')), 'created');
    assert.equal(await store.putSecret(secret('', 'OTHER', 'sealed-o')), 'created');

    const listed = await read(store, (r) => r.listSecrets());
    assert.deepEqual(
      listed.map((s) => [s.scope, s.name, s.updated_at_ms, s.updated_by, s.key_id]),
      [['', 'DEPLOY_KEY', 2000, 'ops', 'k1'], ['', 'OTHER', 1000, 'ops', 'k1'], ['deploy', 'DEPLOY_KEY', 1000, 'ops', 'k1']],
    );
    assert.ok(listed.every((s) => !('sealed' in s)), 'the list carries no sealed value');

    const forDeploy = await read(store, (r) => r.getSecrets('deploy', ['DEPLOY_KEY', 'MISSING']));
    assert.deepEqual(forDeploy.map((s) => [s.scope, s.name, s.sealed]).sort(), [['', 'DEPLOY_KEY', 'sealed-2'], ['deploy', 'DEPLOY_KEY', 'sealed-own']]);
    const forOther = await read(store, (r) => r.getSecrets('other-wf', ['DEPLOY_KEY', 'OTHER']));
    assert.deepEqual(forOther.map((s) => [s.scope, s.name]).sort(), [['', 'DEPLOY_KEY'], ['', 'OTHER']], "another workflow's own secret is not seen");
    assert.deepEqual(await read(store, (r) => r.getSecrets('deploy', [])), []);
    assert.deepEqual(await read(store, (r) => r.secretKeyIds()), ['k1']);

    assert.equal(await store.deleteSecret('deploy', 'DEPLOY_KEY'), true);
    assert.equal(await store.deleteSecret('deploy', 'DEPLOY_KEY'), false);
    assert.deepEqual((await read(store, (r) => r.getSecrets('deploy', ['DEPLOY_KEY']))).map((s) => s.scope), ['']);
  });

  withStore("a stored log chunk is rewritten only while it still reads what the caller saw; the chunk before a sequence is the attempt's", async (store: Store) => {
    await start(store, 'wf', 1000, { a: {} });
    const c = await claimOne(store, 1000, 'a');
    const pushed = await store.pushLogs(c.lease.lease_id, [
      { sequence: 0, data: 'first ', stream: 'stdout' },
      { sequence: 2, data: 'key is hun', stream: 'stdout' },
    ], 1100);
    assert.equal(pushed.kind, 'stored');
    const at = { workflow_id: 'wf', run_number: 1, job_id: 'a', attempt: 0 };
    const of = await read(store, (r) => r.leaseJobEnv(c.lease.lease_id));
    assert.equal(of?.workflow_id, 'wf');
    assert.deepEqual(of?.env, c.job.env);
    assert.equal(await read(store, (r) => r.leaseJobEnv('no-such-lease')), null);
    assert.equal(await read(store, (r) => r.logChunkBefore({ ...at, sequence: 0 })), null);
    assert.equal((await read(store, (r) => r.logChunkBefore({ ...at, sequence: 5 })))?.sequence, 2);
    assert.equal((await read(store, (r) => r.logChunkBefore({ ...at, sequence: 2 })))?.data, 'first ');
    assert.equal(await read(store, (r) => r.logChunkBefore({ ...at, attempt: 1, sequence: 5 })), null, 'another attempt has none');

    assert.equal(await store.rewriteLogChunk({ ...at, sequence: 2 }, 'not what it reads', 'key is ***'), false);
    assert.equal(await store.rewriteLogChunk({ ...at, sequence: 2 }, 'key is hun', 'key is ***'), true);
    const chunks = await read(store, (r) => r.getLogChunks({ ...at }));
    assert.deepEqual(chunks.map((x) => x.data), ['first ', 'key is ***']);
  });
}
