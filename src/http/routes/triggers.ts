import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { checkedDelivery } from '../../engine/triggers.js';
import { MAX_EVENT_BYTES } from '../../domain/triggers.js';
import { WeftError } from '../../protocol/errors.js';
import { EventAnswer, EventParams, EventQuery, HookAnswer, HookParams, RunEventAnswer, RunParams } from '../../protocol/wire.js';
import { absentBodyAsEmpty } from '../validation.js';

/** Any JSON as a documented body: the route reads it as the payload (README "Triggers and notifications"). */
const PAYLOAD = { description: 'the event payload: any JSON (GitHub sends an object)' };

const PUSH_EXAMPLE = {
  ref: 'refs/heads/main',
  after: '6dcb09b5b57875f334f61aebed695e2e4193db5e',
  repository: { full_name: 'octo/app' },
  head_commit: { id: '6dcb09b5b57875f334f61aebed695e2e4193db5e', message: 'Fix the build' },
};

/**
 * Runs started from outside (docs/api.md "Triggers"): GitHub-style webhooks, named events, and the
 * event a run was started with.
 */
export async function triggerRoutes(app: FastifyInstance, engine: Engine): Promise<void> {
  // The webhook route reads its body as the exact bytes that arrived, which its signature covers; only
  // here, in a context of its own, so every other route keeps the JSON-only parser (README "Webhooks").
  await app.register(async (hooks) => {
    hooks.removeAllContentTypeParsers();
    for (const type of ['application/json', 'application/x-www-form-urlencoded']) {
      hooks.addContentTypeParser(type, { parseAs: 'buffer', bodyLimit: MAX_EVENT_BYTES }, (_req, body, done) => done(null, body));
    }
    hooks.withTypeProvider<TypeBoxTypeProvider>().post(
      '/api/hooks/:id',
      {
        bodyLimit: MAX_EVENT_BYTES,
        schema: {
          summary: "Start a run of a workflow with on.webhook: a GitHub-style delivery, signed with the hook's secret",
          description:
            'No bearer token: the body must come with `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the exact body under the secret ' +
            'on.webhook.secret names>` (GitHub\'s format; the workflow\'s own secret, else the global one). A missing or wrong signature, ' +
            'an unknown workflow, a workflow without on.webhook and a secret not set all answer the same 401 `invalid_signature`, and ' +
            'nothing starts. The body (at most 1 MiB; `application/json`, or GitHub\'s `application/x-www-form-urlencoded` with the JSON in ' +
            '`payload`) is the run\'s event; `X-GitHub-Event` (or `X-Weft-Event`) its name (default `webhook`; `ping` is answered without ' +
            'a run). A delivery on.webhook.filters or .events do not take answers 202 with `started: false` and the reason. ' +
            '`X-GitHub-Delivery` (or `X-Weft-Delivery`) seen before for the workflow answers 200 with the run it started then and ' +
            '`duplicate: true`. A start refused as any start is (run_active, secret_missing) answers that error.',
          tags: ['triggers'],
          params: HookParams,
          docs: {
            body: PAYLOAD,
            headers: {
              type: 'object',
              required: ['x-hub-signature-256'],
              properties: {
                'x-hub-signature-256': { type: 'string', description: 'sha256=<hex HMAC-SHA256 of the body>' },
                'x-github-event': { type: 'string', description: 'the event name (also X-Weft-Event); default webhook' },
                'x-github-delivery': { type: 'string', description: 'the delivery id (also X-Weft-Delivery): a repeat starts no second run' },
              },
            },
            answers: {
              202: { description: 'A run started (or queued), or the delivery was skipped (`started: false` with the reason)', schema: HookAnswer },
              200: { description: 'The delivery id was seen before: the run it started (`duplicate: true`)', schema: HookAnswer },
            },
            errors: ['invalid_signature', 'run_active', 'secret_missing'],
            examples: { push: { summary: "A push event's payload (abridged)", value: PUSH_EXAMPLE } },
          },
        },
      },
      async (req, reply) => {
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const { answer, status } = await engine.triggers.webhook(req.params.id, {
          body,
          form: (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded'),
          signature: header(req, 'x-hub-signature-256'),
          event: header(req, 'x-github-event') ?? header(req, 'x-weft-event'),
          delivery: header(req, 'x-github-delivery') ?? header(req, 'x-weft-delivery'),
        });
        return reply.code(status).send(answer);
      },
    );
  });

  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/api/events/:name',
    {
      bodyLimit: MAX_EVENT_BYTES,
      schema: {
        summary: 'Send a named event: a run of every workflow whose on.event lists it',
        description:
          'The body (any JSON, at most 1 MiB; none means {}) is each run\'s event. Each listening workflow starts a run as a start by hand ' +
          'would, with its inputs\' defaults; one whose start is refused (run_active, secret_missing, …) is listed in `refused` with that ' +
          'error, and the others start. `X-Weft-Delivery` or `?delivery_id=` makes it idempotent: a delivery id seen before for a ' +
          'workflow starts no second run of it, and its earlier run is listed with `duplicate: true`. Needs an admin or trigger token.',
        tags: ['triggers'],
        params: EventParams,
        querystring: EventQuery,
        docs: {
          body: PAYLOAD,
          bodyOptional: true,
          headers: { type: 'object', properties: { 'x-weft-delivery': { type: 'string', description: 'the delivery id (as ?delivery_id=)' } } },
          answers: { 202: { description: 'The runs started, and the listening workflows that refused to start', schema: EventAnswer } },
          examples: { deployed: { summary: 'What a deploy tool sends after a deploy', value: { environment: 'production', version: '1.4.2' } } },
        },
      },
      preValidation: absentBodyAsEmpty,
    },
    async (req, reply) => {
      const fromHeader = header(req, 'x-weft-delivery');
      const fromQuery = req.query.delivery_id;
      if (fromHeader !== undefined && fromQuery !== undefined && fromHeader !== fromQuery) {
        throw new WeftError('invalid_request', 'X-Weft-Delivery and ?delivery_id= name two deliveries; give one');
      }
      const delivery = fromHeader ?? fromQuery;
      const payload = req.body === undefined ? {} : req.body;
      return reply.code(202).send(await engine.triggers.event(req.params.name, payload, delivery === undefined ? null : checkedDelivery(delivery, 'X-Weft-Delivery')));
    },
  );

  api.get(
    '/api/workflows/:id/runs/:run/event',
    {
      schema: {
        summary: 'The event payload run n was started with',
        description:
          'The JSON payload as the run keeps it (a webhook\'s body, a named event\'s body, or a followed run\'s `{workflow_run: …}`), ' +
          'with its name in `x-weft-event-name`: what `weft worker` writes to the file WEFT_EVENT_PATH names, for workers that do not take ' +
          'it from the claim answer\'s `event`. A worker token may read it. 404 `event_not_found` for a run started otherwise.',
        tags: ['triggers'],
        params: RunParams,
        docs: {
          answers: {
            200: {
              description: 'The payload',
              schema: RunEventAnswer,
              headers: { 'x-weft-event-name': { schema: { type: 'string' }, description: 'the event name (push, deployed, workflow_run, …)' } },
            },
          },
          errors: ['workflow_not_found', 'run_not_found', 'event_not_found'],
        },
      },
    },
    async (req, reply) => {
      const { name, text } = await engine.triggers.runEvent(req.params.id, req.params.run);
      return reply.header('x-weft-event-name', name).type('application/json; charset=utf-8').send(text);
    },
  );
}

/** A header sent once; a header sent twice is a 400 rather than a guess at which one counts. */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (Array.isArray(v)) throw new WeftError('invalid_request', `header ${name} is sent more than once`);
  return v;
}
