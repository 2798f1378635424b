/**
 * A webhook receiver for notification tests (README "Notifications"): a plain node http server that
 * records every request whole (headers, raw body, parsed body) and answers 200, or what `answer` says,
 * or holds the request open without answering while `hold` is on.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHmac } from 'node:crypto';
import { until } from './http.js';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  /** X-Weft-Delivery */
  delivery: string;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** While true, requests are recorded and left unanswered (a receiver stuck mid-request). */
  hold: boolean;
  /** The status to answer with (default 200) and a body. */
  answer: (r: Received) => { status: number; body?: string };
  /** Resolves once `n` requests (matching `filter`) were received. */
  waitFor(n: number, what: string, filter?: (r: Received) => boolean): Promise<Received[]>;
  /** Hears of each request as it arrives (after it is recorded). */
  onRequest: ((r: Received) => void) | null;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const r: Receiver = {
    url: '',
    port: 0,
    received: [],
    hold: false,
    answer: () => ({ status: 200, body: 'ok' }),
    onRequest: null,
    waitFor: (n, what, filter = () => true) =>
      until(() => {
        const got = r.received.filter(filter);
        return got.length >= n ? got : null;
      }, what),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const got: Received = { path: req.url ?? '', headers: req.headers, raw, body, delivery: String(req.headers['x-weft-delivery'] ?? '') };
      r.received.push(got);
      const held = r.hold;
      r.onRequest?.(got);
      if (held) return;
      const a = r.answer(got);
      res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.body ?? '');
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}

/** A loopback port nobody listens on now (taken from the OS, then let go), for a receiver that is down. */
export async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** What a receiver computes to check X-Weft-Signature-256, as it would for GitHub's X-Hub-Signature-256. */
export function expectedSignature(key: string, raw: string): string {
  return `sha256=${createHmac('sha256', key).update(raw).digest('hex')}`;
}
