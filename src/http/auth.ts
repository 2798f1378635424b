/**
 * Bearer-token authentication (README "Access tokens"). Off while no token is configured, so a
 * server on a laptop needs nothing; on as soon as one is. Each route's access level is worked out
 * once, when the route is added; a request costs one SHA-256 and a constant-time compare per token.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accessOf, allows, rolesFor, scopeRefusal, type Access, type TokenEntry, type TokenTable } from '../domain/access.js';
import { WeftError, type ErrorBody } from '../protocol/errors.js';
import type { LeaseVisibility } from '../engine/engine-options.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set for every route when it is added (src/domain/access.ts). */
    access?: Access;
  }
  interface FastifyRequest {
    /** The token the request was authenticated with; undefined while authentication is off. */
    token?: TokenEntry;
  }
}

export interface RouteAccess {
  method: string;
  url: string;
  access: Access;
}

const routeTables = new WeakMap<FastifyInstance, RouteAccess[]>();

/** Every route with the access it needs, in the order added (tests check each against each role). */
export function routeAccessTable(app: FastifyInstance): readonly RouteAccess[] {
  return routeTables.get(app) ?? [];
}

/** Must run before any route is added: routes added earlier would have no access level. */
export function registerAuth(app: FastifyInstance, tokens: TokenTable): void {
  const table: RouteAccess[] = [];
  routeTables.set(app, table);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // One route may answer several methods (GET and its HEAD); the strictest level wins.
    const levels = methods.map((m) => accessOf(m, route.url ?? route.path));
    const access = levels.find((a) => a === 'admin') ?? levels.find((a) => a !== 'public') ?? 'public';
    route.config = { ...(route.config ?? {}), access };
    for (const m of methods) table.push({ method: m, url: route.url ?? route.path, access: accessOf(m, route.url ?? route.path) });
  });
  if (!tokens.enabled) return;

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    // Unknown paths get the strictest check short of a role: without a token, nothing is revealed.
    const access = req.routeOptions.config.access ?? (req.method === 'OPTIONS' ? 'public' : 'read');
    if (access === 'public') return;
    const given = bearer(req.headers.authorization);
    if (given === null) {
      return deny(reply, 401, 'unauthorized', 'this server requires a token: send `Authorization: Bearer <token>` (README "Access tokens")');
    }
    const entry = tokens.identify(given);
    if (entry === null) return deny(reply, 401, 'unauthorized', 'the token is not known to this server');
    if (!allows(entry.role, access)) {
      const roles = rolesFor(access).join(' or ');
      return deny(reply, 403, 'forbidden', `token '${entry.name}' has the ${entry.role} role; ${req.method} ${req.routeOptions.url} needs ${roles}`);
    }
    req.token = entry;
    // The token's name, never the token, in every log line of the request.
    req.log = req.log.child({ token: entry.name });
  });
}

/**
 * Refuses (403 `token_scope`) a call acting as worker `workerId` with `labels` beyond what the
 * request's token may (its tokens-file line, README "Access tokens"); nothing is done then.
 */
export function requireWorkerScope(req: FastifyRequest, workerId: string, labels: readonly string[]): void {
  if (!req.token) return;
  const refusal = scopeRefusal(req.token, workerId, labels);
  if (refusal !== null) throw new WeftError('token_scope', refusal);
}

/** The name of the token the request came with (who approved, README "Approvals"); null while tokens are off. */
export function tokenName(req: FastifyRequest): string | null {
  return req.token?.name ?? null;
}

/** The name of the token a lease call came with, to which leases are bound; null while tokens are off. */
export function leaseHolder(req: FastifyRequest): string | null {
  return req.token?.name ?? null;
}

/**
 * Whose lease ids the request may see: all of them with tokens off or an admin token, otherwise only
 * those of leases claimed with its own token (a lease id lets whoever holds the token use the lease).
 */
export function leaseVisibility(req: FastifyRequest): LeaseVisibility {
  const token = req.token;
  if (!token || token.role === 'admin') return () => true;
  return (holder) => holder === token.name;
}

function bearer(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m ? m[1]! : null;
}

function deny(reply: FastifyReply, status: 401 | 403, error: 'unauthorized' | 'forbidden', message: string): FastifyReply {
  if (status === 401) void reply.header('www-authenticate', 'Bearer realm="weft"');
  return reply.code(status).send({ error, message } satisfies ErrorBody);
}
