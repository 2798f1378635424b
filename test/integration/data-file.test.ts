/**
 * The SQLite file holds every job's env, outputs and logs: a fresh server creates it (and its -wal and
 * -shm files) readable by its owner only, whatever the umask lets through; an existing file others may
 * read is left as it is and warned about. Real `weft server` processes. Needs `npm run build` first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client } from '../helpers/http.js';
import { sandbox, serverProcess } from '../helpers/server.js';

const mode = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);

test('a fresh server creates its SQLite file, -wal and -shm 0600, in a directory of its own 0700', async (t) => {
  const sb = sandbox(t, 'weft-data-file-');
  // A umask that lets group and others read, as most systems have: SQLite alone would make the file 0644.
  const before = process.umask(0o022);
  t.after(() => process.umask(before));
  const db = path.join(sb.dir, 'fresh', 'weft.db');
  const server = await serverProcess(t, sb, { DATABASE_URL: `sqlite:${db}` });
  // A write, so the -wal has content and the -shm is in use.
  const r = await client(server.url).post('/api/workflows', { id: 'w', jobs: { a: { run: 'true' } } });
  assert.equal(r.status, 201, r.text);
  assert.equal(mode(db), '600');
  assert.equal(mode(`${db}-wal`), '600');
  assert.equal(mode(`${db}-shm`), '600');
  assert.equal(mode(path.dirname(db)), '700');
  assert.doesNotMatch(server.output(), /readable or writable by other users/);
});

test('an existing SQLite file others may read keeps its mode and is warned about at start', async (t) => {
  const sb = sandbox(t, 'weft-data-file-');
  const db = path.join(sb.dir, 'shared.db');
  fs.writeFileSync(db, '');
  fs.chmodSync(db, 0o640);
  const server = await serverProcess(t, sb, { DATABASE_URL: `sqlite:${db}`, LOG_FORMAT: 'json' });
  const line = server
    .output()
    .split('\n')
    .find((l) => l.includes('readable or writable by other users'));
  assert.ok(line, `no warning about the file's mode in:\n${server.output()}`);
  const entry = JSON.parse(line);
  assert.equal(entry.level, 40);
  assert.equal(entry.mode, '0640');
  assert.equal(mode(db), '640');
});
