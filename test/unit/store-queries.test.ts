/**
 * Each store's QUERIES is spread from one *-queries.ts file per part (docs/architecture.md "The two
 * stores side by side"): a name used in two parts would silently run the later file's statement in
 * place of the earlier one's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/server.js';

for (const backend of ['sqlite', 'postgres']) {
  test(`${backend}: no statement name is defined by two *-queries.ts files`, async () => {
    const dir = path.join(ROOT, 'src', 'store', backend);
    const seen = new Map<string, string>();
    const twice: string[] = [];
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('-queries.ts'))) {
      const mod = (await import(path.join(dir, file))) as Record<string, unknown>;
      for (const part of Object.values(mod)) {
        if (typeof part !== 'object' || part === null) continue;
        for (const name of Object.keys(part)) {
          if (seen.has(name)) twice.push(`${name} (${seen.get(name)} and ${file})`);
          else seen.set(name, file);
        }
      }
    }
    assert.ok(seen.size > 50, `found ${seen.size} statements`);
    assert.deepEqual(twice, []);
  });
}
