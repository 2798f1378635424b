import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { ClaimRequest, CompleteRequest, FailRequest, PushLogsRequest } from '../../protocol/wire.js';
import { clientGone } from '../client-gone.js';
import { claimResult, completeAnswer, failAnswer, heartbeatAnswer, pushLogsAnswer } from '../response-schemas.js';
import { claimBodyProperties, idParam, outputsSchema } from '../schemas.js';
import { leaseHolder, requireWorkerScope } from '../auth.js';

const leaseParams = { type: 'object', properties: { lease_id: idParam } } as const;

/** The worker protocol (docs/api.md "Worker protocol"). */
export function jobRoutes(app: FastifyInstance, engine: Engine): void {
  app.post<{ Body: ClaimRequest }>(
    '/api/jobs/claim',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['worker_id'],
          properties: claimBodyProperties,
        },
        // The interface answers the JSON value null when nothing fits.
        response: { 200: { ...claimResult, nullable: true } },
      },
    },
    async (req, reply) => {
      const { worker_id, labels = [], lease_ttl_secs, wait_secs = 0 } = req.body;
      requireWorkerScope(req, worker_id, labels);
      const gone = clientGone(reply);
      const result = await engine.claim(
        { worker_id, labels, lease_ttl_secs, token_name: leaseHolder(req) },
        { waitMs: wait_secs * 1000, signal: gone.signal },
      );
      gone.done();
      // Granted while the client was leaving: nobody will run it, so it goes straight back.
      if (gone.signal.aborted && result !== null) {
        await engine.release([result]);
        return reply;
      }
      return result;
    },
  );

  app.post<{ Params: { lease_id: string } }>(
    '/api/jobs/:lease_id/heartbeat',
    { schema: { params: leaseParams, response: { 200: heartbeatAnswer } } },
    async (req) => engine.heartbeat(req.params.lease_id, leaseHolder(req)),
  );

  app.post<{ Params: { lease_id: string }; Body: CompleteRequest | undefined }>(
    '/api/jobs/:lease_id/complete',
    {
      schema: {
        params: leaseParams,
        body: { type: ['object', 'null'], additionalProperties: false, properties: { outputs: outputsSchema } },
        response: { 200: completeAnswer },
      },
    },
    async (req) => {
      const result = await engine.complete(req.params.lease_id, req.body?.outputs ?? {}, leaseHolder(req));
      return { ok: true, ...result };
    },
  );

  app.post<{ Params: { lease_id: string }; Body: FailRequest }>(
    '/api/jobs/:lease_id/fail',
    {
      schema: {
        params: leaseParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['error'],
          properties: { error: { type: 'string' }, retryable: { type: 'boolean' } },
        },
        response: { 200: failAnswer },
      },
    },
    async (req) => {
      // docs/api.md "Lease calls": an omitted `retryable` means a permanent failure.
      const result = await engine.fail(req.params.lease_id, req.body.error, req.body.retryable ?? false, leaseHolder(req));
      return { ok: true, ...result };
    },
  );

  app.post<{ Params: { lease_id: string }; Body: PushLogsRequest }>(
    '/api/jobs/:lease_id/logs',
    {
      schema: {
        params: leaseParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['chunks'],
          properties: {
            chunks: {
              type: 'array',
              maxItems: 10_000,
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['sequence', 'data'],
                properties: {
                  workflow_id: { type: 'string' },
                  job_id: { type: 'string' },
                  sequence: { type: 'integer', minimum: 0 },
                  data: { type: 'string' },
                  timestamp_ms: { type: 'integer', minimum: 0 },
                  stream: { type: 'string', enum: ['stdout', 'stderr'] },
                },
              },
            },
          },
        },
        response: { 200: pushLogsAnswer },
      },
    },
    async (req) => {
      const result = await engine.pushLogs(req.params.lease_id, req.body.chunks, leaseHolder(req));
      return { ok: true, ...result };
    },
  );

  app.get<{ Params: { wf_id: string; job_id: string }; Querystring: { run?: number } }>(
    '/api/jobs/:wf_id/:job_id/cancelled',
    {
      schema: {
        params: { type: 'object', properties: { wf_id: idParam, job_id: idParam } },
        // Without `run`: the newest running run, else the latest run (docs/api.md).
        querystring: { type: 'object', additionalProperties: false, properties: { run: { type: 'integer', minimum: 1 } } },
      },
    },
    async (req, reply) => {
      const cancelled = await engine.isCancelled(req.params.wf_id, req.params.job_id, req.query.run);
      return reply.type('application/json').send(cancelled ? 'true' : 'false');
    },
  );
}
