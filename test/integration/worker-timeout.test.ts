/**
 * `weft worker` enforces a job's timeout_secs itself (README "The worker"): at the deadline it kills
 * the job's process group and reports the retryable failure, with the job's last log lines, instead of
 * waiting for the server's reaper or the next heartbeat's 409. Both are set far beyond the test's
 * deadline here, so only the worker can have done it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, until } from '../helpers/http.js';
import { alive } from '../helpers/process.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

test('a job past its timeout_secs is killed by the worker and reported as timed out, then retried', async (t) => {
  const sb = sandbox(t, 'weft-timeout-');
  const srv = await serverProcess(t, sb, { REAP_INTERVAL_SECS: '600' });
  const api = client(srv.url);
  const pidFile = path.join(sb.dir, 'pids');
  await api.createWorkflow({
    id: 'slow',
    jobs: { nap: { run: `echo "$$" >> ${pidFile}; echo "going to sleep"; sleep 60 & echo $! >> ${pidFile}; wait`, timeout_secs: 1, retries: 1 } },
  });
  await api.run('slow');
  const worker = track(
    t,
    spawnWeft(['worker'], { SERVER_URL: srv.url, LEASE_TTL_SECS: '120', HEARTBEAT_SECS: '50', CANCEL_POLL_SECS: '50', POLL_SECS: '0.2', KILL_GRACE_SECS: '1', WORKER_LABELS: undefined, CONCURRENCY: undefined }, sb.dir),
  );
  const doc = await until(
    async () => {
      const d = await api.status('slow');
      return d.jobs[0].state === 'failed' ? d : null;
    },
    'both tries to time out',
    20_000,
    100,
  );
  const nap = doc.jobs[0];
  assert.equal(nap.attempt, 1, 'the timeout was retryable: the retry ran too');
  assert.equal(nap.error, 'timed out after 1s');
  assert.ok(nap.duration_ms < 5000, `stopped near its deadline, not by the server (${nap.duration_ms} ms)`);
  // Every process of both tries is gone.
  const pids = fs.readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
  assert.equal(pids.length, 4);
  await until(() => pids.every((p) => !alive(p)), 'the job processes to be gone', 5000);
  // The last lines got out before the report.
  const logs = await api.get('/api/workflows/slow/jobs/nap/logs?attempt=0');
  assert.match(logs.body.map((c: any) => c.data).join(''), /going to sleep/);
  assert.match(worker.output(), /job timed out after/);
});
