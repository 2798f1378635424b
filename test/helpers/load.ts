/**
 * Driving large workflows through a spawned server and watching what it costs: the server's resident
 * memory (from /proc), its event-loop delay (from /healthz) and listeners that read or never read.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import fs from 'node:fs';
import net from 'node:net';
import { request } from './http.js';
import { sandbox, serverProcess } from './server.js';

/** VmRSS of a process, in bytes. */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** A definition of `n` independent jobs (all claimable at once), in the array form. */
export function wideWorkflow(id: string, n: number, name = id): { id: string; name: string; jobs: Array<{ id: string; command: string }> } {
  return { id, name, jobs: Array.from({ length: n }, (_, i) => ({ id: `j${String(i).padStart(5, '0')}`, command: 'true' })) };
}

/**
 * Samples the server every `everyMs` until stopped: the highest RSS seen and every `/healthz` p99.
 * The /healthz answers themselves go through the loop they measure, so a blocked loop shows twice.
 */
export function sampler(url: string, pid: number, everyMs = 200): { stop(): Promise<{ maxRss: number; p99s: number[] }> } {
  let maxRss = rssBytes(pid);
  const p99s: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        maxRss = Math.max(maxRss, rssBytes(pid));
        const h = await request('GET', `${url}/healthz`);
        if (h.status === 200) p99s.push(h.body.event_loop_delay_ms.p99);
      } catch {
        // The process may be ending; the caller's assertions tell.
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { maxRss, p99s };
    },
  };
}

/** The `q`-th percentile of `xs` (nearest rank). */
export function percentile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((q / 100) * sorted.length) - 1)]!;
}

/**
 * An idle `weft server` of its own, beside the one under test: sampled over the same window, its
 * event-loop delay is what the machine's load alone does to a server's loop right then (the control
 * of assertResponsive). Measured at the same time rather than before, so a load that comes and goes
 * moves both alike.
 */
export async function idleControl(t: TestContext): Promise<{ url: string; pid: number }> {
  const p = await serverProcess(t, sandbox(t, 'weft-control-'), { LOG_LEVEL: 'warn' });
  return { url: p.url, pid: p.proc.pid! };
}

/** `sampler` of the server under test and of its idle control over one window. */
export function watchWithControl(
  server: { url: string; pid: number },
  control: { url: string; pid: number },
  everyMs = 200,
): { stop(): Promise<{ maxRss: number; p99s: number[]; controlP99s: number[] }> } {
  const watch = sampler(server.url, server.pid, everyMs);
  const ctl = sampler(control.url, control.pid, everyMs);
  return {
    async stop() {
      const [w, c] = await Promise.all([watch.stop(), ctl.stop()]);
      return { maxRss: w.maxRss, p99s: w.p99s, controlP99s: c.p99s };
    },
  };
}

/**
 * The verdict of the responsiveness tests (README "Tests under load") on `/healthz` p99 samples of
 * the server under test and of its idle control taken over the same window: the median under 300 ms
 * plus twice the control's median, and the slowest twentieth under 600 ms plus twice the control's
 * slowest twentieth. On a quiet machine the samples stay under 100 ms and the control near 0; what
 * these tests guard against (a whole answer or document serialized at once) held the loop for 0.8 to
 * 5 s, beyond the bounds unless the machine stalls every process alike, which the control then shows.
 */
export function assertResponsive(p99s: number[], controlP99s: number[]): void {
  const median = percentile(controlP99s, 50);
  const p95 = percentile(controlP99s, 95);
  const show = `(control median ${median} ms, p95 ${p95} ms): ${JSON.stringify(p99s)}; control: ${JSON.stringify(controlP99s)}`;
  assert.ok(p99s.length >= 5, `only ${p99s.length} /healthz samples`);
  assert.ok(controlP99s.length >= 5, `only ${controlP99s.length} /healthz samples of the control`);
  assert.ok(percentile(p99s, 50) < 300 + 2 * median, `event-loop delay p99 was ${percentile(p99s, 50)} ms in half of the samples ${show}`);
  assert.ok(percentile(p99s, 95) < 600 + 2 * p95, `event-loop delay p99 reached ${percentile(p99s, 95)} ms (95th percentile of the samples) ${show}`);
}

/**
 * Runs every claimable job to success through claim-batch and report-batch, `batch` at a time with a
 * pause of `pauseMs` between rounds, until a claim finds nothing for `idleRounds` rounds. Answers how
 * many jobs it completed.
 */
export async function completeAll(
  url: string,
  opts: { batch?: number; pauseMs?: number; outputs?: Record<string, string>; until?: number } = {},
): Promise<number> {
  const batch = opts.batch ?? 100;
  let done = 0;
  let idle = 0;
  while (idle < 3 && (opts.until === undefined || done < opts.until)) {
    const c = await request('POST', `${url}/api/jobs/claim-batch`, { worker_id: 'load', labels: [], lease_ttl_secs: 300, max_jobs: batch });
    if (c.status !== 200) throw new Error(`claim-batch answered ${c.status}: ${c.text.slice(0, 300)}`);
    const claims = c.body.claims as Array<{ lease: { lease_id: string } }>;
    if (claims.length === 0) {
      idle++;
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    idle = 0;
    if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
    const reports = claims.map((x) => ({ lease_id: x.lease.lease_id, outcome: 'complete', outputs: opts.outputs ?? {} }));
    const r = await request('POST', `${url}/api/jobs/report-batch`, { reports });
    if (r.status !== 200) throw new Error(`report-batch answered ${r.status}: ${r.text.slice(0, 300)}`);
    done += claims.length;
    if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
  }
  return done;
}

/** A listener that reads an event stream to its end and counts what it was sent. */
export interface ReadingListener {
  bytes(): number;
  /** The `data` of the last event of that type, parsed. */
  last(event: string): any;
  count(event: string): number;
  readonly ended: boolean;
  close(): void;
}

export async function readingListener(url: string, headers: Record<string, string> = {}): Promise<ReadingListener> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  let ended = false;
  const last = new Map<string, string>();
  const counts = new Map<string, number>();
  void (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        buf += decoder.decode(chunk, { stream: true });
        let sep: number;
        while ((sep = buf.indexOf('\n\n')) !== -1) {
          const block = buf.slice(0, sep);
          buf = buf.slice(sep + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          last.set(event, data.join('\n'));
          counts.set(event, (counts.get(event) ?? 0) + 1);
        }
      }
    } catch {
      // Aborted by close(), or cut by the server.
    } finally {
      ended = true;
    }
  })();
  return {
    bytes: () => bytes,
    last: (event) => {
      const d = last.get(event);
      return d === undefined ? undefined : JSON.parse(d);
    },
    count: (event) => counts.get(event) ?? 0,
    get ended() {
      return ended;
    },
    close: () => abort.abort(),
  };
}

/**
 * An event-stream client that sends its request and then never reads: the socket is paused, so what
 * the server writes piles up in the kernel's buffers and then in the server. `drain()` starts reading
 * and resolves with how many bytes arrived once the server has closed the connection.
 */
export async function stalledListener(url: string, headers: Record<string, string> = {}): Promise<{ drain(timeoutMs: number): Promise<number>; destroy(): void }> {
  const u = new URL(url);
  const socket = net.connect({ host: u.hostname, port: Number(u.port) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nAccept: text/event-stream\r\n${extra}\r\n`);
  socket.pause();
  return {
    drain(timeoutMs) {
      return new Promise((resolve, reject) => {
        let bytes = 0;
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error(`the server did not close a stalled stream within ${timeoutMs} ms (${bytes} bytes read)`));
        }, timeoutMs);
        socket.on('data', (d: Buffer) => (bytes += d.length));
        socket.once('close', () => {
          clearTimeout(timer);
          resolve(bytes);
        });
        socket.resume();
      });
    },
    destroy: () => socket.destroy(),
  };
}
