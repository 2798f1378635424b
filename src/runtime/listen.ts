import type { FastifyInstance } from 'fastify';

const MAX_PORT_TRIES = 100;

/**
 * README "Configuration": when PORT is taken the next free port is used. Port 0 asks the OS for any free port.
 * Returns the port really bound.
 */
export async function listenWithFallForward(app: FastifyInstance, host: string, port: number): Promise<number> {
  let lastError: unknown;
  for (let i = 0; i < (port === 0 ? 1 : MAX_PORT_TRIES); i++) {
    const candidate = port === 0 ? 0 : port + i;
    if (candidate > 65535) break;
    try {
      await app.listen({ host, port: candidate });
      const addr = app.server.address();
      return typeof addr === 'object' && addr ? addr.port : candidate;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      lastError = err;
    }
  }
  throw new Error(`no free port in ${port}..${Math.min(port + MAX_PORT_TRIES - 1, 65535)}`, { cause: lastError });
}

/** A host for humans: the wildcard addresses are not something a browser can open. */
export function displayHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/** Only this machine can reach a server bound here. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::ffff:127.0.0.1';
}
