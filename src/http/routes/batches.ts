import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { ClaimWait } from '../../engine/engine-options.js';
import { WeftError, type ErrorBody } from '../../protocol/errors.js';
import {
  BatchClaimRequest,
  BatchClaimResponse,
  HeartbeatBatchRequest,
  HeartbeatBatchResponse,
  ReportBatchRequest,
  ReportBatchResponse,
  type HeartbeatResult,
  type ReportResult,
} from '../../protocol/wire.js';
import { clientGone } from '../client-gone.js';
import { leaseHolder, requireWorkerScope } from '../auth.js';

/**
 * The batched worker paths (docs/api.md "Batches"): additive to the interface's one-job calls, for
 * workers that run many jobs at once. Each element succeeds or fails on its own, answered with the
 * status and error body its one-job call would have had.
 */
export function batchRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/api/jobs/claim-batch',
    {
      schema: {
        summary: 'Claim up to max_jobs jobs at once',
        tags: ['batches'],
        body: BatchClaimRequest,
        response: { 200: BatchClaimResponse },
        docs: {
          answers: { 200: { description: 'Each claim exactly as a one-job claim answers it; [] when nothing fits by the deadline' } },
          examples: {
            several: {
              summary: 'Up to 4 jobs, waiting up to 20 s when none fits',
              value: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, max_jobs: 4, wait_secs: 20 },
            },
          },
        },
      },
    },
    async (req, reply) => {
      requireWorkerScope(req, req.body.worker_id, req.body.labels ?? []);
      return { claims: await claimFor(engine, req.body, req, reply) };
    },
  );

  api.post(
    '/api/jobs/report-batch',
    {
      schema: {
        summary: 'Report many completions and failures, then optionally claim more',
        description:
          'Each report succeeds or fails on its own, answered with the status and error body its one-job call would have had. ' +
          'A report that is not well formed makes the whole batch a 400 and nothing is applied.',
        tags: ['batches'],
        body: ReportBatchRequest,
        response: { 200: ReportBatchResponse },
        docs: {
          answers: { 200: { description: 'One result per report, in order, and the new claims' } },
          examples: {
            completeAndClaimNext: {
              summary: 'One success, one failure, and a claim for more jobs in the same round trip',
              value: {
                reports: [
                  { lease_id: '0b9d3c1e-6a3f-4f7e-9a51-2c4d8e7f1a20', outcome: 'complete', outputs: { artifact: 'build/app.tar.gz' } },
                  { lease_id: '5f7e2a90-1d4b-4c8e-8b6a-3e9f0c1d2b34', outcome: 'fail', error: 'exit code 1', retryable: true },
                ],
                claim: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, max_jobs: 2 },
              },
            },
          },
        },
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
      const claim = req.body.claim;
      // Waiting claims (this worker's other free slots, other workers) stand aside until this claim
      // has had its try: otherwise the wake-up of a complete hands one of them the job it enqueued,
      // and this worker needs another request for the slot the report freed (Claims.firstPick).
      const picked = claim ? engine.claimFirstPick() : null;
      try {
        return await reportAndClaim(engine, req.body, req, reply, holder, picked ?? undefined);
      } finally {
        picked?.();
      }
    },
  );

  api.post(
    '/api/jobs/heartbeat-batch',
    {
      schema: {
        summary: 'Renew many leases',
        tags: ['batches'],
        body: HeartbeatBatchRequest,
        response: { 200: HeartbeatBatchResponse },
        docs: {
          answers: { 200: { description: 'One result per lease, in order' } },
          examples: {
            leases: {
              summary: 'Renew every lease the worker holds',
              value: { lease_ids: ['0b9d3c1e-6a3f-4f7e-9a51-2c4d8e7f1a20', '5f7e2a90-1d4b-4c8e-8b6a-3e9f0c1d2b34'] },
            },
          },
        },
      },
    },
    async (req) => {
      const holder = leaseHolder(req);
      const results = await Promise.all(
        req.body.lease_ids.map(async (id): Promise<HeartbeatResult> => {
          try {
            return { lease_id: id, status: 200, lease: await engine.leases.heartbeat(id, holder) };
          } catch (err) {
            return { lease_id: id, ...refusal(err) };
          }
        }),
      );
      return { results };
    },
  );
}

/**
 * A report-batch's reports and its claim. The reports are handed to the store first (synchronously,
 * in order), and the claim right after them, so that it sees the jobs they enqueue: where one commit
 * can hold them all (SQLite) they share it; on PostgreSQL a claim behind completes goes in their round
 * trip, right after them (StoreClaim.after_completes). A fail there is a transaction of its own, which
 * nothing orders a claim behind, so with a fail among the reports the claim waits for the reports:
 * sent at once, it would run beside them, miss a job they enqueued, and leave the worker to get that
 * job a wake-up and a claim later. Each report still settles on its own.
 */
async function reportAndClaim(engine: Engine, body: ReportBatchRequest, req: FastifyRequest, reply: FastifyReply, holder: string | null, tried?: ClaimWait['tried']) {
  const reports = Promise.all(
    body.reports.map(async (r): Promise<ReportResult> => {
      try {
        const value =
          r.outcome === 'complete'
            ? await engine.leases.complete(r.lease_id, r.outputs ?? {}, holder)
            : await engine.leases.fail(r.lease_id, r.error!, r.retryable ?? false, holder);
        return { lease_id: r.lease_id, status: 200, result: { ok: true, ...value } };
      } catch (err) {
        return { lease_id: r.lease_id, ...refusal(err) };
      }
    }),
  );
  const claim = body.claim;
  const together = engine.claimsWithReports || body.reports.every((r) => r.outcome === 'complete');
  const claiming = !claim
    ? Promise.resolve([])
    : together
      ? claimFor(engine, claim, req, reply, tried, true)
      : reports.then(() => claimFor(engine, claim, req, reply, tried));
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
}

async function claimFor(engine: Engine, c: BatchClaimRequest, req: FastifyRequest, reply: FastifyReply, tried?: ClaimWait['tried'], afterCompletes = false) {
  const gone = clientGone(reply);
  const claims = await engine.claimMany(
    { worker_id: c.worker_id, labels: c.labels ?? [], lease_ttl_secs: c.lease_ttl_secs, token_name: leaseHolder(req) },
    c.max_jobs ?? 1,
    { waitMs: (c.wait_secs ?? 0) * 1000, signal: c.wait_secs ? gone.signal : undefined, tried, afterCompletes },
  );
  gone.done();
  // Granted while the client was leaving: nobody will run them, so they go straight back.
  if (gone.left && claims.length > 0) await engine.release(claims);
  return claims;
}

/** A refused element answers what its one-job call would have: its status and error body. */
function refusal(err: unknown): { status: number; error: ErrorBody } {
  if (err instanceof WeftError) return { status: err.status, error: err.toBody() };
  throw err;
}
