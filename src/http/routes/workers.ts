import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RegisterRequest } from '../../protocol/types.js';
import { labelsSchema, workerIdSchema } from '../schemas.js';

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
    async (req) => engine.registerWorker(req.body.worker_id, req.body.labels ?? []),
  );

  app.get('/api/workers', async () => engine.listWorkers());
}
