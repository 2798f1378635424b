/**
 * `weft worker`'s own hiding of secrets (README "Secrets"): what the claim answer lists in `mask` is
 * hidden in the logs, outputs and error the worker sends, before they leave it; the server hides them
 * again on arrival (secrets.test.ts), so this test looks at the requests themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { WorkflowClient } from '../../src/client/client.js';
import { parseSecretKey } from '../../src/engine/secret-box.js';
import { PermanentError, Worker } from '../../src/worker/index.js';
import { client } from '../helpers/http.js';
import { startInProcess } from '../helpers/server.js';

test('the worker hides the secrets of its job in every log chunk, output and error it sends', async (t) => {
  const srv = await startInProcess({ secretKey: parseSecretKey(randomBytes(32).toString('base64'), 'WEFT_SECRET_KEY') });
  t.after(() => srv.close());
  const api = client(srv.url);
  const VALUE = `s3cret-${randomBytes(10).toString('hex')}`;
  await srv.engine.secrets.set('DEPLOY_KEY', null, VALUE, null);
  await api.createWorkflow({
    id: 'masked',
    jobs: {
      ok: { run: 'x', env: { K: '${{ secrets.DEPLOY_KEY }}' } },
      bad: { run: 'x', needs: ['ok'], env: { K: '${{ secrets.DEPLOY_KEY }}' } },
    },
  });
  await api.run('masked');

  const sent: string[] = [];
  const fetchSpy: typeof fetch = (input, init) => {
    const url = String(input);
    if (!/\/claim(-batch)?$/.test(url) && typeof init?.body === 'string') sent.push(`${url} ${init.body}`);
    return fetch(input, init);
  };
  const seen: string[] = [];
  const worker = new Worker({
    serverUrl: srv.url,
    client: new WorkflowClient({ baseUrl: srv.url, fetch: fetchSpy }),
    pollSecs: 0.05,
    logger: pino({ level: 'silent' }),
    handler: async (job, ctx) => {
      seen.push(job.env.K!);
      ctx.log(`the key is ${VALUE}`);
      ctx.log(Buffer.from(VALUE).toString('base64'), 'stderr');
      if (job.job_id === 'bad') throw new PermanentError(`cannot use ${VALUE}`);
      return { [`out_${VALUE}`]: `value ${VALUE}` };
    },
  });
  t.after(() => worker.stop({ abort: true }));
  await worker.start();
  const done = await api.settled('masked', 60_000);
  assert.equal(done.status, 'failed');
  assert.deepEqual(seen, [VALUE, VALUE], 'the handler gets the value itself');
  const bodies = sent.join('\n');
  assert.ok(/\/logs /.test(bodies) || /report-batch/.test(bodies), bodies);
  assert.ok(bodies.includes('the key is ***'), bodies);
  assert.ok(!bodies.includes(VALUE), `the value left the worker: ${bodies}`);
  assert.ok(!bodies.includes(Buffer.from(VALUE).toString('base64').slice(0, 20)), 'nor its base64 form');
  assert.ok(bodies.includes('value ***') && bodies.includes('cannot use ***'), bodies);
});
