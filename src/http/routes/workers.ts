import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RegisterRequest } from '../../protocol/types.js';
import { labelsSchema, workerIdSchema } from '../schemas.js';
import { leaseVisibility, requireWorkerScope } from '../auth.js';

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

  app.get('/api/workers', async (req) => engine.listWorkers(leaseVisibility(req)));
}
