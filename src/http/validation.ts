import { Ajv, type ErrorObject, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Bodies are validated strictly: a wrong type is an error, never coerced ("30" is not 30), and an
 * unknown field is an error, never dropped, so a typo cannot pass silently. Query strings and path
 * parameters arrive as text and are coerced to the declared types.
 */
const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false };
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: true });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);

/** One readable sentence per problem, e.g. `body.lease_ttl_secs must be integer`. */
export function describeValidationErrors(part: string, errors: ErrorObject[]): string {
  const parts = errors.map((e) => {
    const where = `${part}${e.instancePath.replace(/\//g, '.')}`;
    switch (e.keyword) {
      case 'additionalProperties':
        return `${where} has unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      case 'required':
        return `${where} is missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
      case 'enum':
        return `${where} must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
      default:
        return `${where} ${e.message ?? 'is invalid'}`;
    }
  });
  return [...new Set(parts)].join('; ');
}
