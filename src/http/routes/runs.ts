import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RerunScope } from '../../engine/run-plan.js';
import { WeftError } from '../../protocol/errors.js';
import { idParam, rerunBodySchema } from '../schemas.js';
import { absentBodyAsEmpty } from '../validation.js';

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

  /** A new run from run n (README "Re-running a run"); no body means `{"only": "failed"}`. */
  app.post<{ Params: { id: string; run: number }; Body: { only?: 'failed' | 'all'; from?: string } | undefined }>(
    '/api/workflows/:id/runs/:run/rerun',
    { schema: { params: { type: 'object', properties: { id: idParam, run: { type: 'integer', minimum: 1 } } }, body: rerunBodySchema }, preValidation: absentBodyAsEmpty },
    async (req, reply) => {
      const { only, from } = req.body ?? {};
      if (only !== undefined && from !== undefined) {
        throw new WeftError('invalid_request', 'body: give "only" or "from", not both');
      }
      const scope: RerunScope = from !== undefined ? { from } : { only: only ?? 'failed' };
      return reply.code(202).send(await engine.rerun(req.params.id, req.params.run, scope));
    },
  );
}
