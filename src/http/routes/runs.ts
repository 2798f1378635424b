import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { idParam } from '../schemas.js';

const MAX_PAGE = 1000;

/**
 * Run history (docs/api.md "Runs"): past runs of a workflow and the status document of any one of them;
 * and the definition those runs were started from.
 */
export function runRoutes(app: FastifyInstance, engine: Engine): void {
  app.get<{ Params: { id: string }; Querystring: { limit: number; offset: number } }>(
    '/api/workflows/:id/runs',
    {
      schema: {
        params: { type: 'object', properties: { id: idParam } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 0, default: 50 },
            offset: { type: 'integer', minimum: 0, default: 0 },
          },
        },
      },
    },
    async (req) => engine.runs(req.params.id, { limit: Math.min(req.query.limit, MAX_PAGE), offset: req.query.offset }),
  );

  app.get<{ Params: { id: string } }>(
    '/api/workflows/:id/definition',
    { schema: { params: { type: 'object', properties: { id: idParam } } } },
    async (req) => engine.definition(req.params.id),
  );

  app.get<{ Params: { id: string; run: number } }>(
    '/api/workflows/:id/runs/:run',
    { schema: { params: { type: 'object', properties: { id: idParam, run: { type: 'integer', minimum: 1 } } } } },
    async (req) => engine.runStatus(req.params.id, req.params.run),
  );
}
