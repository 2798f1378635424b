import fs from 'node:fs';
import Database from 'better-sqlite3';
import { SqliteStore } from './src/store/sqlite/sqlite-store.js';
import { QUERIES } from './src/store/sqlite/queries.js';
const file = `/tmp/plans-${process.pid}.db`;
await new SqliteStore(file).close();
const db = new Database(file);
const out: Record<string, string> = {};
for (const [name, sql] of Object.entries(QUERIES)) {
  if (!/LIMIT\s+\+?[?@]/.test(sql)) continue;
  const names = [...new Set([...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!))];
  const n = (sql.match(/\?/g) ?? []).length;
  const named: Record<string, unknown> = {}; for (const k of names) named[k] = /limit/i.test(k) ? 100 : 1;
  const pos = Array.from({ length: n }, () => 100);
  const args: unknown[] = names.length ? (n ? [...pos, named] : [named]) : pos;
  try { out[name] = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | '); }
  catch (e) { out[name] = `ERR ${(e as Error).message}`; }
}
fs.writeFileSync(process.argv[2]!, JSON.stringify(out, null, 1));
