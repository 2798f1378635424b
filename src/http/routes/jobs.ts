/**
 * The worker protocol (docs/api.md "Worker protocol"): claims and the calls on a lease. Each route
 * declares its wire schemas (src/protocol/jobs-wire.ts), which type its handler, and its documentation;
 * the answers are serialized by schemas compiled once (docs/performance.md "Answers serialized from schemas").
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import {
  CancelledQuery,
  ClaimAnswer,
  ClaimRequest,
  CompleteBody,
  CompleteResponse,
  FailRequest,
  FailResponse,
  HeartbeatResponse,
  JobParams,
  LeaseParams,
  PushLogsRequest,
  PushLogsResponse,
} from '../../protocol/wire.js';
import { clientGone } from '../client-gone.js';
import { IGNORED_BODY, LEASE_ERRORS, NO_BODY } from '../route-docs.js';
import { leaseHolder, requireWorkerScope } from '../auth.js';

export function jobRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/api/jobs/claim',
    {
      schema: {
        summary: 'Claim the oldest job that fits the labels',
        description:
          'A job fits when its required_labels are a subset of `labels`. With `wait_secs`, a claim that finds nothing waits for a ' +
          'fitting job (a long poll) and answers null only when the time is up.',
        tags: ['jobs'],
        body: ClaimRequest,
        response: { 200: ClaimAnswer },
        docs: {
          answers: { 200: { description: 'The job and its lease, or null when nothing fits' } },
          examples: {
            longPoll: {
              summary: 'Long poll: wait up to 20 s for a job that fits',
              value: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, wait_secs: 20 },
            },
            once: {
              summary: 'Answer at once: a job, or null when nothing fits',
              value: { worker_id: 'me', labels: [], lease_ttl_secs: 30 },
            },
          },
        },
      },
    },
    async (req, reply) => {
      const { worker_id, labels = [], lease_ttl_secs, wait_secs = 0 } = req.body;
      requireWorkerScope(req, worker_id, labels);
      const gone = clientGone(reply);
      const waitMs = wait_secs * 1000;
      const result = await engine.claim(
        { worker_id, labels, lease_ttl_secs, token_name: leaseHolder(req) },
        { waitMs, signal: waitMs > 0 ? gone.signal : undefined },
      );
      gone.done();
      // Granted while the client was leaving: nobody will run it, so it goes straight back.
      if (gone.left && result !== null) {
        await engine.release([result]);
        return reply;
      }
      return result;
    },
  );

  api.post(
    '/api/jobs/:lease_id/heartbeat',
    {
      schema: {
        summary: 'Renew a lease',
        description: 'A 409 job_cancelled tells the worker to stop the job.',
        tags: ['jobs'],
        params: LeaseParams,
        response: { 200: HeartbeatResponse },
        docs: {
          answers: { 200: { description: 'The renewed lease' } },
          errors: [...LEASE_ERRORS, 'job_cancelled'],
          body: IGNORED_BODY,
          bodyOptional: true,
          examples: NO_BODY,
        },
      },
    },
    async (req) => engine.leases.heartbeat(req.params.lease_id, leaseHolder(req)),
  );

  api.post(
    '/api/jobs/:lease_id/complete',
    {
      schema: {
        summary: 'Report success, with outputs for downstream jobs',
        description: 'After a cancel this answers 200 and changes nothing.',
        tags: ['jobs'],
        params: LeaseParams,
        body: CompleteBody,
        response: { 200: CompleteResponse },
        docs: {
          answers: { 200: { description: "The job's new state and the jobs now queued" } },
          errors: LEASE_ERRORS,
          bodyOptional: true,
          examples: { withOutputs: { summary: 'Success, with outputs handed to downstream jobs', value: { outputs: { report: 'ok' } } } },
        },
      },
    },
    async (req) => {
      const result = await engine.leases.complete(req.params.lease_id, req.body?.outputs ?? {}, leaseHolder(req));
      return { ok: true as const, ...result };
    },
  );

  api.post(
    '/api/jobs/:lease_id/fail',
    {
      schema: {
        summary: 'Report failure',
        description: 'With `retryable` and budget left the job is re-queued after its backoff; otherwise it fails and its downstream jobs are skipped.',
        tags: ['jobs'],
        params: LeaseParams,
        body: FailRequest,
        response: { 200: FailResponse },
        docs: {
          answers: { 200: { description: "The job's new state (queued or failed), attempt and delay" } },
          errors: LEASE_ERRORS,
          examples: {
            retryable: { summary: 'A failure to retry (while the retry budget lasts)', value: { error: 'exit code 2', retryable: true } },
            permanent: { summary: 'A permanent failure (`retryable` omitted means false)', value: { error: 'command not found' } },
          },
        },
      },
    },
    async (req) => {
      // docs/api.md "Lease calls": an omitted `retryable` means a permanent failure.
      const result = await engine.leases.fail(req.params.lease_id, req.body.error, req.body.retryable ?? false, leaseHolder(req));
      return { ok: true as const, ...result };
    },
  );

  api.post(
    '/api/jobs/:lease_id/logs',
    {
      schema: {
        summary: 'Push log chunks',
        description:
          'A chunk re-sent with a sequence already stored for that attempt is kept once. `workflow_id`/`job_id`, when sent, must match the lease. ' +
          'An attempt keeps at most MAX_LOG_BYTES_PER_ATTEMPT bytes of log data: the chunk that passes it is stored as a marker line, the rest is ' +
          'dropped, and the answer carries `truncated: true` from then on (the worker may stop sending).',
        tags: ['logs'],
        params: LeaseParams,
        body: PushLogsRequest,
        response: { 200: PushLogsResponse },
        docs: {
          answers: { 200: { description: "How many chunks were kept, and `truncated: true` once the attempt's log is full" } },
          errors: [...LEASE_ERRORS, 'chunk_mismatch'],
          examples: {
            chunks: {
              summary: 'Two chunks; stream defaults to stdout and timestamp_ms to the arrival time',
              value: {
                chunks: [
                  { sequence: 0, data: 'compiling…\n', stream: 'stdout', timestamp_ms: 1795650000200 },
                  { sequence: 1, data: 'warning: unused variable\n', stream: 'stderr' },
                ],
              },
            },
          },
        },
      },
    },
    async (req) => {
      const result = await engine.leases.pushLogs(req.params.lease_id, req.body.chunks, leaseHolder(req));
      return { ok: true as const, ...result };
    },
  );

  api.get(
    '/api/jobs/:wf_id/:job_id/cancelled',
    {
      schema: {
        summary: 'Whether a job of a run is cancelled',
        description:
          'With `?run=N`, the job of that run (a worker always sends the run of the job it holds); without it, the job of the ' +
          "workflow's newest running run, or of its latest run when none is running.",
        tags: ['jobs'],
        params: JobParams,
        querystring: CancelledQuery,
        docs: {
          answers: { 200: { description: 'true when cancelled, else false', schema: { type: 'boolean' } } },
          errors: ['workflow_not_found', 'job_not_found', 'run_not_found'],
        },
      },
    },
    async (req, reply) => {
      const cancelled = await engine.isCancelled(req.params.wf_id, req.params.job_id, req.query.run);
      return reply.type('application/json').send(cancelled ? 'true' : 'false');
    },
  );
}
