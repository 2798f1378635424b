import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { MAX_WORKER_PAGE, RegisterRequest, WorkerList, WorkersQuery, WorkerView } from '../../protocol/wire.js';
import { leaseVisibility, requireWorkerScope } from '../auth.js';

function workerPage(q: { limit?: number; offset?: number }): { limit: number; offset: number } | undefined {
  if (q.limit === undefined && q.offset === undefined) return undefined;
  return { limit: Math.min(q.limit ?? MAX_WORKER_PAGE, MAX_WORKER_PAGE), offset: q.offset ?? 0 };
}

/** Workers (docs/api.md "Workers"): registration and the worker list. */
export function workerRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/api/workers/register',
    {
      schema: {
        summary: 'Register a worker (optional: a claim registers it too)',
        description: 'Registering again updates the labels.',
        tags: ['workers'],
        body: RegisterRequest,
        docs: {
          answers: { 200: { description: 'The worker record', schema: WorkerView } },
          examples: { worker: { summary: 'A worker offering two labels', value: { worker_id: 'builder-1', labels: ['linux', 'docker'] } } },
        },
      },
    },
    async (req) => {
      requireWorkerScope(req, req.body.worker_id, req.body.labels ?? []);
      return engine.registerWorker(req.body.worker_id, req.body.labels ?? [], leaseVisibility(req));
    },
  );

  // Every worker without limit/offset (SPEC 4.3); with either, one page by worker id, as the workflow list pages.
  api.get(
    '/api/workers',
    {
      schema: {
        summary: 'List workers',
        description:
          '`status` is busy while the worker holds an unexpired lease, else offline when unseen for WORKER_OFFLINE_SECS, else idle. ' +
          'Ordered by worker id. Without `limit` and `offset`, every worker; with either, one page (`limit` defaults to and is capped ' +
          'at 1000). A worker unseen for WORKER_RETAIN_SECS and holding no lease is deleted by the reaper.',
        tags: ['workers'],
        querystring: WorkersQuery,
        docs: { answers: { 200: { description: 'The known workers (a page of them with limit/offset)', schema: WorkerList } } },
      },
    },
    async (req) => engine.listWorkers(workerPage(req.query), leaseVisibility(req)),
  );
}
