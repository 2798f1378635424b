/**
 * What a route's schema says for the API reference (GET /api/openapi.json) beyond what Fastify
 * validates and serializes. Each route declares it beside itself, in its schema: `summary`,
 * `description` and `tags` (read by @fastify/swagger), and `docs` below (read by src/http/openapi.ts).
 * Fastify ignores all of them; the route's validation and serialization stay exactly as declared.
 */
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../protocol/errors.js';

/** The document's tags; every route names one in `schema.tags`. */
export const TAGS = [
  { name: 'workflows', description: 'Workflow definitions, runs and their status documents' },
  { name: 'workers', description: 'Worker registration and the worker list' },
  { name: 'jobs', description: 'The worker protocol: claims and the calls on a lease' },
  { name: 'batches', description: 'Batched worker calls for workers that run many jobs at once' },
  { name: 'logs', description: 'Job logs, stored and live' },
  { name: 'artifacts', description: "Files a job's successful attempt uploaded, for later jobs and for people" },
  { name: 'secrets', description: 'Secrets jobs get in their env: set and listed by admins, never answered' },
  { name: 'triggers', description: 'Runs started from outside: webhooks, named events, the event a run was started with' },
  { name: 'notifications', description: 'Webhooks told of run ends: what was sent where, and how it went' },
  { name: 'service', description: 'Health, readiness and this document' },
] as const;

export type Tag = (typeof TAGS)[number]['name'];

/** A request body example (an OpenAPI Example Object); the OpenAPI test sends each to a live server. */
export interface Example {
  summary: string;
  description?: string;
  value: unknown;
}
export type Examples = Record<string, Example>;

/** The example of a body the route needs none of. */
export const NO_BODY: Examples = {
  empty: { summary: 'No body is needed; an empty object (or an empty body) is accepted', value: {} },
};

/** A body the route does not read: documented as such, and not required. */
export const IGNORED_BODY = { type: 'object', description: 'Ignored: the call needs no body.' } as const;

/** The lease calls' refusals of a lease that is not (or no longer) the caller's to use. */
export const LEASE_ERRORS: ErrorCode[] = ['lease_not_found', 'lease_expired', 'lease_timed_out', 'lease_completed', 'lease_failed', 'lease_released'];

export interface Answer {
  description: string;
  /**
   * The answer's schema when the route has no compiled serializer for it (it writes the answer itself,
   * or streams it): documented only, never used to serialize.
   */
  schema?: TSchema | object;
  /** For a media type other than JSON. */
  content?: object;
  headers?: object;
}

export interface RouteDocs {
  /** Answers by status; a status with a response schema in the route takes its schema from there. */
  answers: Record<string, Answer>;
  /** Error codes particular to this route; the request-shape ones are added from its schemas. */
  errors?: ErrorCode[];
  /** Whether the route reads the store, and so may answer 503 store_unavailable. */
  store?: false;
  /** For a body validated outside the route schema (workflow definitions) or not read at all. */
  body?: TSchema | object;
  /** A body the route takes but does not need: documented, not required. */
  bodyOptional?: boolean;
  /** Request headers the route reads (documented only; the route reads them itself). */
  headers?: object;
  examples?: Examples;
}

declare module 'fastify' {
  interface FastifySchema {
    /** The route's documentation beyond its schemas (src/http/route-docs.ts). */
    docs?: RouteDocs;
  }
}
