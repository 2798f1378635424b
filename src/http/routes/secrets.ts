import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { SecretInfo } from '../../store/store.js';
import { DeleteSecretResponse, PutSecretRequest, SecretList, SecretParams, SecretScopeQuery, SecretView } from '../../protocol/wire.js';

function view(s: SecretInfo): SecretView {
  return { name: s.name, workflow_id: s.scope === '' ? null : s.scope, updated_at_ms: s.updated_at_ms, updated_by: s.updated_by };
}

/**
 * Secrets (README "Secrets", docs/api.md "Secrets"), admin only, even the list (access.ts): a value
 * goes in and never comes out; a job gets it in its claim answer only.
 */
export function secretRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/api/secrets',
    {
      schema: {
        summary: 'List secrets (names, scopes and times; never values)',
        tags: ['secrets'],
        docs: { answers: { 200: { description: 'Every secret, by scope then name', schema: SecretList } } },
      },
    },
    async () => ({ secrets: (await engine.secrets.list()).map(view) }),
  );

  api.put(
    '/api/secrets/:name',
    {
      schema: {
        summary: 'Set a secret',
        description:
          'Sets the secret for every workflow, or with `workflow_id` for that one workflow (whose own secret wins over a global one ' +
          'of the same name). A value set again replaces the old one from the next claim on. Needs WEFT_SECRET_KEY on the server.',
        tags: ['secrets'],
        params: SecretParams,
        querystring: SecretScopeQuery,
        body: PutSecretRequest,
        docs: {
          answers: { 200: { description: 'Replaced', schema: SecretView }, 201: { description: 'Created', schema: SecretView } },
          errors: ['secrets_unavailable', 'workflow_not_found'],
          examples: { secret: { summary: 'A deploy key', value: { value: '<the value>' } } },
        },
      },
    },
    async (req, reply) => {
      const { created, secret } = await engine.secrets.set(req.params.name, req.query.workflow_id ?? null, req.body.value, req.token?.name ?? null);
      return reply.code(created ? 201 : 200).send(view(secret));
    },
  );

  api.delete(
    '/api/secrets/:name',
    {
      schema: {
        summary: 'Remove a secret',
        description: 'Removes the global secret, or with `workflow_id` that workflow\'s own. A run that then needs it fails its start.',
        tags: ['secrets'],
        params: SecretParams,
        querystring: SecretScopeQuery,
        docs: { answers: { 200: { description: 'Removed', schema: DeleteSecretResponse } }, errors: ['secret_not_found'] },
      },
    },
    async (req) => {
      await engine.secrets.remove(req.params.name, req.query.workflow_id ?? null, req.token?.name ?? null);
      return { deleted: req.params.name, workflow_id: req.query.workflow_id ?? null };
    },
  );
}
