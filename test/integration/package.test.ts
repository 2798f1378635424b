/** The package entry points are compiled JavaScript with declarations, importable by plain node. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/server.js';

test('plain node imports weft, weft/client and weft/worker with their declarations', () => {
  const script = `
    const root = await import('weft');
    const client = await import('weft/client');
    const worker = await import('weft/worker');
    const c = new client.WorkflowClient('http://127.0.0.1:9');
    console.log(JSON.stringify({
      root: ['WorkflowClient', 'WorkflowApiError', 'Worker', 'PermanentError', 'parseWorkflowText'].filter((k) => typeof root[k] === 'function'),
      client: typeof c.claim === 'function' && typeof client.WorkflowApiError === 'function',
      worker: typeof worker.Worker === 'function' && typeof worker.shellHandler === 'function',
    }));`;
  // No TypeScript loader: only what `npm install` built.
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } });
  assert.deepEqual(JSON.parse(out.toString()), {
    root: ['WorkflowClient', 'WorkflowApiError', 'Worker', 'PermanentError', 'parseWorkflowText'],
    client: true,
    worker: true,
  });
  for (const d of ['dist/index.d.ts', 'dist/client/index.d.ts', 'dist/worker/index.d.ts']) {
    assert.ok(fs.existsSync(path.join(ROOT, d)), `${d} is built`);
  }
});
