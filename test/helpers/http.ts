/** Minimal JSON-over-HTTP helpers for tests: every call returns status, headers and parsed body. */
import http from 'node:http';

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function request<T = any>(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResult<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export function client(base: string) {
  return {
    get: <T = any>(p: string, headers?: Record<string, string>) => request<T>('GET', base + p, undefined, headers),
    post: <T = any>(p: string, body?: unknown, headers?: Record<string, string>) => request<T>('POST', base + p, body, headers),
    put: <T = any>(p: string, body?: unknown, headers?: Record<string, string>) => request<T>('PUT', base + p, body, headers),
    del: <T = any>(p: string, headers?: Record<string, string>) => request<T>('DELETE', base + p, undefined, headers),
    /** Claims with sensible defaults; returns the claim body (null when nothing fits). */
    async claim(worker_id = 'w1', labels: string[] = [], lease_ttl_secs = 30) {
      const r = await request('POST', `${base}/api/jobs/claim`, { worker_id, labels, lease_ttl_secs });
      if (r.status !== 200) throw new Error(`claim answered ${r.status}: ${r.text}`);
      return r.body as { job: any; lease: any } | null;
    },
    async createWorkflow(def: unknown) {
      const r = await request('POST', `${base}/api/workflows`, def);
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text}`);
      return r.body;
    },
    async run(id: string) {
      const r = await request('POST', `${base}/api/workflows/${id}/run`);
      if (r.status !== 202) throw new Error(`run answered ${r.status}: ${r.text}`);
      return r.body;
    },
    async status(id: string) {
      const r = await request('GET', `${base}/api/workflows/${id}/status`);
      if (r.status !== 200) throw new Error(`status answered ${r.status}: ${r.text}`);
      return r.body;
    },
    /** Waits until the latest run is over and returns its status document. */
    async settled(id: string, timeoutMs = 15_000): Promise<any> {
      return until(
        async () => {
          const s = await this.status(id);
          return ['success', 'failed', 'cancelled'].includes(s.status) ? s : null;
        },
        `workflow ${id} to finish`,
        timeoutMs,
        50,
      );
    },
    async jobState(id: string, job: string): Promise<any> {
      const s = await this.status(id);
      return s.jobs.find((j: any) => j.id === job);
    },
  };
}

/**
 * How long a test waits at least before it declares that something never happened. A deadline only
 * ends the wait for a failure; it must never decide a verdict on a healthy machine made slow by load
 * (README "Tests under load"), so a shorter one asked for is raised to this.
 */
export const MIN_DEADLINE_MS = 60_000;

/** Polls `fn` until it returns a truthy value or the deadline passes (then throws with `what`). */
export async function until<T>(fn: () => Promise<T> | T, what: string, timeoutMs = 10_000, everyMs = 25): Promise<NonNullable<T>> {
  timeoutMs = Math.max(timeoutMs, MIN_DEADLINE_MS);
  const deadline = Date.now() + timeoutMs;
  let last: T;
  do {
    last = await fn();
    if (last) return last as NonNullable<T>;
    await new Promise((r) => setTimeout(r, everyMs));
  } while (Date.now() < deadline);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/** An answer read off the wire: status, headers, the text, and the text parsed as JSON (undefined if it is not). */
export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/**
 * A request exactly as given: headers (Host included, which fetch would not send as ours), the path not
 * normalised, the body sent byte for byte (as JSON when one is given).
 */
export function rawRequest(base: string, method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const u = new URL(base);
  const all = body === undefined ? headers : { 'content-type': 'application/json', ...headers };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: all, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
