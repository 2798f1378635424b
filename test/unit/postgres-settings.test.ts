import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadServerConfig } from '../../src/runtime/config.js';

test('PostgreSQL settings: defaults, values, and a malformed value named at start', () => {
  assert.deepEqual(loadServerConfig({}).postgres, { max: 10, statementTimeoutMs: 30_000, connectTimeoutMs: 5_000 });
  assert.deepEqual(
    loadServerConfig({ PG_POOL_MAX: '4', PG_STATEMENT_TIMEOUT_MS: '0', PG_CONNECT_TIMEOUT_MS: '1500' }).postgres,
    { max: 4, statementTimeoutMs: 0, connectTimeoutMs: 1500 },
  );
  for (const [name, value] of [
    ['PG_POOL_MAX', '1'],
    ['PG_POOL_MAX', 'ten'],
    ['PG_STATEMENT_TIMEOUT_MS', '-1'],
    ['PG_STATEMENT_TIMEOUT_MS', '2.5'],
    ['PG_CONNECT_TIMEOUT_MS', '0'],
  ] as const) {
    assert.throws(
      () => loadServerConfig({ [name]: value }),
      (err: Error) => err instanceof ConfigError && err.message.startsWith(`${name}="${value}" is not valid`),
      `${name}=${value}`,
    );
  }
});
