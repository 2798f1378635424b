/**
 * Who may call what (README "Access tokens"). A token has a name and one role; a route needs one
 * access level, worked out once from its method and path when the route is added.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * `approver` (README "Approvals"): reads, and approves or rejects jobs awaiting approval; nothing else.
 * `trigger` (README "Events"): sends named events (POST /api/events/{name}); nothing else, not even reads.
 */
export const ROLES = ['admin', 'worker', 'read', 'approver', 'trigger'] as const;
export type Role = (typeof ROLES)[number];

/** What a route needs: `public` (health checks, the API description), or the roles that may call it. */
export type Access = 'public' | 'read' | 'worker' | 'worker+read' | 'approve' | 'trigger' | 'admin';

/**
 * The worker protocol: everything a worker does with its jobs and nothing else. A worker token can
 * neither define workflows (whose commands every worker would run) nor start or cancel runs.
 */
const WORKER_ROUTES = new Set([
  'POST /api/workers/register',
  'POST /api/jobs/claim',
  'POST /api/jobs/claim-batch',
  'POST /api/jobs/report-batch',
  'POST /api/jobs/heartbeat-batch',
  'POST /api/jobs/:lease_id/heartbeat',
  'POST /api/jobs/:lease_id/complete',
  'POST /api/jobs/:lease_id/fail',
  'POST /api/jobs/:lease_id/logs',
  'PUT /api/jobs/:lease_id/artifacts/:name',
]);

/**
 * Reads a worker needs besides its own calls: whether its job was cancelled, and the artifacts its
 * job's `download:` names (README "Artifacts").
 */
const WORKER_READS = new Set([
  'GET /api/jobs/:wf_id/:job_id/cancelled',
  'GET /api/workflows/:wf_id/runs/:run/artifacts/:job_id/:name',
  // The event payload of its job's run, for a worker that does not take it from the claim answer (README "Webhooks").
  'GET /api/workflows/:id/runs/:run/event',
]);

/** Reads only an admin may make: which secrets exist is itself worth hiding from a read token (README "Secrets"). */
const ADMIN_READS = new Set(['GET /api/secrets']);
/** A person's decision on a job awaiting approval (README "Approvals"): admin or approver. */
const APPROVE_ROUTES = new Set([
  'POST /api/workflows/:id/runs/:run/jobs/:job/approve',
  'POST /api/workflows/:id/runs/:run/jobs/:job/reject',
]);

/** Named events (README "Events"): admin or trigger. */
const TRIGGER_ROUTES = new Set(['POST /api/events/:name']);

/**
 * Answered to anyone: load balancers probe health without credentials, and the dashboard's files
 * (`/`, `/assets/*`) hold no data; the page asks for a token when the API answers 401. A webhook
 * delivery carries no token: its body's signature is its credential, checked by its route (README "Webhooks").
 */
const PUBLIC_ROUTES = new Set(['GET /healthz', 'GET /readyz', 'GET /api/openapi.json', 'GET /', 'GET /assets/*', 'POST /api/hooks/:id']);

/** The access a route needs; `url` is the route's pattern (`/api/jobs/:lease_id/complete`), not a request's path. */
export function accessOf(method: string, url: string): Access {
  const m = method.toUpperCase();
  if (m === 'OPTIONS') return 'public';
  // HEAD is answered by the GET route of the same path.
  const key = `${m === 'HEAD' ? 'GET' : m} ${url}`;
  if (PUBLIC_ROUTES.has(key)) return 'public';
  if (WORKER_ROUTES.has(key)) return 'worker';
  if (WORKER_READS.has(key)) return 'worker+read';
  if (ADMIN_READS.has(key)) return 'admin';
  if (APPROVE_ROUTES.has(key)) return 'approve';
  if (TRIGGER_ROUTES.has(key)) return 'trigger';
  return key.startsWith('GET ') ? 'read' : 'admin';
}

export function allows(role: Role, access: Access): boolean {
  switch (access) {
    case 'public':
      return true;
    case 'admin':
      return role === 'admin';
    case 'read':
      return role === 'admin' || role === 'read' || role === 'approver';
    case 'worker':
      return role === 'admin' || role === 'worker';
    case 'approve':
      return role === 'admin' || role === 'approver';
    case 'trigger':
      return role === 'admin' || role === 'trigger';
    case 'worker+read':
      // Every role but `trigger`, which sends events and reads nothing (README "Access tokens").
      return role !== 'trigger';
  }
}

/** The roles that may call a route, for error messages and docs. */
export function rolesFor(access: Access): Role[] {
  return ROLES.filter((r) => allows(r, access));
}

export interface TokenEntry {
  name: string;
  role: Role;
  /** SHA-256 of the token; the token itself is never kept. */
  hash: Buffer;
  /** What a worker token may claim as; absent: anything (README "Access tokens", "Scoped worker tokens"). */
  scope?: TokenScope;
}

/**
 * A worker token's limits, from its tokens-file line. A token that leaks from one machine (a job
 * there read it) can then take only the jobs that machine could take anyway.
 */
export interface TokenScope {
  /** `labels=a,b`: every label a claim (or registration) offers must be one of these. */
  labels?: readonly string[];
  /** `workers=ci-*,build-1`: the worker ids it may use; a trailing `*` matches any rest. */
  workers?: readonly string[];
}

/** Token names: shown in logs and errors, so plain and short. */
export const TOKEN_NAME = /^[\w.@-]{1,64}$/;

/**
 * A name that is in fact a token (`weft token new` makes `weft_` and 43 characters): refused, since
 * the name is written in every log line of a request.
 */
export function looksLikeToken(text: string): boolean {
  return /^weft_[\w-]{32,}$/.test(text);
}

/** Whether `workerId` matches one of the patterns: an exact id, or a prefix followed by `*`. */
export function workerIdAllowed(patterns: readonly string[], workerId: string): boolean {
  return patterns.some((p) => (p.endsWith('*') ? workerId.startsWith(p.slice(0, -1)) : workerId === p));
}

/**
 * Why `entry` may not act as worker `workerId` offering `labels`, for a person (naming the token and
 * what it may do), or null when its scope allows it.
 */
export function scopeRefusal(entry: TokenEntry, workerId: string, labels: readonly string[]): string | null {
  const scope = entry.scope;
  if (!scope) return null;
  if (scope.workers && !workerIdAllowed(scope.workers, workerId)) {
    return `token '${entry.name}' may act only as workers ${scope.workers.join(', ')}; this call names worker ${JSON.stringify(workerId)}`;
  }
  if (scope.labels) {
    const allowed = new Set(scope.labels);
    const outside = labels.filter((l) => !allowed.has(l));
    if (outside.length > 0) {
      return `token '${entry.name}' may offer only the labels [${scope.labels.join(', ')}]; this call offers ${outside.map((l) => JSON.stringify(l)).join(', ')} besides`;
    }
  }
  return null;
}

/** The line of a tokens file that lets a server accept a token with this hash (`weft token new`). */
export function tokensFileLine(name: string, role: Role, hash: string, scope: TokenScope = {}): string {
  let line = `${name} ${role} ${hash}`;
  if (scope.labels) line += ` labels=${scope.labels.join(',')}`;
  if (scope.workers) line += ` workers=${scope.workers.join(',')}`;
  return line;
}

const HASH_PREFIX = 'sha256:';

/** The form a token is written in a tokens file: `sha256:<64 hex digits>`. */
export function hashToken(token: string): string {
  return HASH_PREFIX + createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Parses the hash column of a tokens file; null when it is not `sha256:<64 hex digits>`. */
export function parseTokenHash(text: string): Buffer | null {
  if (!text.startsWith(HASH_PREFIX)) return null;
  const hex = text.slice(HASH_PREFIX.length);
  return /^[0-9a-f]{64}$/i.test(hex) ? Buffer.from(hex, 'hex') : null;
}

/** 256 random bits; the prefix makes a leaked token easy to recognise (and to scan for). */
export function newToken(): string {
  return `weft_${randomBytes(32).toString('base64url')}`;
}

/** Tokens a server accepts. With none configured, authentication is off (local use). */
export class TokenTable {
  private readonly entries: readonly TokenEntry[];

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries;
  }

  get enabled(): boolean {
    return this.entries.length > 0;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * The entry whose hash matches `token`, or null. Every entry is compared, each in constant time,
   * so how long this takes says nothing about which entry came close.
   */
  identify(token: string): TokenEntry | null {
    const digest = createHash('sha256').update(token, 'utf8').digest();
    let found: TokenEntry | null = null;
    for (const e of this.entries) {
      if (timingSafeEqual(digest, e.hash) && found === null) found = e;
    }
    return found;
  }
}
