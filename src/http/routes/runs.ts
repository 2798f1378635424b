import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RerunScope } from '../../engine/run-plan.js';
import { WeftError } from '../../protocol/errors.js';
import {
  ApprovalParams,
  ApprovalRequest,
  ApprovalResponse,
  DefinitionDocument,
  MAX_RUN_PAGE,
  RerunRequest,
  RunList,
  RunParams,
  RunsQuery,
  StatusDocument,
  WorkflowParams,
} from '../../protocol/wire.js';
import type { PersonDecision } from '../../domain/approval.js';
import { tokenName } from '../auth.js';
import { sendDocument } from '../json-stream.js';
import { absentBodyAsEmpty } from '../validation.js';

/**
 * Run history (docs/api.md "Runs"): past runs of a workflow and the status document of any one of them;
 * and the definition those runs were started from.
 */
export function runRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/api/workflows/:id/runs',
    {
      schema: {
        summary: "A page of the workflow's runs, newest first (run history)",
        description: '`limit` (default 50) above 1000 is capped at 1000. Each run has its jobs counted by state.',
        tags: ['workflows'],
        params: WorkflowParams,
        querystring: RunsQuery,
        docs: {
          answers: { 200: { description: 'Runs, newest first; [] when the workflow never ran', schema: RunList } },
          errors: ['workflow_not_found'],
        },
      },
    },
    // The schema's defaults fill `limit` and `offset` when they are left out.
    async (req) => engine.runs(req.params.id, { limit: Math.min(req.query.limit!, MAX_RUN_PAGE), offset: req.query.offset! }),
  );

  api.get(
    '/api/workflows/:id/definition',
    {
      schema: {
        summary: 'The workflow definition, in the contract form of a workflow file',
        description: 'Defaults are left out; `steps:` show as the one `run` they are joined into. Parsing it gives the same definition.',
        tags: ['workflows'],
        params: WorkflowParams,
        docs: { answers: { 200: { description: 'The definition', schema: DefinitionDocument } }, errors: ['workflow_not_found'] },
      },
    },
    async (req) => engine.definition(req.params.id),
  );

  api.get(
    '/api/workflows/:id/runs/:run',
    {
      schema: {
        summary: 'The status document of one run',
        tags: ['workflows'],
        params: RunParams,
        docs: {
          answers: { 200: { description: 'The status document of that run', schema: StatusDocument } },
          errors: ['workflow_not_found', 'run_not_found'],
        },
      },
    },
    // A run of thousands of jobs is megabytes of JSON: written a page of jobs at a time (sendDocument).
    async (req, reply) => sendDocument(reply, await engine.statusParts(req.params.id, req.params.run)),
  );

  api.get(
    '/api/workflows/:id/runs/:run/definition',
    {
      schema: {
        summary: 'The definition run n used, in the contract form of a workflow file',
        description:
          'As GET /api/workflows/{id}/definition, for the definition the run was planned from (the run\'s `definition_hash`): an edited ' +
          'workflow\'s earlier runs keep theirs. A run from before weft kept definitions answers 404 `definition_not_recorded`.',
        tags: ['workflows'],
        params: RunParams,
        docs: {
          answers: { 200: { description: 'The definition the run used', schema: DefinitionDocument } },
          errors: ['workflow_not_found', 'run_not_found', 'definition_not_recorded'],
        },
      },
    },
    async (req) => engine.runDefinition(req.params.id, req.params.run),
  );

  /** A new run from run n (README "Re-running a run"); no body means `{"only": "failed"}`. */
  api.post(
    '/api/workflows/:id/runs/:run/rerun',
    {
      schema: {
        summary: 'Start the next run as a re-run of run n',
        description:
          'A new run from the current definition with run n\'s inputs. `only: "failed"` (the default, also with no body) runs ' +
          'again every job that did not succeed in run n; `only: "all"` runs every job; `from: <job>` runs that job and ' +
          'everything downstream of it. The other jobs start as `success` with run n\'s outputs. Give `only` or `from`, not both. ' +
          "`priority` (-100..100) queues every job of the new run with that priority instead of the definition's.",
        tags: ['workflows'],
        params: RunParams,
        body: RerunRequest,
        docs: {
          answers: { 202: { description: 'The status document of the new run', schema: StatusDocument } },
          errors: ['workflow_not_found', 'run_not_found', 'run_active', 'nothing_to_rerun'],
          bodyOptional: true,
          examples: {
            failed: { summary: 'Run again what failed, was cancelled or skipped (the default)', value: { only: 'failed' } },
            all: { summary: 'Run every job again, with the same inputs', value: { only: 'all' } },
            from: { summary: 'Run a job and everything downstream of it again', value: { from: 'build' } },
          },
        },
      },
      preValidation: absentBodyAsEmpty,
    },
    async (req, reply) => {
      const { only, from, priority } = req.body ?? {};
      if (only !== undefined && from !== undefined) {
        throw new WeftError('invalid_request', 'body: give "only" or "from", not both');
      }
      const scope: RerunScope = from !== undefined ? { from } : { only: only ?? 'failed' };
      return reply.code(202).send(await engine.rerun(req.params.id, req.params.run, scope, { priority }));
    },
  );

  for (const decision of ['approved', 'rejected'] as const satisfies readonly PersonDecision[]) {
    const verb = decision === 'approved' ? 'approve' : 'reject';
    api.post(
      `/api/workflows/:id/runs/:run/jobs/:job/${verb}`,
      {
        schema: {
          summary: decision === 'approved' ? 'Approve a job awaiting approval' : 'Reject a job awaiting approval',
          description:
            (decision === 'approved'
              ? 'A job with a command becomes `queued` (claimable from now); an approval alone ends `success` and its dependents proceed. '
              : 'The job ends `failed` (never retried); the jobs below it go as after any failure (their `if:` decides). ') +
            'The decision records the calling token\'s name (`decided_by`, null with tokens off), the time and the optional comment. ' +
            'Exactly one decision lands: a job no longer awaiting approval answers 409 `job_not_awaiting_approval` with its `state`. ' +
            'Needs an admin or approver token (README "Approvals").',
          tags: ['workflows'],
          params: ApprovalParams,
          body: ApprovalRequest,
          docs: {
            answers: { 200: { description: 'The job as the decision left it', schema: ApprovalResponse } },
            errors: ['workflow_not_found', 'run_not_found', 'job_not_found', 'job_not_awaiting_approval'],
            bodyOptional: true,
            examples: { comment: { summary: 'With a comment kept beside the decision', value: { comment: decision === 'approved' ? 'release notes checked' : 'not during the freeze' } } },
          },
        },
        preValidation: absentBodyAsEmpty,
      },
      async (req) => {
        const comment = req.body?.comment?.trim() || null;
        return engine.approvals.decide(req.params.id, req.params.run, req.params.job, decision, { by: tokenName(req), comment });
      },
    );
  }
}
