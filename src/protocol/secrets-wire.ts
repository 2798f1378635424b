/** Secrets (docs/api.md "Secrets", README "Secrets"): names, scopes and times; a value only ever goes in. */
import { Type, type Static } from 'typebox';
import { nullable } from './schema-parts.js';

const SECRET_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';

export const SecretParams = Type.Object({ name: Type.String({ pattern: SECRET_NAME, description: 'Letters, digits and underscores, not starting with a digit' }) });

export const SecretScopeQuery = Type.Object(
  { workflow_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'The one workflow that sees the secret; absent: every workflow' })) },
  { additionalProperties: false },
);

export const PutSecretRequest = Type.Object(
  { value: Type.String({ minLength: 1, description: 'The value (at most 48 KiB); stored sealed, never answered' }) },
  { additionalProperties: false },
);

/** A secret as every answer shows it: never its value. */
export const SecretView = Type.Object({
  name: Type.String(),
  /** The workflow that alone sees it; null: every workflow. */
  workflow_id: nullable(Type.String()),
  updated_at_ms: Type.Integer(),
  /** The name of the token that set it; null with tokens off. */
  updated_by: nullable(Type.String()),
});
export type SecretView = Static<typeof SecretView>;

export const SecretList = Type.Object({ secrets: Type.Array(SecretView) });

export const DeleteSecretResponse = Type.Object({ deleted: Type.String(), workflow_id: nullable(Type.String()) });
