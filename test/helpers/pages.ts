/**
 * Small HTTP servers for the browser tests: a site of its own (another origin than weft's) and a
 * stand-in for another weft server that records every request it gets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Site {
  port: number;
  close(): Promise<void>;
}

/** Answers every GET with a blank HTML page: the test runs its scripts in that page's origin. */
export async function blankSite(): Promise<Site> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>another site</title><p>another site</p>');
  });
  return listen(server);
}

export interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface Recorder extends Site {
  url: string;
  requests: Recorded[];
}

/**
 * Another "weft server" that wants a token: it records each request, answers 401 without
 * `Authorization`, an empty list for `GET /api/workflows` with one, 404 for anything else, and allows
 * every origin (so that only the page decides whether it is talked to).
 */
export async function recordingServer(): Promise<Recorder> {
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': String(req.headers['access-control-request-headers'] ?? ''),
      'access-control-allow-methods': 'GET, POST, PUT, DELETE',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { ...cors, 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!req.url?.startsWith('/api/')) {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>landing</title>');
      return;
    }
    if (req.headers.authorization === undefined) return json(401, { error: 'unauthorized', message: 'token needed' });
    if (req.url.split('?')[0] === '/api/workflows') return json(200, []);
    return json(404, { error: 'not_found', message: 'nothing here' });
  });
  const site = await listen(server);
  return { ...site, url: `http://127.0.0.1:${site.port}`, requests };
}

async function listen(server: http.Server): Promise<Site> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
