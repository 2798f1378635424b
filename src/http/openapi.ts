/**
 * The API reference as an OpenAPI 3.1 document, served at GET /api/openapi.json (docs/api.md). It is
 * generated from the schemas the routes validate and serialize with, so those parts cannot drift from
 * what the server does. What the schemas do not say (summaries, tags, error answers, examples, the
 * workflow definition forms, answers written without a schema) comes from openapi-routes.ts and is
 * added to the document only: the routes' validation and serialization stay exactly as declared.
 */
import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { accessOf } from '../domain/access.js';
import { ERROR_CODES, type ErrorCode } from '../protocol/errors.js';
import { errorBodySchema } from './openapi-shapes.js';
import { ROUTE_DOCS, TAGS, type RouteDoc } from './openapi-routes.js';

export const OPENAPI_PATH = '/api/openapi.json';

// Two directories above both src/http and dist/http; read once, not per request.
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
  description?: string;
};

/** Registers the document generator; call before any route is added, so that every route is seen. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: pkg.name,
        version: pkg.version,
        description:
          `${pkg.description ?? ''} Every error answer is {"error": "<code>", "message": "…"}. Every answer carries ` +
          "x-request-id: the caller's own when it sent a sane one, a fresh one otherwise. docs/api.md has the prose reference.",
      },
      tags: [...TAGS],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Needed once the server has tokens configured (README "Access tokens")' },
        },
      },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url, route }) => {
      const method = Array.isArray(route.method) ? route.method[0]! : route.method;
      const doc = ROUTE_DOCS[`${method} ${url}`];
      // Undocumented routes (the CORS preflight) keep their own schema, and with it their `hide`.
      return { schema: doc ? documented(schema, doc, accessOf(method, url) === 'public') : schema, url };
    },
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) throw new Error('the document must be OpenAPI, not Swagger 2');
      const { openapiObject } = documentObject;
      // The generator marks every declared body required; these routes read none.
      for (const [key, doc] of Object.entries(ROUTE_DOCS)) {
        if (!doc.bodyOptional) continue;
        const [method, path] = key.split(' ') as [string, string];
        const op = openapiObject.paths?.[openApiPath(path)]?.[method.toLowerCase() as 'post'];
        if (op?.requestBody && 'required' in op.requestBody) op.requestBody.required = false;
      }
      return openapiObject;
    },
  });

  let text: string | undefined;
  app.get(OPENAPI_PATH, async (_req, reply) => {
    // The routes cannot change once the server listens: the document is built on the first request only.
    text ??= JSON.stringify(app.swagger());
    return reply.type('application/json; charset=utf-8').send(text);
  });
}

/** `/api/jobs/:lease_id/fail` → `/api/jobs/{lease_id}/fail`, as OpenAPI spells path templates. */
export function openApiPath(fastifyPath: string): string {
  return fastifyPath.replace(/:(\w+)/g, '{$1}');
}

type DeclaredSchema = FastifySchema & { body?: object; response?: Record<string, object> };

/** A copy of the route's schema with the documentation of `doc` added; the route's own schema is untouched. */
function documented(declared: FastifySchema | undefined, doc: RouteDoc, open: boolean): FastifySchema {
  const own = structuredClone((declared ?? {}) as DeclaredSchema);
  const hasBody = own.body !== undefined || doc.body !== undefined;
  const body = doc.body ? structuredClone(doc.body) : own.body;
  const response: Record<string, object> = {};
  for (const [status, schema] of Object.entries(own.response ?? {})) {
    response[status] = { ...schema, 'x-response-description': doc.responses[status]?.description ?? 'The answer' };
  }
  for (const [status, r] of Object.entries(doc.responses)) {
    if (response[status]) continue;
    response[status] = r.content
      ? { description: r.description, content: r.content }
      : { ...(r.schema ?? {}), ...(r.headers ? { headers: r.headers } : {}), 'x-response-description': r.description };
  }

  const clientErrors = new Set<ErrorCode>(doc.errors ?? []);
  if (own.params || own.querystring || own.body) clientErrors.add('invalid_request');
  if (!open) for (const code of ['unauthorized', 'forbidden'] as const) clientErrors.add(code);
  if (hasBody) for (const code of ['invalid_json', 'payload_too_large', 'unsupported_media_type'] as const) clientErrors.add(code);
  response['4XX'] = errorResponse(clientErrors.size > 0 ? [...clientErrors] : ['bad_request']);
  response['5XX'] = errorResponse(doc.store === false ? ['internal'] : ['internal', 'store_unavailable']);

  return {
    ...own,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [doc.tag],
    // Health checks and this document answer without a token.
    ...(open ? { security: [] } : {}),
    ...(doc.headers ? { headers: doc.headers } : {}),
    ...(body ? { body: doc.examples ? { ...body, 'x-examples': doc.examples } : body } : {}),
    response,
  };
}

/** The error shape, with the codes this route answers (docs/api.md "Errors") as its description. */
function errorResponse(codes: ErrorCode[]): object {
  const lines = codes
    .sort((a, b) => ERROR_CODES[a].status - ERROR_CODES[b].status)
    .map((code) => `\`${code}\` (${ERROR_CODES[code].status}): ${ERROR_CODES[code].meaning}`);
  return { ...structuredClone(errorBodySchema), 'x-response-description': `Error body. Codes: ${lines.join('; ')}.` };
}
