import { randomBytes } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { definitionHash, parseWorkflowObject } from '../../definitions/index.js';
import type { Engine } from '../../engine/engine.js';
import { parseStatusFilter } from '../../protocol/states.js';
import {
  CancelQuery,
  CancelResponse,
  DeleteWorkflowResponse,
  ListWorkflowsQuery,
  MAX_WORKFLOW_PAGE,
  RunRequest,
  StatusDocument,
  WorkflowDefinitionBody,
  WorkflowList,
  WorkflowParams,
} from '../../protocol/wire.js';
import { documentArrayStream, sendDocument } from '../json-stream.js';
import { IGNORED_BODY, NO_BODY } from '../route-docs.js';
import { absentBodyAsEmpty } from '../validation.js';

const generateId = () => `wf-${randomBytes(6).toString('hex')}`;

/**
 * A definition body is any object here: the definitions module checks it (src/definitions), naming
 * every problem with its job and field; WorkflowDefinitionBody documents what it takes.
 */
const AnyObject = { type: 'object' } as const;

/** Workflows (docs/api.md "Workflows"): definitions, their status documents, starting and cancelling runs. */
export function workflowRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/api/workflows',
    {
      schema: {
        summary: 'List workflows with their status documents',
        description:
          'Ordered by id. `limit` above 1000 is capped at 1000. With `status`, only workflows whose latest run has a job in that ' +
          'state are listed (`active` = running, `failure` = failed); a workflow that never ran counts as all-pending. With `q`, ' +
          'only workflows whose id or name contains that text (ASCII case ignored). With `jobs=false`, each item is a summary: ' +
          "the status document without `jobs` (and without the run's inputs), with `job_counts` by state instead; it reads no job " +
          'row and stays small however large the workflows. The full form is written a page of jobs at a time.',
        tags: ['workflows'],
        querystring: ListWorkflowsQuery,
        docs: { answers: { 200: { description: 'Status documents, each with its jobs; with jobs=false, summaries', schema: WorkflowList } } },
      },
    },
    async (req, reply) => {
      // The schema's defaults fill `limit`, `offset` and `jobs` when they are left out.
      const { limit, offset, status, q, jobs } = req.query;
      const query = {
        limit: Math.min(limit!, MAX_WORKFLOW_PAGE),
        offset: offset!,
        status: status === undefined ? undefined : parseStatusFilter(status),
        search: q || undefined,
      };
      if (!jobs) return engine.listSummaries(query);
      // A page of large workflows is megabytes of JSON: written one document at a time (documentArrayStream).
      return reply.type('application/json; charset=utf-8').send(documentArrayStream(await engine.workflowDocuments(query), req.log));
    },
  );

  api.post(
    '/api/workflows',
    {
      schema: {
        summary: 'Create a workflow',
        description: 'The contract form or the array form; the id is generated (`wf-<12 hex>`) when absent.',
        tags: ['workflows'],
        body: AnyObject,
        docs: {
          answers: { 201: { description: 'The status document of the new workflow', schema: StatusDocument } },
          errors: ['invalid_workflow', 'workflow_exists'],
          body: WorkflowDefinitionBody,
          examples: {
            contractForm: {
              summary: 'Contract form: jobs keyed by id, as in a workflow file',
              value: {
                id: 'ci',
                name: 'CI',
                on: 'push',
                env: { GREETING: 'hi' },
                jobs: {
                  lint: { run: 'make lint' },
                  test: {
                    steps: [{ name: 'deps', run: 'make deps' }, { run: 'make test' }],
                    labels: ['linux'],
                    retries: 2,
                    backoff: { exponential: { base_secs: 1, max_secs: 30 } },
                  },
                  build: { name: 'Build', needs: ['lint', 'test'], run: 'make build', labels: ['linux'], env: { MODE: 'release' }, timeout_secs: 600 },
                },
              },
            },
            arrayForm: {
              summary: 'Array form, as existing clients send it (the id is generated)',
              value: {
                name: 'Nightly',
                trigger: 'schedule',
                jobs: [
                  { id: 'fetch', command: 'make fetch' },
                  {
                    id: 'report',
                    name: 'Report',
                    command: 'make report',
                    depends_on: ['fetch'],
                    required_labels: ['linux'],
                    max_retries: 1,
                    backoff: { Fixed: { delay_secs: 5 } },
                  },
                ],
              },
            },
            arrayFormFullJobs: {
              summary: "Array form with jobs in the full shape of workflow-graph's status document",
              description: 'The runtime fields are ignored; metadata, ports, children and collapsed are kept and shown again.',
              value: {
                name: 'Graph',
                trigger: 'manual',
                jobs: [
                  {
                    id: 'render',
                    name: 'Render',
                    command: 'make render',
                    depends_on: [],
                    required_labels: [],
                    max_retries: 0,
                    status: 'queued',
                    duration_secs: null,
                    started_at: null,
                    output: null,
                    attempt: 0,
                    metadata: { icon: 'paint' },
                    ports: [],
                    children: null,
                    collapsed: false,
                  },
                ],
              },
            },
          },
        },
      },
    },
    async (req, reply) => {
      const def = parseWorkflowObject(req.body, { source: 'request body', generateId });
      const doc = await engine.createWorkflow(def, definitionHash(def));
      // A definition of 10,000 jobs answers with 10,000 of them: written a slice at a time (sendDocument).
      return sendDocument(reply, { doc, jobPages: null }, 201);
    },
  );

  /** Create-or-replace by id: what `weft apply` uses. The path's id wins over any id in the body. */
  api.put(
    '/api/workflows/:id',
    {
      schema: {
        summary: 'Create or update a workflow by id',
        description:
          "Same bodies as POST; the path's id wins. An update changes the definition in place: the run history stays, and a run " +
          'in progress keeps the jobs it started with.',
        tags: ['workflows'],
        params: WorkflowParams,
        body: AnyObject,
        docs: {
          answers: {
            200: { description: 'Updated in place: the status document', schema: StatusDocument },
            201: { description: 'Created: the status document', schema: StatusDocument },
          },
          errors: ['invalid_workflow'],
          body: WorkflowDefinitionBody,
          examples: {
            contractForm: {
              summary: "Create or update in place; the path's id wins (what `weft apply` sends)",
              value: {
                name: 'CI',
                on: 'push',
                jobs: {
                  lint: { run: 'make lint' },
                  test: { run: 'make test', labels: ['linux'] },
                  build: { needs: ['lint', 'test'], run: 'make build' },
                },
              },
            },
          },
        },
      },
    },
    async (req, reply) => {
      const body = req.body as Record<string, unknown>;
      const def = parseWorkflowObject(body, { source: 'request body', id: req.params.id });
      const { outcome, status } = await engine.saveWorkflow(def, definitionHash(def), 'api');
      // `outcome` tells an update from a PUT of the definition already stored (both 200), for `weft apply`.
      return sendDocument(reply, { doc: status, jobPages: null }, outcome === 'created' ? 201 : 200, { outcome });
    },
  );

  api.get(
    '/api/workflows/:id',
    {
      schema: {
        summary: "A workflow's status document (the same as …/status)",
        tags: ['workflows'],
        params: WorkflowParams,
        docs: { answers: { 200: { description: 'The status document of the latest run', schema: StatusDocument } }, errors: ['workflow_not_found'] },
      },
    },
    // A run of thousands of jobs is megabytes of JSON: written a page of jobs at a time (sendDocument).
    async (req, reply) => sendDocument(reply, await engine.statusParts(req.params.id)),
  );

  api.get(
    '/api/workflows/:id/status',
    {
      schema: {
        summary: "A workflow's status document",
        description: "workflow-graph's Workflow (id, name, trigger, jobs) with weft's data beside it; docs/api.md explains every field.",
        tags: ['workflows'],
        params: WorkflowParams,
        docs: { answers: { 200: { description: 'The status document of the latest run', schema: StatusDocument } }, errors: ['workflow_not_found'] },
      },
    },
    // A run of thousands of jobs is megabytes of JSON: written a page of jobs at a time (sendDocument).
    async (req, reply) => sendDocument(reply, await engine.statusParts(req.params.id)),
  );

  api.post(
    '/api/workflows/:id/run',
    {
      schema: {
        summary: 'Start the next run',
        description:
          'Enqueues the root jobs. By default one run per workflow is active at a time; `concurrency: {max_runs, when_full}` ' +
          'allows more, and with `when_full: queue` a start while every slot is taken answers 202 with the run `queued`, which ' +
          'starts (oldest first) when a slot frees. The body is optional: `inputs` gives values ' +
          "to the workflow's declared inputs (each job gets `WEFT_INPUT_<NAME>`); an undeclared input, or a required one left " +
          'out, is 400 `invalid_request` naming them (details `unknown_inputs`, `missing_inputs`). `priority` (-100..100) ' +
          "queues every job of this run with that priority instead of the definition's (README \"Priorities\").",
        tags: ['workflows'],
        params: WorkflowParams,
        body: RunRequest,
        docs: {
          answers: { 202: { description: 'The status document of the new run', schema: StatusDocument } },
          errors: ['workflow_not_found', 'run_active'],
          bodyOptional: true,
          examples: NO_BODY,
        },
      },
      preValidation: absentBodyAsEmpty,
    },
    async (req, reply) => {
      await engine.start(req.params.id, { inputs: req.body?.inputs, priority: req.body?.priority });
      return sendDocument(reply, await engine.statusParts(req.params.id), 202);
    },
  );

  api.post(
    '/api/workflows/:id/cancel',
    {
      schema: {
        summary: 'Cancel a run, or every active run',
        description:
          'With `?run=N`, cancels that run; without it, every active run (running and queued). A queued run just ends ' +
          '`cancelled`; of a running one every pending, queued and running job is cancelled. With no active run nothing changes. ' +
          'The answer is the status document of the latest run plus `cancelled_jobs` and `cancelled_runs`. ' +
          'Jobs with if: always() or if: cancelled() are spared: they run once their needs have ended, and a second cancel stops them.',
        tags: ['workflows'],
        params: WorkflowParams,
        querystring: CancelQuery,
        docs: {
          answers: { 202: { description: 'The status document plus the ids of the jobs and the numbers of the runs cancelled', schema: CancelResponse } },
          errors: ['workflow_not_found', 'run_not_found'],
          body: IGNORED_BODY,
          bodyOptional: true,
          examples: NO_BODY,
        },
      },
    },
    async (req, reply) => {
      const { cancelled, cancelled_runs, status } = await engine.cancel(req.params.id, req.query.run);
      return reply.code(202).send({ ...status, cancelled_jobs: cancelled, cancelled_runs });
    },
  );

  /** The workflow with its whole history; 409 `workflow_active` while a run is active (docs/api.md). */
  api.delete(
    '/api/workflows/:id',
    {
      schema: {
        summary: 'Delete a workflow with its whole history',
        description:
          'Every run, job, lease and log chunk of it, in bounded steps. The id is free afterwards. A workflow loaded from ' +
          'WORKFLOWS_DIR comes back at the next start unless its file is removed.',
        tags: ['workflows'],
        params: WorkflowParams,
        docs: { answers: { 200: { description: 'Deleted', schema: DeleteWorkflowResponse } }, errors: ['workflow_not_found', 'workflow_active'] },
      },
    },
    async (req) => {
      await engine.deleteWorkflow(req.params.id);
      return { deleted: req.params.id };
    },
  );
}
