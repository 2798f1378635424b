/**
 * Loaded before every test file (see the `test` script). Node 20's `assert.ok(value)` without a
 * message builds one by re-reading the caller's source at the stack position. Under the TypeScript
 * loader that position points into transpiled code, and parsing the original file from there never
 * ends: a failing `assert.ok` then hangs its test file instead of failing it. Supplying a message
 * skips that lookup, so every `assert.ok` here fails as a test should.
 */
import assert from 'node:assert';
import { inspect } from 'node:util';

const original = assert.ok;
const ok = function ok(value: unknown, message?: string | Error): asserts value {
  if (arguments.length >= 2 || value) return original(value, message);
  return original(value, `expected a truthy value, got ${inspect(value, { depth: 2, breakLength: 120 })}`);
};
assert.ok = ok;
assert.strict.ok = ok;
