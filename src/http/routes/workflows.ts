import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { definitionHash, parseWorkflowObject } from '../../definitions/index.js';
import type { Engine } from '../../engine/engine.js';
import { idParam, runBodySchema } from '../schemas.js';
import { absentBodyAsEmpty } from '../validation.js';
import { documentArrayStream } from '../json-stream.js';
import { parseStatusFilter, STATUS_FILTER_VALUES } from '../../protocol/states.js';

const MAX_PAGE = 1000;

const generateId = () => `wf-${randomBytes(6).toString('hex')}`;

export function workflowRoutes(app: FastifyInstance, engine: Engine): void {
  app.get<{ Querystring: { limit: number; offset: number; status?: string; q?: string; jobs: boolean } }>(
    '/api/workflows',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 0, default: 100 },
            offset: { type: 'integer', minimum: 0, default: 0 },
            status: { type: 'string', enum: STATUS_FILTER_VALUES },
            // Search: id or name containing this text (the dashboard's search box).
            q: { type: 'string', maxLength: 256, pattern: '^[^\\u0000]*$' },
            // false: summaries with job counts instead of each workflow's jobs (docs/api.md).
            jobs: { type: 'boolean', default: true },
          },
        },
      },
    },
    async (req, reply) => {
      const { limit, offset, status, q, jobs } = req.query;
      const query = { limit: Math.min(limit, MAX_PAGE), offset, status: status === undefined ? undefined : parseStatusFilter(status), search: q || undefined };
      if (!jobs) return engine.listSummaries(query);
      // A page of large workflows is megabytes of JSON: written one document at a time (documentArrayStream).
      return reply.type('application/json; charset=utf-8').send(documentArrayStream(await engine.workflowDocuments(query), req.log));
    },
  );

  app.post('/api/workflows', { schema: { body: { type: 'object' } } }, async (req, reply) => {
    const def = parseWorkflowObject(req.body, { source: 'request body', generateId });
    const doc = await engine.createWorkflow(def, definitionHash(def));
    return reply.code(201).send(doc);
  });

  /** Create-or-replace by id: what `weft apply` uses. The path's id wins over any id in the body. */
  app.put<{ Params: { id: string } }>(
    '/api/workflows/:id',
    { schema: { params: { type: 'object', properties: { id: idParam } }, body: { type: 'object' } } },
    async (req, reply) => {
      const body = req.body as Record<string, unknown>;
      const def = parseWorkflowObject(body, { source: 'request body', id: req.params.id });
      const { outcome, status } = await engine.saveWorkflow(def, definitionHash(def), 'api');
      // `outcome` tells an update from a PUT of the definition already stored (both 200), for `weft apply`.
      return reply.code(outcome === 'created' ? 201 : 200).send({ ...status, outcome });
    },
  );

  const byId = { params: { type: 'object', properties: { id: idParam } } };
  /** Which run a cancel means; absent: every active run (docs/api.md). */
  const runQuery = { type: 'object', additionalProperties: false, properties: { run: { type: 'integer', minimum: 1 } } };

  app.get<{ Params: { id: string } }>('/api/workflows/:id', { schema: byId }, async (req) => engine.status(req.params.id));
  app.get<{ Params: { id: string } }>('/api/workflows/:id/status', { schema: byId }, async (req) =>
    engine.status(req.params.id),
  );

  app.post<{ Params: { id: string }; Body: { inputs?: Record<string, string> } | undefined }>(
    '/api/workflows/:id/run',
    { schema: { ...byId, body: runBodySchema }, preValidation: absentBodyAsEmpty },
    async (req, reply) => {
      const doc = await engine.run(req.params.id, { inputs: req.body?.inputs });
      return reply.code(202).send(doc);
    },
  );

  app.post<{ Params: { id: string }; Querystring: { run?: number } }>(
    '/api/workflows/:id/cancel',
    { schema: { ...byId, querystring: runQuery } },
    async (req, reply) => {
      const { cancelled, cancelled_runs, status } = await engine.cancel(req.params.id, req.query.run);
      return reply.code(202).send({ ...status, cancelled_jobs: cancelled, cancelled_runs });
    },
  );

  /** The workflow with its whole history; 409 `workflow_active` while a run is active (docs/api.md). */
  app.delete<{ Params: { id: string } }>('/api/workflows/:id', { schema: byId }, async (req) => {
    await engine.deleteWorkflow(req.params.id);
    return { deleted: req.params.id };
  });
}
