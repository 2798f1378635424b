import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { WeftError, type ErrorBody } from '../../protocol/errors.js';
import type { BatchClaimRequest, HeartbeatBatchRequest, ReportBatchRequest, ReportResult, HeartbeatResult } from '../../protocol/wire.js';
import { clientGone } from '../client-gone.js';
import { claimBatchAnswer, heartbeatBatchAnswer, reportBatchAnswer } from '../response-schemas.js';
import { claimBodyProperties, idParam, outputsSchema } from '../schemas.js';
import { leaseHolder, requireWorkerScope } from '../auth.js';

/** How many jobs, reports or leases one batch may carry. */
export const MAX_BATCH = 1000;

const claimSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['worker_id'],
  properties: { ...claimBodyProperties, max_jobs: { type: 'integer', minimum: 1, maximum: MAX_BATCH } },
} as const;

const leaseId = idParam;

/**
 * The batched worker paths (docs/api.md "Batches"): additive to the interface's one-job calls, for
 * workers that run many jobs at once. Each element succeeds or fails on its own, answered with the
 * status and error body its one-job call would have had.
 */
export function batchRoutes(app: FastifyInstance, engine: Engine): void {
  app.post<{ Body: BatchClaimRequest }>('/api/jobs/claim-batch', { schema: { body: claimSchema, response: { 200: claimBatchAnswer } } }, async (req, reply) => {
    requireWorkerScope(req, req.body.worker_id, req.body.labels ?? []);
    return { claims: await claimFor(engine, req.body, req, reply) };
  });

  app.post<{ Body: ReportBatchRequest }>(
    '/api/jobs/report-batch',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['reports'],
          properties: {
            reports: {
              type: 'array',
              maxItems: MAX_BATCH,
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['lease_id', 'outcome'],
                properties: {
                  lease_id: leaseId,
                  outcome: { type: 'string', enum: ['complete', 'fail'] },
                  outputs: outputsSchema,
                  error: { type: 'string' },
                  retryable: { type: 'boolean' },
                },
              },
            },
            claim: claimSchema,
          },
        },
        response: { 200: reportBatchAnswer },
      },
    },
    async (req, reply) => {
      req.body.reports.forEach((r, i) => {
        if (r.outcome === 'fail' && r.error === undefined) {
          throw new WeftError('invalid_request', `body.reports[${i}] is a fail report without "error"`);
        }
        if (r.outcome === 'complete' && (r.error !== undefined || r.retryable !== undefined)) {
          throw new WeftError('invalid_request', `body.reports[${i}] is a complete report: "error" and "retryable" belong to fail reports`);
        }
      });
      // Before any report is applied: a refused request does nothing.
      if (req.body.claim) requireWorkerScope(req, req.body.claim.worker_id, req.body.claim.labels ?? []);
      const holder = leaseHolder(req);
      // The reports, and the claim after them, reach the store together, so that one commit can hold
      // them all: the reports are handed over first (synchronously, in order), so the claim sees the
      // jobs they enqueue. Each report still settles on its own.
      const reports = Promise.all(
        req.body.reports.map(async (r): Promise<ReportResult> => {
          try {
            const value =
              r.outcome === 'complete'
                ? await engine.complete(r.lease_id, r.outputs ?? {}, holder)
                : await engine.fail(r.lease_id, r.error!, r.retryable ?? false, holder);
            return { lease_id: r.lease_id, status: 200, result: { ok: true, ...value } };
          } catch (err) {
            return { lease_id: r.lease_id, ...refusal(err) };
          }
        }),
      );
      const claiming = req.body.claim ? claimFor(engine, req.body.claim, req, reply) : Promise.resolve([]);
      const [settledReports, settledClaims] = await Promise.allSettled([reports, claiming]);
      if (settledReports.status === 'rejected') {
        // No answer will carry the claims: put their jobs back rather than leave them leased.
        if (settledClaims.status === 'fulfilled') await engine.release(settledClaims.value);
        throw settledReports.reason;
      }
      if (settledClaims.status === 'rejected') throw settledClaims.reason;
      const results = settledReports.value;
      const claims = settledClaims.value;
      return { results, claims };
    },
  );

  app.post<{ Body: HeartbeatBatchRequest }>(
    '/api/jobs/heartbeat-batch',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['lease_ids'],
          properties: { lease_ids: { type: 'array', maxItems: MAX_BATCH, items: leaseId } },
        },
        response: { 200: heartbeatBatchAnswer },
      },
    },
    async (req) => {
      const holder = leaseHolder(req);
      const results = await Promise.all(
        req.body.lease_ids.map(async (id): Promise<HeartbeatResult> => {
          try {
            return { lease_id: id, status: 200, lease: await engine.heartbeat(id, holder) };
          } catch (err) {
            return { lease_id: id, ...refusal(err) };
          }
        }),
      );
      return { results };
    },
  );
}

async function claimFor(engine: Engine, c: BatchClaimRequest, req: FastifyRequest, reply: FastifyReply) {
  const gone = clientGone(reply);
  const claims = await engine.claimMany(
    { worker_id: c.worker_id, labels: c.labels ?? [], lease_ttl_secs: c.lease_ttl_secs, token_name: leaseHolder(req) },
    c.max_jobs ?? 1,
    { waitMs: (c.wait_secs ?? 0) * 1000, signal: gone.signal },
  );
  gone.done();
  // Granted while the client was leaving: nobody will run them, so they go straight back.
  if (gone.signal.aborted && claims.length > 0) await engine.release(claims);
  return claims;
}

/** A refused element answers what its one-job call would have: its status and error body. */
function refusal(err: unknown): { status: number; error: ErrorBody } {
  if (err instanceof WeftError) return { status: err.status, error: err.toBody() };
  throw err;
}
