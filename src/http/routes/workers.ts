import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RegisterRequest } from '../../protocol/wire.js';
import { labelsSchema, workerIdSchema } from '../schemas.js';
import { leaseVisibility, requireWorkerScope } from '../auth.js';

const MAX_PAGE = 1000;
/** PostgreSQL takes OFFSET as a 32-bit integer. */
const MAX_OFFSET = 2_147_483_647;
const WORKER_PAGE_QUERY = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 0 },
    offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET },
  },
} as const;

function workerPage(q: { limit?: number; offset?: number }): { limit: number; offset: number } | undefined {
  if (q.limit === undefined && q.offset === undefined) return undefined;
  return { limit: Math.min(q.limit ?? MAX_PAGE, MAX_PAGE), offset: q.offset ?? 0 };
}

export function workerRoutes(app: FastifyInstance, engine: Engine): void {
  app.post<{ Body: RegisterRequest }>(
    '/api/workers/register',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['worker_id'],
          properties: { worker_id: workerIdSchema, labels: labelsSchema },
        },
      },
    },
    async (req) => {
      requireWorkerScope(req, req.body.worker_id, req.body.labels ?? []);
      return engine.registerWorker(req.body.worker_id, req.body.labels ?? [], leaseVisibility(req));
    },
  );

  // Every worker without limit/offset (SPEC 4.3); with either, one page by worker id, as the workflow list pages.
  app.get<{ Querystring: { limit?: number; offset?: number } }>(
    '/api/workers',
    { schema: { querystring: WORKER_PAGE_QUERY } },
    async (req) => engine.listWorkers(workerPage(req.query), leaseVisibility(req)),
  );
}
