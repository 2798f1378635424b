/**
 * Which web pages may use this server, and under which host names (README "Browsers and origins").
 * Whoever gets a request accepted can have workers run commands, and a browser sends requests for any
 * page it shows, so two checks stand before every route:
 *
 * - Origin. A browser names the page's origin on every cross-origin request and on every POST, PUT and
 *   DELETE. CORS alone is not enough: it hides answers from a page, but a "simple" request (a POST with
 *   no body, such as `…/run`) is sent without a preflight and takes effect all the same. So a request
 *   that changes something, or the preflight of one, from an origin the rule does not allow is refused
 *   403 `forbidden_origin`. Requests without an Origin (curl, workers, the CLI) are not browsers' and
 *   pass.
 * - Host. DNS rebinding points the attacker's own name at 127.0.0.1 after the page has loaded: its
 *   requests are then same-origin for the browser, but they carry the attacker's name in `Host`. A
 *   Host that is not an IP address, a loopback name, the bound HOST, this machine's name (on a wildcard
 *   bind) or listed in ALLOWED_HOSTS is refused 421 `forbidden_host`. An IP address cannot be
 *   rebound, so every IP literal passes.
 *
 * The origin rule (SPEC 4.4 with one deliberate deviation, CONTRACT.md): CORS_ORIGINS set: those
 * origins (`*`: all). Unset with tokens: all origins, the spec's default, since every request needs a
 * token anyway. Unset without tokens: loopback origins only, since there any allowed page could have
 * workers run commands.
 */
import net from 'node:net';
import os from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorBody } from '../protocol/errors.js';

export type OriginRule = { kind: 'all' } | { kind: 'list'; origins: ReadonlySet<string> } | { kind: 'loopback' };

export interface GuardOptions {
  /** CORS_ORIGINS as configured (empty: unset). */
  corsOrigins: readonly string[];
  tokensEnabled: boolean;
  /** ALLOWED_HOSTS (empty: unset). */
  allowedHosts: readonly string[];
  /** HOST, the address the server binds. */
  bindHost: string;
}

/** Origins as browsers write them: lower-case scheme and host, no trailing slash. */
function normalizeOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, '').toLowerCase();
}

export function originRule(corsOrigins: readonly string[], tokensEnabled: boolean): OriginRule {
  const listed = corsOrigins.map(normalizeOrigin).filter((o) => o.length > 0);
  if (listed.includes('*')) return { kind: 'all' };
  if (listed.length > 0) return { kind: 'list', origins: new Set(listed) };
  return tokensEnabled ? { kind: 'all' } : { kind: 'loopback' };
}

/** `http(s)://localhost|127.0.0.1|[::1]`, any port: a page served on this machine (a local dev server). */
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/;

export function originAllowed(rule: OriginRule, origin: string): boolean {
  const o = normalizeOrigin(origin);
  if (rule.kind === 'all') return true;
  if (rule.kind === 'list') return rule.origins.has(o);
  return LOOPBACK_ORIGIN.test(o);
}

/** Host names (lower case, no port, no trailing dot) accepted besides IP literals; null: no Host check. */
export interface HostRule {
  names: ReadonlySet<string>;
}

/**
 * Checked on a server without tokens (where a rebound page could do anything) and wherever
 * ALLOWED_HOSTS is set; a server with tokens and no ALLOWED_HOSTS answers to any name, since a
 * rebound page has no token.
 */
export function hostRule(opts: Pick<GuardOptions, 'tokensEnabled' | 'allowedHosts' | 'bindHost'>): HostRule | null {
  if (opts.tokensEnabled && opts.allowedHosts.length === 0) return null;
  const names = new Set(['localhost', ...opts.allowedHosts.map(hostName)]);
  const bind = hostName(opts.bindHost);
  if (bind === '0.0.0.0' || bind === '::') {
    // A wildcard bind answers on every address of the machine: its own name is legitimate too.
    const self = os.hostname().toLowerCase().replace(/\.$/, '');
    if (self) names.add(self).add(self.split('.')[0]!);
  } else {
    names.add(bind);
  }
  return { names };
}

/** The name part of a Host header or a HOST setting: `[::1]:3000` → `::1`, `Example.COM.:80` → `example.com`. */
export function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  const v6 = /^\[([^\]]*)\]/.exec(h);
  if (v6) return v6[1]!;
  // A bare IPv6 address (HOST=::1) has colons but no port.
  if (net.isIPv6(h)) return h;
  return h.replace(/:\d*$/, '').replace(/\.$/, '');
}

export function hostAllowed(rule: HostRule, header: string): boolean {
  const name = hostName(header);
  return net.isIP(name) !== 0 || rule.names.has(name);
}

/** Methods that change nothing; every other one needs an allowed origin when a browser sends it. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Registers both checks; must come before the routes, authentication and CORS (src/http/app.ts). */
export function registerOriginGuard(app: FastifyInstance, opts: GuardOptions): OriginRule {
  const rule = originRule(opts.corsOrigins, opts.tokensEnabled);
  const hosts = hostRule(opts);
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const host = req.headers.host;
    // HTTP/1.0 may come without Host; browsers always send one.
    if (hosts && host !== undefined && !hostAllowed(hosts, host)) {
      req.log.warn({ host }, 'request refused: host name not allowed');
      return refuse(
        reply,
        421,
        'forbidden_host',
        `this server does not answer to the host name "${hostName(host)}": it accepts its IP addresses, localhost, the HOST it binds and the names in ALLOWED_HOSTS (a defence against DNS rebinding); add the name to ALLOWED_HOSTS if it is this server's (README "Browsers and origins")`,
      );
    }
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    if (SAFE_METHODS.has(req.method) && !preflight) return;
    if (originAllowed(rule, origin) || sameOrigin(origin, host)) return;
    req.log.warn({ origin, method: req.method }, 'request refused: origin not allowed');
    return refuse(reply, 403, 'forbidden_origin', `web pages from ${origin} may not change anything on this server: ${whoMay(rule)} (README "Browsers and origins")`);
  });
  return rule;
}

/**
 * The dashboard served by this server calls it from its own origin; browsers send that Origin on its
 * POSTs too. A rebound page is same-origin as well, which is why the Host check comes first.
 */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}

function whoMay(rule: OriginRule): string {
  if (rule.kind === 'list') return 'only the origins in CORS_ORIGINS may';
  return 'without access tokens only pages on this machine (http://localhost, 127.0.0.1 or [::1], any port) may; list other origins in CORS_ORIGINS';
}

function refuse(reply: FastifyReply, status: 403 | 421, error: 'forbidden_origin' | 'forbidden_host', message: string): FastifyReply {
  return reply.code(status).send({ error, message } satisfies ErrorBody);
}
