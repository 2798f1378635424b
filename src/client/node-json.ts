/**
 * The client's JSON calls over Node's own http module, through one keep-alive agent per process. A
 * worker makes a call per job (its report, carrying the next claim), and Node's fetch spent about four
 * times the CPU of http.request on each (docs/performance.md "Third round"). Loaded only when used
 * (the client still loads where Node's modules do not exist), and only when the client was given no
 * fetch of its own: one given is used for every call.
 */
import http from 'node:http';
import https from 'node:https';

/** What a JSON call answered: the status and the body's text. */
export interface PlainAnswer {
  status: number;
  statusText: string;
  text: string;
}

/**
 * An idle kept-alive connection is closed after this long, well before the server's own idle limit
 * (Fastify's 72 s), so that a call never goes out on a connection the server is closing.
 */
const IDLE_SOCKET_MS = 30_000;

const agents = {
  http: new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  https: new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
};

/** One call: `body` is JSON text or absent; `signal` ends it (the caller's deadline and its own). */
export function jsonCall(
  url: string,
  method: string,
  headers: Readonly<Record<string, string>>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<PlainAnswer> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const all: Record<string, string> = { ...headers };
  if (body !== undefined) all['content-length'] = String(Buffer.byteLength(body));
  return new Promise<PlainAnswer>((resolve, reject) => {
    const req = (secure ? https : http).request(target, { method, headers: all, agent: secure ? agents.https : agents.http, signal }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
