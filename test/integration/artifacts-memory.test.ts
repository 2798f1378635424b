/**
 * A 1 GiB artifact through real processes with bounded memory (README "Artifacts"): a `weft worker`
 * uploads it to a `weft server` (SQLite), a second job downloads it with `download:`, and the test
 * downloads it over HTTP; the resident memory of the server and of the worker, read from
 * /proc/<pid>/status all along, grows by less than 100 MB. The file is made by the job itself
 * (`head -c … /dev/urandom`), never held in memory by anyone. Once with the bytes in the store, once
 * with ARTIFACTS_DIR. Needs `npm run build` first.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client } from '../helpers/http.js';
import { sandbox, serverProcess, spawnWeft, track } from '../helpers/server.js';

const GIB = 1024 * 1024 * 1024;
const MB = 1000 * 1000;
/** The bound on RSS growth the issue sets. */
const MAX_GROWTH = 100 * MB;

/** Resident set size of a process, in bytes, from /proc (VmRSS is in kB). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Samples a process's RSS every 50 ms until stopped; answers the highest seen. */
function sampler(pid: number) {
  let peak = rss(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rss(pid));
    } catch {
      // The process ended; the test will say so.
    }
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, rss(pid));
      return peak;
    },
  };
}

const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;

async function oneGiB(t: TestContext, env: (dir: string) => Record<string, string>) {
  const sb = sandbox(t);
  const server = await serverProcess(t, sb, env(sb.dir));
  const c = client(server.url);
  const put = await c.put('/api/workflows/big', {
    jobs: {
      // Warms up every code path (upload, download, hashing) with a small file before the baseline.
      warm: {
        run: 'head -c 3000000 /dev/urandom > w.bin',
        artifacts: ['w.bin'],
      },
      warmuse: { needs: ['warm'], download: ['warm'], run: 'test -s w.bin' },
    },
  });
  assert.equal(put.status, 201, put.text);
  const worker = track(t, spawnWeft(['worker'], { ...sb.env, SERVER_URL: server.url, WORK_DIR: path.join(sb.dir, 'work'), LONG_POLL_SECS: '1' }, sb.dir));
  await worker.waitFor(/weft worker .* started/);
  await c.run('big');
  assert.equal((await c.settled('big', 120_000)).status, 'success');

  // The real workflow, replacing the warm-up one.
  const real = await c.put('/api/workflows/big', {
    jobs: {
      make: {
        run: `head -c ${GIB} /dev/urandom > big.bin && echo "::set-output sum=$(sha256sum big.bin | cut -c1-64)"`,
        artifacts: ['big.bin'],
        timeout_secs: 1800,
      },
      take: {
        needs: ['make'],
        download: ['make'],
        run: 'echo "::set-output sum=$(sha256sum big.bin | cut -c1-64)" && echo "::set-output size=$(stat -c %s big.bin)"',
        timeout_secs: 1800,
      },
    },
  });
  assert.equal(real.status, 200, real.text);

  const serverPid = server.proc.pid!;
  const workerPid = worker.proc.pid!;
  const base = { server: rss(serverPid), worker: rss(workerPid) };
  const watch = { server: sampler(serverPid), worker: sampler(workerPid) };

  await c.run('big');
  const done = await c.settled('big', 1_500_000);
  assert.equal(done.status, 'success', JSON.stringify(done.jobs.map((j: any) => [j.id, j.state, j.error])));
  const outs = Object.fromEntries(done.jobs.map((j: any) => [j.id, j.outputs]));
  assert.match(outs.make.sum, /^[0-9a-f]{64}$/);
  assert.equal(outs.take.size, String(GIB));
  assert.equal(outs.take.sum, outs.make.sum, 'the downloading job got the same gibibyte');

  // And a client downloads it too, streamed and hashed as it comes.
  const res = await fetch(`${server.url}/api/workflows/big/runs/${done.run_number}/artifacts/make/big.bin`);
  assert.equal(res.status, 200);
  const hash = createHash('sha256');
  let size = 0;
  for await (const b of res.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(b);
    size += b.byteLength;
  }
  assert.equal(size, GIB);
  assert.equal(hash.digest('hex'), outs.make.sum);

  const peak = { server: watch.server.stop(), worker: watch.worker.stop() };
  const growth = { server: peak.server - base.server, worker: peak.worker - base.worker };
  t.diagnostic(`server RSS ${mb(base.server)} → peak ${mb(peak.server)} (+${mb(growth.server)}); worker RSS ${mb(base.worker)} → peak ${mb(peak.worker)} (+${mb(growth.worker)})`);
  assert.ok(growth.server < MAX_GROWTH, `server RSS grew by ${mb(growth.server)} (from ${mb(base.server)} to ${mb(peak.server)}); the bound is ${mb(MAX_GROWTH)}`);
  assert.ok(growth.worker < MAX_GROWTH, `worker RSS grew by ${mb(growth.worker)} (from ${mb(base.worker)} to ${mb(peak.worker)}); the bound is ${mb(MAX_GROWTH)}`);
}

const LINUX = { skip: process.platform !== 'linux' && 'reads /proc' };

test('a 1 GiB artifact goes worker → server → worker → client streamed: server and worker RSS grow < 100 MB', LINUX, (t) => oneGiB(t, () => ({})));

test('the same with ARTIFACTS_DIR: files written and read in bounded pieces', LINUX, (t) =>
  oneGiB(t, (dir) => ({ ARTIFACTS_DIR: path.join(dir, 'artifacts') })),
);
