/**
 * The API reference as an OpenAPI 3.1 document, served at GET /api/openapi.json (docs/api.md). It is
 * generated from the registered routes' schemas, so it cannot drift from what the server does: each
 * route declares beside itself its summary, description, tag, request and answer schemas (from
 * src/protocol) and, in `schema.docs` (src/http/route-docs.ts), what Fastify does not use: the error
 * codes it answers, the answers it writes without a compiled serializer, examples. Only this document
 * reads those; the routes' validation and serialization stay exactly as declared.
 */
import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { accessOf } from '../domain/access.js';
import { ERROR_CODES, type ErrorCode } from '../protocol/errors.js';
import { ErrorBodySchema, OpenApiDocumentAnswer } from '../protocol/wire.js';
import { TAGS, type RouteDocs } from './route-docs.js';

export const OPENAPI_PATH = '/api/openapi.json';

// Two directories above both src/http and dist/http; read once, not per request.
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
  description?: string;
};

/** Registers the document generator; call before any route is added, so that every route is seen. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  /** "METHOD /path/{param}" of the routes whose body is optional, seen as the document is built. */
  const optionalBodies = new Set<string>();
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
      // Undocumented routes (the CORS preflight) keep their own schema, and with it their `hide`.
      if (!schema?.docs) return { schema, url };
      if (schema.docs.bodyOptional) optionalBodies.add(`${method} ${openApiPath(url)}`);
      return { schema: documented(schema, schema.docs, accessOf(method, url) === 'public'), url };
    },
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) throw new Error('the document must be OpenAPI, not Swagger 2');
      const { openapiObject } = documentObject;
      // The generator marks every declared body required; these routes read none.
      for (const key of optionalBodies) {
        const [method, path] = key.split(' ') as [string, string];
        const op = openapiObject.paths?.[path]?.[method.toLowerCase() as 'post'];
        if (op?.requestBody && 'required' in op.requestBody) op.requestBody.required = false;
      }
      return openapiObject;
    },
  });

  let text: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        summary: 'This document',
        description: 'OpenAPI 3.1, generated from the route schemas.',
        tags: ['service'],
        docs: { store: false, answers: { 200: { description: 'The OpenAPI document', schema: OpenApiDocumentAnswer } } },
      },
    },
    async (_req, reply) => {
    // The routes cannot change once the server listens: the document is built on the first request only.
    text ??= JSON.stringify(app.swagger());
    return reply.type('application/json; charset=utf-8').send(text);
    },
  );
}

/** `/api/jobs/:lease_id/fail` → `/api/jobs/{lease_id}/fail`, as OpenAPI spells path templates. */
export function openApiPath(fastifyPath: string): string {
  return fastifyPath.replace(/:(\w+)/g, '{$1}');
}

type DeclaredSchema = FastifySchema & { body?: object; response?: Record<string, object> };

/** A copy of the route's schema with the documentation of `doc` added; the route's own schema is untouched. */
function documented(declared: FastifySchema, doc: RouteDocs, open: boolean): FastifySchema {
  const { docs: _docs, ...rest } = declared;
  const own = structuredClone(rest as DeclaredSchema);
  const hasBody = own.body !== undefined || doc.body !== undefined;
  const body = doc.body ? structuredClone(doc.body) : own.body;
  const response: Record<string, object> = {};
  for (const [status, schema] of Object.entries(own.response ?? {})) {
    response[status] = { ...schema, 'x-response-description': doc.answers[status]?.description ?? 'The answer' };
  }
  for (const [status, r] of Object.entries(doc.answers)) {
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
  return { ...structuredClone(ErrorBodySchema), 'x-response-description': `Error body. Codes: ${lines.join('; ')}.` };
}
